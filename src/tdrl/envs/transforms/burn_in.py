"""``BurnInTransform``: warms a recurrent state up on the first steps of each sampled sequence."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform

__all__ = ["BurnInTransform"]

_RB_ONLY = (
    "BurnInTransform only acts on replay-buffer samples (ReplayBuffer(transform=...)), not inside an env"
)


class BurnInTransform(Transform):
    """Runs ``modules`` (without gradients) over the first ``burn_in`` steps of each ``[B, T]`` sample and
    returns the remaining ``T - burn_in`` steps, whose first step carries the burnt-in ``out_keys``.

    The burnt-in value of each ``out_keys`` entry is the module's ``("next", key)`` at the last burn-in step;
    it is written at step 0 of the output (R2D2's stored-state burn-in, https://openreview.net/forum?id=r1lyTjAqYX).

    Args:
        modules: tensordict modules run in sequence (typically an LSTM/GRU module).
        burn_in: number of leading steps consumed (0: the sample is returned unchanged).
        out_keys: the recurrent entries carried over (default: every ``("next", key)`` output of the modules).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> step = TensorDictModule(torch.nn.Linear(1, 1), in_keys=["h"], out_keys=[("next", "h")])
        >>> torch.nn.init.ones_(step.module.weight); torch.nn.init.zeros_(step.module.bias)  # doctest: +ELLIPSIS
        Parameter...
        >>> data = TensorDict({"h": torch.arange(8.0).reshape(2, 4, 1)}, [2, 4])
        >>> out = BurnInTransform(step, burn_in=2)(data)
        >>> out.batch_size, out["h"][:, 0].flatten().tolist()
        (torch.Size([2, 2]), [1.0, 5.0])
    """

    invertible = False

    def __init__(
        self,
        modules: TensorDictModuleBase | Sequence[TensorDictModuleBase],
        burn_in: int,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        modules = [modules] if not isinstance(modules, Sequence) else list(modules)
        for module in modules:
            if not isinstance(module, TensorDictModuleBase):
                raise ValueError(
                    f"BurnInTransform: modules must be TensorDictModules, got {type(module).__name__}"
                )
        in_keys: list[NestedKey] = []
        for module in modules:
            in_keys.extend(k for k in module.in_keys if k not in in_keys)
        if out_keys is None:
            keys = [unravel_key(k) for m in modules for k in m.out_keys]
            carried = [
                k[1] if len(k) == 2 else k[1:] for k in keys if isinstance(k, tuple) and k[0] == "next"
            ]
        else:
            carried = []
            for key in out_keys:
                key = unravel_key(key)
                if isinstance(key, tuple) and key[0] == "next":
                    warnings.warn(
                        f"BurnInTransform: out_keys are read from the next step already; 'next' in {key} is ignored",
                        stacklevel=2,
                    )
                    key = key[1] if len(key) == 2 else key[1:]
                carried.append(key)
        super().__init__(in_keys=in_keys, out_keys=list(dict.fromkeys(carried)))
        if not isinstance(burn_in, int) or burn_in < 0:
            raise ValueError(f"BurnInTransform: burn_in must be a non-negative int, got {burn_in!r}")
        self.modules = modules
        self.burn_in = burn_in

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_RB_ONLY)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_RB_ONLY)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(_RB_ONLY)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.burn_in == 0:
            return tensordict
        if tensordict.batch_dims < 2 or tensordict.batch_size[1] <= self.burn_in:
            raise ValueError(
                f"BurnInTransform expects [B, T, ...] samples with T > burn_in={self.burn_in}, "
                f"got batch size {tuple(tensordict.batch_size)}"
            )
        device = tensordict.device
        warm, out = tensordict[:, : self.burn_in], tensordict[:, self.burn_in :]
        with torch.no_grad():
            for module in self.modules:
                param = next(iter(module.parameters()), None)
                if param is not None and warm.device != param.device:
                    warm = warm.to(param.device)
                warm = module(warm)
        last = warm.get("next")[:, -1]
        if device is not None:
            last = last.to(device)
        for key in self.out_keys:
            value = last.get(key)
            current = out.get(key, None)
            if current is None:
                current = torch.zeros(
                    *out.batch_size[:2], *value.shape[1:], dtype=value.dtype, device=value.device
                )
                out.set(key, current)
            current[:, 0] = value
        return out

    def __repr__(self) -> str:
        return f"BurnInTransform(burn_in={self.burn_in}, in_keys={self.in_keys}, out_keys={self.out_keys})"
