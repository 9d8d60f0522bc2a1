"""``Timer``: wall-clock time of each env step, of the policy between steps, and of each reset."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["Timer"]


class Timer(Transform):
    """Writes ``time_step`` (the base env's step), ``time_policy`` (from the previous output to this step's
    input, i.e. the policy) and ``time_reset`` (the reset), in seconds, with the env's batch shape.

    Reset outputs carry ``time_reset`` and zeros for the two others; step outputs carry ``time_step`` and
    ``time_policy`` and a zero ``time_reset``.

    Args:
        out_keys: the three entries, in the order step, policy, reset (default ``<time_key>_step``, ...).
        time_key: the prefix of the default names.

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> r = TransformedEnv(PendulumEnv(seed=0), Timer()).rollout(3)
        >>> bool((r["next", "time_step"] > 0).all()), r["time_policy"][0].item(), r["next", "time_reset"].sum().item()
        (True, 0.0, 0.0)
    """

    def __init__(self, out_keys: Sequence[NestedKey] | None = None, time_key: str = "time") -> None:
        if out_keys is None:
            out_keys = [f"{time_key}_step", f"{time_key}_policy", f"{time_key}_reset"]
        if len(out_keys) != 3:
            raise ValueError(f"Timer expects three out_keys (step, policy, reset), got {list(out_keys)}")
        super().__init__(in_keys=[], out_keys=out_keys)
        self.time_key = time_key
        self._last_out = self._t_inv = self._t_reset = time.perf_counter()
        self._policy_time = 0.0

    def _added_keys(self) -> list[NestedKey]:
        return list(self.out_keys)

    def _filled(self, like: TensorDictBase, value: float) -> torch.Tensor:
        return torch.full(like.batch_size, value, dtype=torch.get_default_dtype(), device=like.device)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        self._t_reset = time.perf_counter()
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        now = time.perf_counter()
        self._policy_time = now - self._last_out
        self._t_inv = now
        return tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        now = time.perf_counter()
        step_key, policy_key, reset_key = self.out_keys
        tensordict_reset.set(step_key, self._filled(tensordict_reset, 0.0))
        tensordict_reset.set(policy_key, self._filled(tensordict_reset, 0.0))
        tensordict_reset.set(reset_key, self._filled(tensordict_reset, now - self._t_reset))
        self._last_out = time.perf_counter()
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        now = time.perf_counter()
        step_key, policy_key, reset_key = self.out_keys
        next_tensordict.set(step_key, self._filled(next_tensordict, now - self._t_inv))
        next_tensordict.set(policy_key, self._filled(next_tensordict, self._policy_time))
        next_tensordict.set(reset_key, self._filled(next_tensordict, 0.0))
        self._last_out = time.perf_counter()
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("Timer times an env's steps and resets: it only runs inside an env")

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for key in self.out_keys:
            observation_spec[key] = Unbounded(shape=observation_spec.shape, dtype=torch.get_default_dtype(),
                                              device=observation_spec.device)
        return observation_spec
