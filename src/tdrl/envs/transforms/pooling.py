"""``TimeMaxPool``: the element-wise maximum of each entry over the last ``T`` steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import reset_mask

__all__ = ["TimeMaxPool"]


class TimeMaxPool(Transform):
    """Replaces each ``in_keys`` entry by its maximum over the last ``T`` observations of the episode.

    At reset the window is filled with the reset observation, so the output is the maximum of the
    observations seen so far in the episode (and never of a padding value).

    Args:
        in_keys: entries pooled (default ``["observation"]``).
        out_keys: destinations (default ``in_keys``).
        T: the window length.
        reset_key: the partial-reset entry of a batched parent (default ``"_reset"``).

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(seed=0), TimeMaxPool(in_keys=["th"], out_keys=["m"], T=2))
        >>> r = env.rollout(4)
        >>> bool(torch.equal(r["next", "m"], torch.maximum(r["th"], r["next", "th"])))
        True
    """

    def __init__(self, in_keys: Sequence[NestedKey] | None = None, out_keys: Sequence[NestedKey] | None = None,
                 T: int = 1, reset_key: NestedKey | None = None) -> None:  # noqa: N803 - TorchRL's argument name
        if T < 1:
            raise ValueError(f"TimeMaxPool: T must be >= 1, got {T}")
        super().__init__(in_keys=["observation"] if in_keys is None else in_keys, out_keys=out_keys)
        self.T = int(T)
        self.reset_key = "_reset" if reset_key is None else reset_key
        self._windows: dict[NestedKey, torch.Tensor] = {}

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(in_key, None)
            if value is None:
                self._missing(in_key, tensordict_reset)
                continue
            fresh = value.unsqueeze(0).expand(self.T, *value.shape).clone()
            window = self._windows.get(in_key)
            mask = None if tensordict is None or window is None or window.shape[1:] != value.shape else reset_mask(
                tensordict, self.reset_key, tensordict_reset.batch_size, value.device)
            if mask is not None:
                mask = mask.reshape(*mask.shape, *(1,) * (value.ndim - mask.ndim))
                fresh = torch.where(mask.unsqueeze(0), fresh, window)
            self._windows[in_key] = fresh
            tensordict_reset.set(out_key, fresh.amax(0))
        return tensordict_reset

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, next_tensordict)
                continue
            window = self._windows.get(in_key)
            if window is None or window.shape[1:] != value.shape:
                raise RuntimeError(f"TimeMaxPool: no window for {in_key!r}; reset the env before stepping")
            window = torch.cat([window[1:], value.unsqueeze(0)])
            self._windows[in_key] = window
            next_tensordict.set(out_key, window.amax(0))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TimeMaxPool pools over an episode's steps: it only runs inside an env")

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        present = set(observation_spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in present and out_key != in_key:
                observation_spec[out_key] = observation_spec[in_key].clone()
        return observation_spec
