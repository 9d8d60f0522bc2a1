"""Condition-gated steps: ``ConditionalSkip`` (leaves the env untouched where a condition holds) and
``ConditionalPolicySwitch`` (another policy acts where a condition holds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.envs.transforms._base import Transform
from tdrl.envs.utils import terminated_or_truncated

__all__ = ["ConditionalPolicySwitch", "ConditionalSkip"]


class ConditionalSkip(Transform):
    """Skips the base env's step wherever ``cond(tensordict)`` is True (a partial step through ``"_step"``).

    Skipped sub-envs keep their state, and their step output repeats their current observation, as in
    any partial step. Only meaningful inside an env.

    Args:
        cond: maps the step input to a bool (or a bool tensor of the env's batch shape): True skips.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), ConditionalSkip(lambda td: torch.tensor([True, False])))
        >>> td = env.rand_action(env.reset())
        >>> out = env.step(td)
        >>> bool((out["next", "th"][0] == td["th"][0]).all()), bool((out["next", "th"][1] != td["th"][1]).any())
        (True, True)
    """

    def __init__(self, cond: Callable[[TensorDictBase], bool | torch.Tensor]) -> None:
        if not callable(cond):
            raise TypeError(f"ConditionalSkip: cond must be callable, got {type(cond).__name__}")
        super().__init__()
        self.cond = cond

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.get("_reset", None) is not None:
            return tensordict  # a reset input: the condition gates steps only
        skip = torch.as_tensor(self.cond(tensordict), dtype=torch.bool, device=tensordict.device)
        step = tensordict.get("_step", None)
        keep = ~skip if step is None else step & ~skip
        tensordict.set(
            "_step",
            keep.expand(tensordict.batch_size) if keep.ndim == 0 else keep.reshape(tensordict.batch_size),
        )
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("ConditionalSkip acts on an env's steps only; it has no meaning on plain data")


def _condition(cond: Any, tensordict: TensorDictBase) -> torch.Tensor:
    if isinstance(cond, bool):
        return torch.tensor(cond, device=tensordict.device)
    if not isinstance(cond, torch.Tensor):
        raise TypeError(f"ConditionalPolicySwitch: condition must return a bool or a bool tensor, got {type(cond).__name__}")
    if tuple(cond.shape) not in ((), (1,), tuple(tensordict.shape)):
        raise ValueError(
            f"ConditionalPolicySwitch: condition returned shape {tuple(cond.shape)}; expected (), (1,) or the "
            f"batch shape {tuple(tensordict.shape)}"
        )
    return cond.to(torch.bool)


class ConditionalPolicySwitch(Transform):
    """Where ``condition`` holds on a step's (or reset's) output, ``policy`` acts and the env steps again
    with its action, inside the same outer step: the outer policy only sees the states where the
    condition fails (e.g. the opponent's turns of a two-player game are played by ``policy``).

    Sub-envs that are done are not stepped again; partial steps (a condition true for some sub-envs)
    need a non-batch-locked base env. Only meaningful inside an env, preferably as the last transform
    (the policy sees the data transformed by the transforms before it).

    Args:
        policy: ``td -> td`` writing the action.
        condition: maps the step output to a bool or a bool tensor of the batch shape.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv, Compose
        >>> switch = ConditionalPolicySwitch(
        ...     policy=lambda td: td.set("action", torch.zeros(1)),
        ...     condition=lambda td: td["step_count"] % 2 == 1)
        >>> env = TransformedEnv(PendulumEnv(), Compose(StepCounter(), switch))
        >>> env.rollout(3)["step_count"].squeeze(-1)
        tensor([0, 2, 4])
    """

    def __init__(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        condition: Callable[[TensorDictBase], bool | torch.Tensor],
    ) -> None:
        if not callable(policy):
            raise TypeError(f"ConditionalPolicySwitch: policy must be callable, got {type(policy).__name__}")
        if not callable(condition):
            raise TypeError(f"ConditionalPolicySwitch: condition must be callable, got {type(condition).__name__}")
        super().__init__([], [])
        self.__dict__["policy"] = policy  # not a submodule: the policy's parameters stay the user's
        self.condition = condition

    def _require_partial(self, parent: Any) -> None:
        if parent.base_env.batch_locked:
            raise RuntimeError(
                "ConditionalPolicySwitch: the condition holds for some sub-envs only, and a batch-locked base "
                f"env ({type(parent.base_env).__name__}) cannot step a subset of them"
            )

    def _done(self, parent: Any, next_tensordict: TensorDictBase) -> tuple[bool, torch.Tensor | None]:
        if parent.step_plan.simple_done:
            done = next_tensordict.get("done", None)
            return (done is not None and bool(done.any())), done
        any_done = terminated_or_truncated(next_tensordict, full_done_spec=parent.full_done_spec, key="_reset")
        return any_done, next_tensordict.pop("_reset", None)

    def _act_and_step(
        self, parent: Any, cond: torch.Tensor, tensordict: TensorDictBase, source: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase | None]:
        """Runs ``policy`` on ``source`` (the sub-envs where ``cond``) and steps ``parent`` with it."""
        saved = None
        if not bool(cond.all()):
            self._require_partial(parent)
            saved = source
            source = source[cond]
        td = self.policy(source)
        if saved is not None:
            full = td.new_zeros(cond.shape)
            full[cond] = td
            td = full
            td.set("_step", cond)
        return parent._step(td), saved

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        cond = _condition(self.condition(next_tensordict), tensordict)
        if not bool(cond.any()):
            return next_tensordict
        step = tensordict.get("_step", None)
        if step is not None:
            cond = cond & step.reshape(cond.shape)
        parent = self.parent
        any_done, done = self._done(parent, next_tensordict)
        if any_done:
            if next_tensordict.numel() == 1 or bool(done.all()):
                return next_tensordict
            self._require_partial(parent)
            cond = cond & ~done.reshape(next_tensordict.shape)
        cond = cond.expand(next_tensordict.shape) if cond.ndim == 0 and next_tensordict.ndim else cond
        source = parent.step_mdp(tensordict.copy().set("next", next_tensordict))
        out, saved = self._act_and_step(parent, cond, tensordict, source)
        if saved is not None:
            return torch.where(cond, out, next_tensordict)
        return out

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        cond = _condition(self.condition(tensordict_reset), tensordict_reset)
        if not bool(cond.any()):
            return tensordict_reset
        reset = tensordict.get("_reset", None) if tensordict is not None else None
        if reset is not None:
            cond = cond & reset.reshape(cond.shape)
        cond = cond.expand(tensordict_reset.shape) if cond.ndim == 0 and tensordict_reset.ndim else cond
        parent = self.parent
        out, saved = self._act_and_step(parent, cond, tensordict, tensordict_reset.copy())
        out = out.exclude(*parent.reward_keys)
        if saved is not None:
            return torch.where(cond, out, saved.exclude(*parent.reward_keys))
        return out

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("ConditionalPolicySwitch acts on an env's steps and resets only; it has no meaning on plain data")
