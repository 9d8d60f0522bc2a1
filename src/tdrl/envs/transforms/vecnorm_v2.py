"""``VecNormV2``: running (exponentially weighted) normalisation of observations and rewards."""

from __future__ import annotations

import math
import multiprocessing as mp
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Compose, Transform
from tdrl.envs.transforms.norm import ObservationNorm

__all__ = ["VecNormV2"]

_SEP = ".-|-."


class VecNormV2(Transform):
    """Normalises entries by running estimates of their mean and standard deviation.

    Per entry, ``loc`` and ``var`` are exponential moving averages of ``x`` and ``x ** 2`` (weight
    ``1 - decay`` per update; ``decay=1`` gives the plain running mean, weight ``1 / count``) and ``count``
    is the number of updates. The output is ``(x - m) / max(sqrt(v), eps)`` with the bias-corrected
    ``m = loc / c``, ``v = (var - loc ** 2) / c`` and ``c = 1 - decay ** count`` (``c = 1`` for
    ``decay=1``). Each reset and step output updates the statistics (entries absent from an output, such
    as the reward at reset, are skipped) and is then normalised. Statistics are element-wise, including
    over the env's batch dims, unless ``reduce_batch_dims=True`` (one update per output, averaged over
    the batch, with weight ``1 - decay ** n`` for ``n`` elements). ``freeze()`` stops the updates.

    Args:
        in_keys: entries to normalise (observations and/or ``"reward"``).
        out_keys: where the normalised values go (default ``in_keys``).
        lock: a lock held while the statistics change (default: a new ``multiprocessing.Lock``).
        stateful: must be True: statistics live in the transform (TorchRL's stateless mode, which carries
            them in the tensordict, is not provided).
        decay: the moving-average decay.
        eps: the smallest scale.
        shared_data: a tensordict with ``"loc"``, ``"var"`` and ``"count"`` entries (e.g. another
            ``VecNormV2``'s, in shared memory) used as the statistics.
        reduce_batch_dims: average each update over the batch dims.

    Examples:
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), VecNormV2(in_keys=["observation"], decay=0.99))
        >>> _ = env.set_seed(0)
        >>> rollout = env.rollout(20)
        >>> int(env.transform._count["observation"])
        21
        >>> bool(rollout["next", "observation"].abs().max() < 10)
        True
    """

    def __init__(self, in_keys: Sequence[NestedKey], out_keys: Sequence[NestedKey] | None = None, *,
                 lock: Any = None, stateful: bool = True, decay: float = 0.9999, eps: float = 1e-4,
                 shared_data: TensorDictBase | None = None, reduce_batch_dims: bool = False) -> None:
        if not stateful:
            raise ValueError("VecNormV2: only stateful=True is provided by tdrl (statistics held by the transform)")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if len(self.out_keys) != len(self.in_keys):
            raise ValueError(f"VecNormV2: {len(self.in_keys)} in_keys but {len(self.out_keys)} out_keys")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"VecNormV2: decay must be in (0, 1], got {decay}")
        self.lock = mp.Lock() if lock is None else lock
        self.stateful = True
        self.decay = float(decay)
        self.eps = float(eps)
        self.frozen = False
        self.reduce_batch_dims = reduce_batch_dims
        self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))
        self._loc: TensorDictBase | None = None
        self._var: TensorDictBase | None = None
        self._count: TensorDictBase | None = None
        if shared_data is not None:
            self._loc, self._var, self._count = shared_data["loc"], shared_data["var"], shared_data["count"]
            self.initialized.fill_(True)

    # ------------------------------------------------------------------ statistics
    def _init_key(self, key: NestedKey, value: torch.Tensor, batch_dims: int) -> None:
        shape = value.shape[batch_dims:] if self.reduce_batch_dims else value.shape
        dtype = value.dtype if value.dtype.is_floating_point else torch.get_default_dtype()
        if self._loc is None:
            self._loc, self._var, self._count = TensorDict(), TensorDict(), TensorDict()
        self._loc.set(key, torch.zeros(shape, dtype=dtype, device=value.device))
        self._var.set(key, torch.zeros(shape, dtype=dtype, device=value.device))
        self._count.set(key, torch.zeros((), dtype=torch.int64, device=value.device))
        self.initialized.fill_(True)

    def _update(self, key: NestedKey, value: torch.Tensor, batch_dims: int) -> None:
        loc, var, count = self._loc.get(key), self._var.get(key), self._count.get(key)
        value = value.to(loc.dtype)
        if self.reduce_batch_dims and batch_dims:
            dims = tuple(range(batch_dims))
            n = value[(...,) + (0,) * (value.ndim - batch_dims)].numel()
            count += n
            mean, mean_sq = value.mean(dims), value.pow(2).mean(dims)
            weight = 1 - self.decay**n if self.decay != 1.0 else n / count
        else:
            count += 1
            mean, mean_sq = value, value.pow(2)
            weight = 1 - self.decay if self.decay != 1.0 else 1 / count
        loc.lerp_(mean, weight)
        var.lerp_(mean_sq, weight)

    def _loc_scale_of(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        loc, var, count = self._loc.get(key), self._var.get(key), self._count.get(key)
        correction = 1 - torch.exp(count * math.log(self.decay)).to(loc.dtype) if self.decay != 1.0 else 1.0
        # The variance is formed from the raw moments before the bias correction (TorchRL's order).
        scale = ((var - loc.pow(2)) / correction).sqrt().clamp_min(self.eps)
        return loc / correction, scale

    def _normalise(self, data: TensorDictBase, *, update: bool) -> TensorDictBase:
        batch_dims = data.batch_dims
        with self.lock:
            for in_key, out_key in zip(self.in_keys, self.out_keys):
                value = data.get(in_key, None)
                if value is None:
                    continue
                if self._loc is None or in_key not in self._loc.keys(True, True):
                    self._init_key(in_key, value, batch_dims)
                if update and not self.frozen:
                    self._update(in_key, value, batch_dims)
                loc, scale = self._loc_scale_of(in_key)
                data.set(out_key, (value.to(loc.dtype) - loc) / scale)
        return data

    # ------------------------------------------------------------------ hooks
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        missing = [k for k in self.in_keys if next_tensordict.get(k, None) is None]
        if missing and not self.missing_tolerance:
            self._missing(missing[0], next_tensordict)
        return self._normalise(next_tensordict, update=True)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._normalise(tensordict_reset, update=True)  # rewards are absent at reset: skipped

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """On plain data: normalises with the current statistics, without updating them."""
        if self._loc is None:
            raise RuntimeError("VecNormV2: no statistics yet (run the env, or pass shared_data)")
        return self._normalise(tensordict, update=False)

    def denorm(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Maps normalised ``out_keys`` back to ``in_keys`` (``x = y * scale + loc``) on a shallow copy."""
        if self._loc is None:
            raise RuntimeError("VecNormV2 must be initialized before calling denorm")
        tensordict = tensordict.copy()
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(out_key, None)
            if value is not None:
                loc, scale = self._loc_scale_of(in_key)
                tensordict.set(in_key, value * scale + loc)
        return tensordict

    # ------------------------------------------------------------------ state
    def freeze(self) -> VecNormV2:
        """Stops the statistics updates (normalisation continues)."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNormV2:
        """Resumes the statistics updates."""
        self.frozen = False
        return self

    def frozen_copy(self) -> VecNormV2:
        """A frozen clone with its own copy of the statistics."""
        if self._loc is None:
            raise RuntimeError("VecNormV2: make sure the transform has seen data before creating a frozen copy")
        return self.clone().freeze()

    def _stats(self, which: str) -> TensorDictBase:
        if self._loc is None:
            raise RuntimeError(f"VecNormV2: {which} is unknown before the transform has seen data")
        out = TensorDict()
        for key in self.in_keys:
            if key in self._loc.keys(True, True):
                out.set(key, self._loc_scale_of(key)[0 if which == "loc" else 1])
        return out

    @property
    def loc(self) -> TensorDictBase:
        """The bias-corrected means, one entry per ``in_keys`` entry."""
        return self._stats("loc")

    @property
    def scale(self) -> TensorDictBase:
        """The bias-corrected standard deviations (at least ``eps``)."""
        return self._stats("scale")

    @property
    def standard_normal(self) -> bool:
        return True

    def to_observation_norm(self) -> ObservationNorm | Compose:
        """A fixed ``ObservationNorm`` (a ``Compose`` of them for several keys) with the current statistics."""
        loc, scale = self.loc, self.scale
        norms = [ObservationNorm(loc=loc.get(k), scale=scale.get(k), in_keys=[k], out_keys=[o],
                                 standard_normal=True, eps=self.eps)
                 for k, o in zip(self.in_keys, self.out_keys) if k in loc.keys(True, True)]
        return norms[0] if len(norms) == 1 else Compose(*norms)

    def get_extra_state(self) -> dict:
        if self._loc is None:
            return {}
        return TensorDict(loc=self._loc, var=self._var, count=self._count).flatten_keys(_SEP).to_dict()

    def set_extra_state(self, state: dict) -> None:
        if not state:
            if self._loc is not None:
                raise RuntimeError("VecNormV2: loading an empty state into an initialized transform")
            return
        stats = TensorDict(state).unflatten_keys(_SEP)
        if self._loc is None:
            self._loc, self._var, self._count = stats["loc"], stats["var"], stats["count"]
        else:  # in place, so that statistics shared with workers stay shared
            self._loc.update_(stats["loc"])
            self._var.update_(stats["var"])
            self._count.update_(stats["count"])
        self.initialized.fill_(True)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["lock"] = None  # locks do not pickle; a new one is made on load
        return state

    def __setstate__(self, state: dict) -> None:
        if state.get("lock") is None:
            state["lock"] = mp.Lock()
        self.__dict__.update(state)

    def __deepcopy__(self, memo: dict) -> VecNormV2:
        lock = self.__dict__["lock"]
        self.__dict__["lock"] = None
        try:
            out = super().__deepcopy__(memo)
        finally:
            self.__dict__["lock"] = lock
        out.__dict__["lock"] = mp.Lock()
        return out

    # ------------------------------------------------------------------ specs
    def _spec(self, spec: Any) -> Any:
        present = set(spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if unravel_key(in_key) in present:
                leaf = spec[in_key]
                dtype = leaf.dtype if leaf.dtype.is_floating_point else torch.get_default_dtype()
                if isinstance(leaf, Bounded) or dtype != leaf.dtype:
                    leaf = Unbounded(shape=leaf.shape, dtype=dtype, device=leaf.device)
                spec[out_key] = leaf.clone()
        return spec

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return self._spec(observation_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return self._spec(reward_spec)

    def __repr__(self) -> str:
        return (f"VecNormV2(in_keys={self.in_keys}, out_keys={self.out_keys}, decay={self.decay}, "
                f"eps={self.eps}, reduce_batch_dims={self.reduce_batch_dims})")
