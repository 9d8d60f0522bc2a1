"""Readers of gymnasium-like ``info`` dicts (TorchRL path: ``torchrl.envs.gym_like``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from tdrl.data import Composite, TensorSpec, Unbounded

__all__ = ["default_info_dict_reader"]


class default_info_dict_reader:  # noqa: N801 - TorchRL's name
    """Writes entries of gymnasium's ``info`` dict into the tensordict of each reset/step.

    Args:
        keys: the info keys to read (all non-private ones when ``None``).
        spec: their specs (a ``Composite``, a dict or a list aligned with ``keys``); inferred from one step
            when not given.
        ignore_private: skip keys starting with ``_`` (gymnasium's per-sub-env masks).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> reader = default_info_dict_reader(["x"])
        >>> td = TensorDict(batch_size=[])
        >>> _ = reader({"x": 1.5}, td)
        >>> td["x"]
        tensor([1.5000], dtype=torch.float64)
    """

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        spec: Composite | dict | Sequence[TensorSpec] | None = None,
        ignore_private: bool = True,
    ) -> None:
        self.keys = list(keys) if keys is not None else None
        self.ignore_private = ignore_private
        if spec is not None and not isinstance(spec, Composite):
            if isinstance(spec, dict):
                spec = Composite(spec)
            else:
                if self.keys is None or len(self.keys) != len(spec):
                    raise ValueError(
                        "default_info_dict_reader: a list of specs needs keys of the same length"
                    )
                spec = Composite(dict(zip(self.keys, spec)))
        self._info_spec = spec

    @property
    def info_spec(self) -> Composite | None:
        """The specs of the entries read (``None`` until known)."""
        return self._info_spec

    def _selected(self, info: dict[str, Any]) -> list[str]:
        if self.keys is not None:
            return self.keys
        # final_obs/final_info are the vector envs' SAME_STEP bookkeeping, read by the wrapper itself.
        return [
            k
            for k in info
            if not (self.ignore_private and k.startswith("_")) and k not in ("final_obs", "final_info")
        ]

    def infer_spec(self, info: dict[str, Any], batch_size: torch.Size) -> Composite:
        """Builds ``info_spec`` from a sample ``info`` dict (``Unbounded`` leaves, trailing dim >= 1)."""
        entries = {}
        for key in self._selected(info):
            if key not in info:
                raise KeyError(f"info key {key!r} not found in the env's info dict (keys: {sorted(info)})")
            value = self._as_tensor(info[key], batch_size)
            entries[key] = Unbounded(shape=value.shape, dtype=value.dtype)
        self._info_spec = Composite(entries, shape=batch_size)
        return self._info_spec

    @staticmethod
    def _as_tensor(value: Any, batch_size: torch.Size) -> torch.Tensor:
        tensor = torch.as_tensor(np.asarray(value))
        if tensor.ndim == len(batch_size):
            tensor = tensor.unsqueeze(-1)
        return tensor

    def __call__(self, info: dict[str, Any], tensordict: TensorDictBase) -> TensorDictBase:
        spec = self._info_spec
        batch = tensordict.batch_size
        for key in self._selected(info) if spec is None else list(spec.keys()):
            if key in info:
                value = self._as_tensor(info[key], batch)
                if spec is not None:
                    leaf = spec[key]
                    value = value.to(leaf.dtype).reshape(leaf.shape)
            elif spec is not None:
                # Keys that only some steps report (e.g. at episode end) are zero-filled.
                value = spec[key].zero()
            else:
                continue
            tensordict.set(key, value)
        return tensordict
