"""``MPCPlannerBase``: model-predictive control as a policy module, and the candidate rollouts planners share.

A planner keeps a Gaussian over action sequences ``[*batch, 1, horizon, *action_shape]`` (mean 0, std 1 at the
start), draws ``num_candidates`` sequences, rolls each out in the env for the full horizon (rewards after a
candidate's first ``done`` do not count), refits the Gaussian to the best ones and returns the first action of
the final mean.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import NestedKey, TensorDictBase, unravel_key

from tdrl.envs.common import EnvBase
from tdrl.modules.tensordict_module.common import SafeModule

__all__ = ["MPCPlannerBase"]


def _prefix(key: NestedKey) -> tuple[str, ...]:
    return () if isinstance(key, str) else tuple(str(k) for k in key[:-1])


def _effective_done_keys(keys: Sequence[NestedKey]) -> list[NestedKey]:
    """Drops done keys under a group that has a done of its own (an ancestor's done takes precedence)."""
    prefixes = [_prefix(k) for k in keys]
    return [
        k for k, p in zip(keys, prefixes)
        if not any(len(o) < len(p) and p[: len(o)] == o for o in prefixes)
    ]


def planning_done_keys(env: EnvBase) -> list[NestedKey]:
    """The ``("next", *done)`` keys of ``env`` that end planning returns (``done``, so truncation counts)."""
    keys = [unravel_key(("next", k)) for k in env.done_keys if (k if isinstance(k, str) else k[-1]) == "done"]
    return _effective_done_keys(keys)


def mask_post_done_reward(
    tensordict: TensorDictBase, reward_key: NestedKey, done_keys: Sequence[NestedKey], time_dim: int
) -> torch.Tensor:
    """The reward at ``reward_key`` with the steps after the first ``done`` (or of several keys) set to 0.

    The reward of the step that sets ``done`` is kept.
    """
    reward = tensordict.get(reward_key)
    done = None
    for key in _effective_done_keys(list(done_keys)):
        flag = tensordict.get(key, None)
        if flag is None:
            raise KeyError(f"Done key {key!r} not found in tensordict.")
        flag = flag.expand_as(reward)
        done = flag if done is None else done | flag
    if done is None:
        return reward
    done = done.to(torch.int64)
    after_done = done.cumsum(dim=time_dim) > done
    return torch.where(after_done, torch.zeros_like(reward), reward)


class _ActionSequence:
    """Policy that plays ``actions[..., t, :]`` at the ``t``-th call."""

    def __init__(self, actions: torch.Tensor, key: NestedKey) -> None:
        self.actions = actions
        self.key = key
        self.t = 0

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.t >= self.actions.shape[-2]:
            raise ValueError("Precomputed actions sequence is too short")
        tensordict.set(self.key, self.actions[..., self.t, :])
        self.t += 1
        return tensordict


class MPCPlannerBase(SafeModule, metaclass=abc.ABCMeta):
    """Base of model-predictive-control planners: ``forward`` writes ``planning(td)``, projected into the
    action spec, at ``action_key``.

    Candidate rollouts always last the full planning horizon; rewards after a candidate's first ``done``
    (termination or truncation; an ancestor done group takes precedence over its members) are ignored.

    Args:
        env: the env to plan in (usually a :class:`~tdrl.envs.model_based.ModelBasedEnvBase`); it must accept
            any batch size (``batch_locked=False``).
        action_key: where the planned action is written.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv
        >>> class ZeroPlanner(MPCPlannerBase):
        ...     def planning(self, td):
        ...         return torch.zeros(*td.batch_size, *self.action_spec.shape)
        >>> env = PendulumEnv()
        >>> ZeroPlanner(env)(env.reset())["action"]
        tensor([0.])
    """

    def __init__(self, env: EnvBase, action_key: NestedKey = "action") -> None:
        if env.batch_locked:
            raise ValueError(
                "Environment is batch_locked. MPCPlanners need an environment that accepts batched inputs "
                "with any batch size"
            )
        super().__init__(env, in_keys=list(env.observation_spec.keys(True, True)), out_keys=[action_key])
        self.env = env
        self.action_spec = env.action_spec
        if env.device is not None:
            self.to(env.device)

    @abc.abstractmethod
    def planning(self, td: TensorDictBase) -> torch.Tensor:
        """Returns the planned action for each element of ``td``'s batch."""

    def forward(
        self, tensordict: TensorDictBase, tensordict_out: TensorDictBase | None = None, **kwargs: Any
    ) -> TensorDictBase:
        if "params" in kwargs or "vmap" in kwargs:
            raise ValueError("MPCPlannerBase does not currently support functional programming.")
        action = self.action_spec.project(self.planning(tensordict))
        return self._write_to_tensordict(tensordict, [action], tensordict_out)

    # ------------------------------------------------------------- shared by CEM / MPPI
    def _set_search(
        self, planning_horizon: int, optim_steps: int, num_candidates: int, top_k: int, reward_key: NestedKey
    ) -> None:
        """Stores the search sizes of a sampling planner; ``top_k`` must be in ``[1, num_candidates]``."""
        if not 0 < top_k <= num_candidates:
            raise ValueError(
                f"{type(self).__name__}: top_k must be in [1, num_candidates={num_candidates}], got {top_k}"
            )
        self.planning_horizon = planning_horizon
        self.optim_steps = optim_steps
        self.num_candidates = num_candidates
        self.top_k = top_k
        self.reward_key = reward_key

    def _top_k(self, actions: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(indices, sequences)`` of the ``top_k`` candidates by ``scores`` (``[*batch, K, 1, 1]``)."""
        k_dim = self._k_dim()
        _, top = scores.topk(self.top_k, dim=k_dim)
        best = actions.gather(k_dim, top.expand(*actions.shape[:k_dim], self.top_k, *actions.shape[k_dim + 1:]))
        return top, best

    def _init_search(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, torch.Tensor, torch.Tensor]:
        """The start state expanded over candidates, and the initial mean (0) and std (1) of the sequences."""
        batch = tensordict.batch_size
        start = tensordict.unsqueeze(-1).expand(*batch, self.num_candidates).to_tensordict()
        means = torch.zeros(*batch, 1, self.planning_horizon, *self.action_spec.shape,
                            device=tensordict.device, dtype=self.env.action_spec.dtype)
        return start, means, torch.ones_like(means)

    def _candidates(
        self, start: TensorDictBase, means: torch.Tensor, stds: torch.Tensor
    ) -> tuple[torch.Tensor, TensorDictBase]:
        """Draws ``num_candidates`` action sequences and rolls them out: ``(actions, rollout)``."""
        shape = (*means.shape[:-len(self.action_spec.shape) - 2], self.num_candidates, self.planning_horizon,
                 *self.action_spec.shape)
        actions = means + stds * torch.randn(*shape, device=means.device, dtype=means.dtype)
        actions = self.env.action_spec.project(actions)
        rollout = self.env.rollout(
            max_steps=self.planning_horizon,
            policy=_ActionSequence(actions, self.env.action_key),
            auto_reset=False,
            tensordict=start.clone(),
            break_when_any_done=False,
            trust_policy=True,
        )
        return actions, rollout

    def _masked_reward(self, rollout: TensorDictBase) -> torch.Tensor:
        return mask_post_done_reward(rollout, self.reward_key, planning_done_keys(self.env),
                                     time_dim=rollout.ndim - 1)

    def _k_dim(self) -> int:
        # Candidate dim of ``[*batch, K, T, *action_shape]`` tensors.
        return -len(self.action_spec.shape) - 2


