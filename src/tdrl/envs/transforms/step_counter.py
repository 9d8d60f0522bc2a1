"""``StepCounter``: counts steps per episode and truncates episodes at ``max_steps``."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Categorical
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import done_prefixes, prefixed, reset_mask

__all__ = ["StepCounter"]


class StepCounter(Transform):
    """Counts the steps of each episode; optionally truncates it after ``max_steps`` steps.

    The count is written as ``step_count`` next to each ``done`` entry: 0 after a reset, incremented by
    each step. When ``max_steps`` is set, a step reaching it sets ``truncated`` (and ``done`` when
    ``update_done``), so a rollout with auto-reset starts a new episode.

    Args:
        max_steps: the episode length limit (None: count only).
        truncated_key: the name of the truncation entry.
        step_count_key: the name of the count entry.
        update_done: also set ``done`` when truncating.

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(seed=0), StepCounter(max_steps=2))
        >>> data = env.rollout(3, break_when_any_done=False)
        >>> data["next", "step_count"].squeeze(-1), data["next", "truncated"].squeeze(-1)
        (tensor([1, 2, 1]), tensor([False,  True, False]))
    """

    def __init__(
        self,
        max_steps: int | None = None,
        truncated_key: str | None = "truncated",
        step_count_key: str | None = "step_count",
        update_done: bool = True,
    ) -> None:
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"StepCounter: max_steps must be >= 1 or None, got {max_steps}")
        self.max_steps = max_steps
        self.truncated_key = truncated_key
        self.step_count_key = step_count_key
        self.update_done = update_done
        super().__init__()
        self._prefixes: list[tuple[str, ...]] = [()]
        self._shapes: dict[tuple[str, ...], tuple[torch.Size, Any]] = {}
        self._build_keys()

    def _build_keys(self) -> None:
        # (step_count, truncated, done, _reset) for each done group, computed once.
        self._groups = [
            (
                prefixed(p, self.step_count_key),
                prefixed(p, self.truncated_key),
                prefixed(p, "done"),
                prefixed(p, "_reset"),
                p,
            )
            for p in self._prefixes
        ]

    @property
    def out_keys(self) -> list[NestedKey]:
        return [g[0] for g in self._groups] if hasattr(self, "_groups") else []

    @out_keys.setter
    def out_keys(self, value: Any) -> None:
        pass

    def _added_keys(self) -> list[NestedKey]:
        return [k for g in self._groups for k in (g[0], g[1])]

    def _count_like(self, prefix: tuple[str, ...], like: TensorDictBase) -> torch.Tensor:
        info = self._shapes.get(prefix)
        if info is None:
            return torch.zeros((*like.batch_size, 1), dtype=torch.int64, device=like.device)
        shape, device = info
        return torch.zeros(shape, dtype=torch.int64, device=device)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for count_key, _, _, reset_key, prefix in self._groups:
            prev = None if tensordict is None else tensordict.get(count_key, None)
            mask = None if prev is None else reset_mask(tensordict, reset_key, prev.shape, prev.device)
            if mask is None:
                count = self._count_like(prefix, tensordict_reset)
            else:
                count = prev.masked_fill(mask, 0)
            tensordict_reset.set(count_key, count)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        max_steps = self.max_steps
        # Hot path: plain TensorDicts with root keys are read and written through their dicts.
        src = tensordict._tensordict if type(tensordict) is TensorDict else None
        dst = next_tensordict._tensordict if type(next_tensordict) is TensorDict else None
        for count_key, trunc_key, done_key, _, prefix in self._groups:
            flat = type(count_key) is str
            count = src.get(count_key) if flat and src is not None else tensordict.get(count_key, None)
            if count is None:
                count = self._count_like(prefix, next_tensordict)
            count = count + 1
            updates = {count_key: count}
            if max_steps is not None:
                limit = count >= max_steps
                getter = dst.get if flat and dst is not None else next_tensordict.get
                truncated, done = getter(trunc_key, None), getter(done_key, None)
                updates[trunc_key] = limit if truncated is None else truncated | limit
                if self.update_done:
                    updates[done_key] = limit if done is None else done | limit
            if flat and dst is not None:
                dst.update(updates)
            else:
                for key, value in updates.items():
                    next_tensordict.set(key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """On plain data a step counter has no state to apply: the data is returned unchanged."""
        return tensordict

    def _count_spec(self, shape: torch.Size, device: Any) -> Any:
        high = torch.iinfo(torch.int64).max if self.max_steps is None else self.max_steps
        return Bounded(low=0, high=high, shape=shape, dtype=torch.int64, device=device)

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        done_spec = output_spec["full_done_spec"]
        self._prefixes = done_prefixes(done_spec)
        self._build_keys()
        obs_spec = output_spec["full_observation_spec"]
        for count_key, trunc_key, done_key, _, prefix in self._groups:
            if done_key not in done_spec.keys(True, True):
                raise KeyError(f"StepCounter: done key {done_key!r} not found in the env's done spec")
            done_leaf = done_spec[done_key]
            shape, device = done_leaf.shape, done_leaf.device
            self._shapes[prefix] = (shape, device)
            obs_spec[count_key] = self._count_spec(shape, device)
            if self.max_steps is not None and trunc_key not in done_spec.keys(True, True):
                done_spec[trunc_key] = Categorical(2, shape=shape, dtype=torch.bool, device=device)
        output_spec["full_observation_spec"] = obs_spec
        output_spec["full_done_spec"] = done_spec
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        # The count is carried by the step input (like a state), so it is also declared in the state spec.
        input_spec = input_spec.clone()
        state_spec = input_spec["full_state_spec"]
        for count_key, _, _, _, prefix in self._groups:
            info = self._shapes.get(prefix)
            if info is None:
                continue
            shape, device = info
            state_spec[count_key] = self._count_spec(shape, device)
        input_spec["full_state_spec"] = state_spec
        return input_spec

    def __repr__(self) -> str:
        return f"StepCounter(max_steps={self.max_steps}, step_count_key={self.step_count_key!r})"
