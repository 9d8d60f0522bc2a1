"""``TanhModule``: squashes entries with ``tanh`` and rescales them to their spec's bounds."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, dispatch
from tensordict.utils import NestedKey

from tdrl.data import Composite, TensorSpec

__all__ = ["TanhModule"]


class TanhModule(TensorDictModuleBase):
    """Maps each input to ``low + (high - low) * (tanh(x) + 1) / 2`` (deterministic bounded actions).

    Bounds come from ``low``/``high`` or, when absent, from the (bounded) ``spec``; default ``[-1, 1]``.

    Args:
        in_keys: keys to squash.
        out_keys: keys written (default: ``in_keys``), one per input.

    Keyword Args:
        spec: a leaf spec shared by every output, or a ``Composite`` keyed by out_key.
        low: lower bound(s); must agree with the spec's when both are given.
        high: upper bound(s); must agree with the spec's when both are given.
        clamp: keep the squashed value at least one resolution step inside ``(-1, 1)``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> mod = TanhModule(["x"], ["action"], low=0.0, high=2.0)
        >>> mod(TensorDict(x=torch.zeros(3), batch_size=[3]))["action"]
        tensor([1., 1., 1.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: TensorSpec | None = None,
        low: float | torch.Tensor | None = None,
        high: float | torch.Tensor | None = None,
        clamp: bool = False,
    ) -> None:
        super().__init__()
        out_keys = list(in_keys) if out_keys is None else list(out_keys)
        if len(in_keys) != len(out_keys):
            raise ValueError(f"TanhModule: in_keys {list(in_keys)} and out_keys {out_keys} differ in length.")
        self.in_keys = list(in_keys)
        self.out_keys = out_keys
        if isinstance(spec, Composite):
            spec = spec.clone()
            for key in out_keys:
                if key not in spec.keys(True, True):
                    spec[key] = None
        else:
            spec = Composite({key: spec for key in out_keys})
        self.spec = spec
        self.clamp = clamp
        self._buffer_names: list[tuple[str, str]] = []
        for key in out_keys:
            key_low, key_high = self._bounds(low, high, spec[key], key)
            name = key if isinstance(key, str) else "_".join(key)
            self.register_buffer(f"{name}_low", key_low)
            self.register_buffer(f"{name}_high", key_high)
            self._buffer_names.append((f"{name}_low", f"{name}_high"))

    @staticmethod
    def _bounds(low: float | torch.Tensor | None, high: float | torch.Tensor | None, leaf: TensorSpec | None,
                key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        space = getattr(leaf, "space", None)
        bounds = []
        for value, name in ((low, "low"), (high, "high")):
            spec_value = getattr(space, name, None) if leaf is not None else None
            if value is None:
                value = spec_value if spec_value is not None else torch.tensor(-1.0 if name == "low" else 1.0)
            elif spec_value is not None and bool((torch.as_tensor(value) != spec_value).any()):
                raise ValueError(f"TanhModule: {name}={value} for {key!r} differs from the spec's {spec_value}.")
            bounds.append(torch.as_tensor(value, dtype=torch.get_default_dtype()).clone())
        if bool((bounds[1] < bounds[0]).any()):
            raise ValueError(f"TanhModule: high < low for {key!r}.")
        return bounds[0], bounds[1]

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key, (low_name, high_name) in zip(self.in_keys, self.out_keys, self._buffer_names):
            feature = tensordict.get(in_key).tanh()
            if self.clamp:
                lim = 1 - torch.finfo(feature.dtype).resolution
                feature = feature.clamp(-lim, lim)
            low, high = getattr(self, low_name), getattr(self, high_name)
            tensordict.set(out_key, low + (high - low) * (feature + 1) / 2)
        return tensordict
