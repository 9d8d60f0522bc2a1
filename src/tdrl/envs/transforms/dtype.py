"""Casting transforms: ``DTypeCastTransform``, ``DoubleToFloat`` and ``DeviceCastTransform``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform

__all__ = ["DTypeCastTransform", "DeviceCastTransform", "DoubleToFloat"]


class DTypeCastTransform(Transform):
    """Casts entries from ``dtype_in`` to ``dtype_out`` (and actions back with the inverse).

    Without ``in_keys``, every observation and reward entry of dtype ``dtype_in`` is cast; without
    ``in_keys_inv``, every action and state entry of dtype ``dtype_in`` in the base env's input spec is
    exposed as ``dtype_out`` and cast back before the base env steps.

    Args:
        dtype_in: the dtype of the base env's entries.
        dtype_out: the dtype seen outside.
        in_keys: entries cast by the forward transform.
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: entries written (as ``dtype_in``) by the inverse transform.
        out_keys_inv: entries read (as ``dtype_out``) by the inverse transform.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DTypeCastTransform(torch.float64, torch.float32, in_keys=["obs"], in_keys_inv=["action"])
        >>> t(TensorDict({"obs": torch.zeros(2, dtype=torch.float64)}, []))["obs"].dtype
        torch.float32
        >>> t.inv(TensorDict({"action": torch.zeros(1)}, []))["action"].dtype
        torch.float64
    """

    invertible = True

    def __init__(
        self,
        dtype_in: torch.dtype,
        dtype_out: torch.dtype,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        self.dtype_in = dtype_in
        self.dtype_out = dtype_out
        self._auto_keys = in_keys is None
        self._auto_keys_inv = in_keys_inv is None
        super().__init__(
            in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv
        )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.to(self.dtype_out)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.to(self.dtype_in)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        # Reset outputs carry no reward: cast what is there.
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(in_key, None)
            if value is not None:
                tensordict_reset.set(out_key, self._apply_transform(value))
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._auto_keys and not self.in_keys:
            # Detached, no keys given: cast every entry of dtype_in.
            return tensordict.apply(lambda x: x.to(self.dtype_out) if x.dtype == self.dtype_in else x)
        return self._call(tensordict)

    def _cast_specs(self, spec: Any, in_keys: list, out_keys: list) -> Any:
        for in_key, out_key in zip(in_keys, out_keys):
            if in_key not in spec.keys(True, True):
                continue
            leaf = spec[in_key]
            if leaf.dtype != self.dtype_in:
                raise TypeError(
                    f"{type(self).__name__}: spec of {in_key!r} has dtype {leaf.dtype}, expected {self.dtype_in}"
                )
            spec[out_key] = leaf.clone().to(self.dtype_out)
        return spec

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        if self._auto_keys:
            keys = []
            for part in ("full_observation_spec", "full_reward_spec"):
                sub = output_spec[part]
                keys += [k for k, v in sub.items(True, True) if v.dtype == self.dtype_in]
            self.in_keys = keys
        for part in ("full_observation_spec", "full_reward_spec"):
            sub = output_spec[part]
            keys = [k for k in self.in_keys if k in sub.keys(True, True)]
            outs = [o for k, o in zip(self.in_keys, self.out_keys) if k in sub.keys(True, True)]
            output_spec[part] = self._cast_specs(sub, keys, outs)
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        if self._auto_keys_inv:
            keys = []
            for part in ("full_action_spec", "full_state_spec"):
                sub = input_spec[part]
                keys += [k for k, v in sub.items(True, True) if v.dtype == self.dtype_in]
            self.in_keys_inv = keys
        for part in ("full_action_spec", "full_state_spec"):
            sub = input_spec[part]
            keys = [k for k in self.in_keys_inv if k in sub.keys(True, True)]
            outs = [o for k, o in zip(self.in_keys_inv, self.out_keys_inv) if k in sub.keys(True, True)]
            input_spec[part] = self._cast_specs(sub, keys, outs)
        return input_spec

    def _required_keys(self) -> list[NestedKey]:
        return [] if self._auto_keys else list(self.in_keys)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv}, "
            f"dtype_in={self.dtype_in}, dtype_out={self.dtype_out})"
        )


class DoubleToFloat(DTypeCastTransform):
    """Casts float64 entries to float32 (and float32 actions back to float64 for the base env).

    Args:
        in_keys: entries to cast (default: every float64 observation/reward entry of the env).
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: action/state entries cast back (default: every float64 one of the env).
        out_keys_inv: entries read by the inverse (default ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> DoubleToFloat(in_keys=["obs"])(TensorDict({"obs": torch.zeros(2, dtype=torch.float64)}, []))["obs"].dtype
        torch.float32
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(torch.float64, torch.float32, in_keys, out_keys, in_keys_inv, out_keys_inv)


class DeviceCastTransform(Transform):
    """Moves data (and specs) to ``device``; the inverse moves actions back to ``orig_device``.

    Args:
        device: the target device.
        orig_device: the base env's device (default: taken from the env's specs).

    Keyword Args:
        in_keys: entries moved (default: the whole tensordict).
        out_keys: where to write them (default ``in_keys``).
        in_keys_inv: entries moved back by the inverse (default: the whole tensordict).
        out_keys_inv: entries read by the inverse (default ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> DeviceCastTransform("cpu")(TensorDict({"obs": torch.zeros(2)}, [])).device
        device(type='cpu')
    """

    invertible = True

    def __init__(
        self,
        device: Any,
        orig_device: Any = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        self.device = torch.device(device)
        self.orig_device = None if orig_device is None else torch.device(orig_device)
        super().__init__(
            in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv
        )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.to(self.device, non_blocking=True)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state if self.orig_device is None else state.to(self.orig_device, non_blocking=True)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self.in_keys:
            return next_tensordict.to(self.device)
        return super()._call(next_tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.in_keys_inv:
            return tensordict if self.orig_device is None else tensordict.to(self.orig_device)
        return super()._inv_call(tensordict)

    def _moved(self, spec: Any, keys: list, outs: list, device: torch.device) -> Any:
        if not keys:
            return spec.to(device)
        for k, o in zip(keys, outs):
            if k in spec.keys(True, True):
                spec[o] = spec[k].clone().to(device)
        return spec

    def transform_output_spec(self, output_spec: Any) -> Any:
        if self.orig_device is None:
            self.orig_device = output_spec.device
        return self._moved(output_spec.clone(), self.in_keys, self.out_keys, self.device)

    def transform_input_spec(self, input_spec: Any) -> Any:
        if self.orig_device is None:
            self.orig_device = input_spec.device
        return self._moved(input_spec.clone(), self.in_keys_inv, self.out_keys_inv, self.device)

    def __repr__(self) -> str:
        return f"DeviceCastTransform(device={self.device}, orig_device={self.orig_device})"
