"""Episode-end and success signals: ``TerminateTransform`` (a user stop condition), ``EndOfLifeTransform``
(Atari life loss as an extra done flag) and ``SuccessReward`` (a success flag as the reward)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey, expand_as_right

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["EndOfLifeTransform", "SuccessReward", "TerminateTransform"]

_NO_PARENT = "{} acts on an env's steps only: attach it to a TransformedEnv"


def _last(key: NestedKey) -> str:
    return key if isinstance(key, str) else key[-1]


class TerminateTransform(Transform):
    """Terminates the episode wherever ``stop(next_tensordict)`` is True (or-ed into the done flags).

    Every ``terminated`` entry of the done spec (and ``done``, unless ``write_done=False``) becomes
    ``current | stop``; ``truncated`` entries are left alone.

    Args:
        stop: maps the step output to a bool (or a bool tensor broadcastable to the done entries).

    Keyword Args:
        write_done: also set ``done`` (default True).

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), TerminateTransform(lambda td: td["th"].abs() > 0.0))
        >>> rollout = env.rollout(5)
        >>> rollout.shape, bool(rollout["next", "terminated"].all())
        (torch.Size([1]), True)
    """

    def __init__(self, stop: Callable[[TensorDictBase], Any], *, write_done: bool = True) -> None:
        if not callable(stop):
            raise ValueError(f"TerminateTransform: stop must be callable, got {type(stop).__name__}")
        super().__init__(in_keys=[], out_keys=[])
        self.stop = stop
        self.write_done = write_done

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        flag = torch.as_tensor(self.stop(next_tensordict), device=next_tensordict.device).bool()
        parent = self.parent
        for key in list(parent.done_keys) if parent is not None else ["done"]:
            name = _last(key)
            if name == "truncated" or (name == "done" and not self.write_done):
                continue
            current = next_tensordict.get(key, None)
            if current is None:
                continue
            wide = flag.reshape(*flag.shape, *(1,) * (current.ndim - flag.ndim)).expand(current.shape)
            next_tensordict.set(key, current | wide)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_NO_PARENT.format(type(self).__name__))


class EndOfLifeTransform(Transform):
    """Writes an ``end-of-life`` flag (a life was lost, or the episode ended) and the ``lives`` count.

    The lives count is read from the wrapped env through ``eol_attribute`` (default
    ``"unwrapped.ale.lives"``, called when callable). The flag can serve as the ``done``/``terminated`` key
    of a value estimator (:meth:`register_keys`) while the env itself only resets at game over.

    Args:
        eol_key: the flag entry (default ``"end-of-life"``).
        lives_key: the lives entry (default ``"lives"``).
        done_key: the env's done entry (default ``"done"``).
        eol_attribute: dotted attribute path to the lives count on the base env.

    Examples:
        >>> t = EndOfLifeTransform()
        >>> t.in_keys, t.out_keys
        (['done'], ['end-of-life', 'lives'])
    """

    def __init__(
        self,
        eol_key: NestedKey = "end-of-life",
        lives_key: NestedKey = "lives",
        done_key: NestedKey = "done",
        eol_attribute: str = "unwrapped.ale.lives",
    ) -> None:
        super().__init__(in_keys=[done_key], out_keys=[eol_key, lives_key])
        self.eol_key, self.lives_key, self.done_key = (
            unravel_key(eol_key),
            unravel_key(lives_key),
            unravel_key(done_key),
        )
        self.eol_attribute = eol_attribute.split(".")

    def _require_parent(self) -> Any:
        parent = self.parent
        if parent is None:
            raise RuntimeError(_NO_PARENT.format(type(self).__name__))
        return parent

    def _lives(self) -> torch.Tensor:
        node: Any = self._require_parent().base_env
        for name in self.eol_attribute:
            node = [getattr(n, name) for n in node] if isinstance(node, list) else getattr(node, name)
        if isinstance(node, list):
            node = [n() if callable(n) else n for n in node]
        elif callable(node):
            node = node()
        return torch.as_tensor(node)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        parent = self._require_parent()
        lives = self._lives()
        done = next_tensordict.get(self.done_key, None)
        if done is None:
            raise KeyError(
                f"EndOfLifeTransform: done entry {self.done_key!r} not in the step output "
                f"{sorted(map(str, next_tensordict.keys(True, True)))}"
            )
        previous = tensordict.get(self.lives_key)
        lost = torch.as_tensor(previous > lives, device=parent.device)
        next_tensordict.set(self.eol_key, expand_as_right(lost, done) | done)
        next_tensordict.set(self.lives_key, lives.reshape(previous.shape))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        parent = self._require_parent()
        shape = parent.full_done_spec[self.done_key].shape
        tensordict_reset.set(self.eol_key, torch.zeros(shape, dtype=torch.bool, device=parent.device))
        tensordict_reset.set(self.lives_key, self._lives().reshape(parent.batch_size))
        return tensordict_reset

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        parent = self._require_parent()
        observation_spec[self.eol_key] = parent.output_spec["full_done_spec"][self.done_key].clone()
        observation_spec[self.lives_key] = Unbounded(
            parent.batch_size, device=parent.device, dtype=torch.int64
        )
        return observation_spec

    def register_keys(self, loss_or_advantage: Any) -> None:
        """Makes a loss or value estimator read ``eol_key`` as its done and terminated entries."""
        loss_or_advantage.set_keys(done=self.eol_key, terminated=self.eol_key)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_NO_PARENT.format(type(self).__name__))


class SuccessReward(Transform):
    """The reward is ``scale * success`` (a sparse success reward from a bool or 0/1 entry).

    Args:
        success_key: the success entry (default ``"success"``).
        reward_key: the reward written (default ``"reward"``).

    Keyword Args:
        scale: reward of a success (default 1.0).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> SuccessReward(scale=2.0)(TensorDict(success=torch.tensor([True, False])))["reward"]
        tensor([2., 0.])
    """

    def __init__(
        self, success_key: NestedKey = "success", reward_key: NestedKey = "reward", *, scale: float = 1.0
    ) -> None:
        super().__init__(in_keys=[success_key], out_keys=[reward_key])
        self.scale = float(scale)

    def _apply_transform(self, success: torch.Tensor) -> torch.Tensor:
        return success.to(torch.get_default_dtype()) * self.scale

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        reward_key, success_key = self.out_keys[0], self.in_keys[0]
        leaf = None
        parent = self.parent
        if parent is not None:
            for spec in (parent.full_observation_spec, parent.full_done_spec):
                if success_key in spec.keys(True, True):
                    leaf = spec[success_key]
                    break
        if leaf is None and reward_key in reward_spec.keys(True, True):
            leaf = reward_spec[reward_key]
        if leaf is None:
            raise RuntimeError(
                f"SuccessReward: cannot infer the reward shape: {success_key!r} is not in the env's observation "
                f"or done specs and {reward_key!r} is not a reward entry"
            )
        reward_spec[reward_key] = Bounded(
            low=min(0.0, self.scale),
            high=max(0.0, self.scale),
            shape=leaf.shape,
            device=leaf.device,
            dtype=torch.get_default_dtype(),
        )
        return reward_spec
