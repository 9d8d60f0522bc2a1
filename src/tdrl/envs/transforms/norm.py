"""Normalisation transforms: ``ObservationNorm`` (fixed affine map) and ``VecNorm`` (running statistics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch.nn.parameter import UninitializedBuffer

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import enclosing_env

__all__ = ["ObservationNorm", "VecNorm"]


def _affine_spec(leaf: Any, fn: Any) -> Any:
    """The spec of ``fn(x)`` for ``x`` in ``leaf`` (an affine ``fn``; integer inputs give float outputs)."""
    dtype = fn(leaf.zero()).dtype
    if isinstance(leaf, Bounded):
        low, high = fn(leaf.low.to(dtype)), fn(leaf.high.to(dtype))
        return Bounded(
            low=torch.minimum(low, high),
            high=torch.maximum(low, high),
            shape=leaf.shape,
            dtype=dtype,
            device=leaf.device,
        )
    return Unbounded(shape=leaf.shape, dtype=dtype, device=leaf.device)


class ObservationNorm(Transform):
    """Affine observation normalisation: ``obs * scale + loc``, or ``(obs - loc) / scale`` if ``standard_normal``.

    ``loc``/``scale`` may be left out and computed from rollouts of the parent env with :meth:`init_stats`.

    Args:
        loc: the shift (None: to be initialised by ``init_stats``).
        scale: the scale (None: idem).
        in_keys: the entries (default ``["observation"]``).
        out_keys: the outputs (default ``in_keys``).
        in_keys_inv: inputs mapped back by the inverse.
        out_keys_inv: their outer names (default ``in_keys_inv``).
        standard_normal: use ``(obs - loc) / scale``.
        eps: lower bound of the scale (default 1e-6).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ObservationNorm(loc=1.0, scale=2.0, standard_normal=True)
        >>> t(TensorDict({"observation": torch.tensor([3.0, 5.0])}, []))["observation"]
        tensor([1., 2.])
    """

    invertible = True

    def __init__(
        self,
        loc: float | torch.Tensor | None = None,
        scale: float | torch.Tensor | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
        eps: float | None = None,
    ) -> None:
        super().__init__(
            in_keys=["observation"] if in_keys is None else in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
        )
        self.standard_normal = standard_normal
        self.eps = 1e-6 if eps is None else eps
        dtype = torch.get_default_dtype()
        for name, value in (("loc", loc), ("scale", scale)):
            if value is None:
                self.register_buffer(name, UninitializedBuffer())
            else:
                value = torch.as_tensor(value, dtype=value.dtype if torch.is_tensor(value) else dtype)
                if name == "scale":
                    value = value.clamp_min(self.eps)
                self.register_buffer(name, value)

    @property
    def initialized(self) -> bool:
        return not isinstance(self.loc, UninitializedBuffer) and not isinstance(
            self.scale, UninitializedBuffer
        )

    def _check_init(self) -> None:
        if not self.initialized:
            raise RuntimeError(
                "ObservationNorm: loc and scale are not initialised; pass them or call init_stats() first"
            )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        self._check_init()
        if self.standard_normal:
            return (obs - self.loc) / self.scale
        return obs * self.scale + self.loc

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        self._check_init()
        if self.standard_normal:
            return state * self.scale + self.loc
        return (state - self.loc) / self.scale

    def init_stats(
        self,
        num_iter: int,
        reduce_dim: int | tuple[int, ...] = 0,
        cat_dim: int | None = None,
        key: NestedKey | None = None,
        keep_dims: tuple[int, ...] | None = None,
    ) -> None:
        """Sets ``loc``/``scale`` from ``num_iter`` steps of random rollouts of the parent env.

        Args:
            num_iter: the number of steps to collect.
            reduce_dim: the dim(s) of the collected data over which mean and std are taken.
            cat_dim: the dim along which rollouts are concatenated (default ``reduce_dim``, or its first).
            key: the entry to collect (default: the single ``in_keys`` entry).
            keep_dims: reduced dims kept as singletons in ``loc``/``scale``.
        """
        parent = self.parent
        if parent is None:
            raise RuntimeError("ObservationNorm.init_stats needs the transform to be attached to an env")
        if key is None:
            if len(self.in_keys) != 1:
                raise ValueError(f"ObservationNorm.init_stats: pass key=, in_keys are {self.in_keys}")
            key = self.in_keys[0]
        reduce_dims = (reduce_dim,) if isinstance(reduce_dim, int) else tuple(reduce_dim)
        if cat_dim is None:
            cat_dim = reduce_dims[0]
        chunks, collected = [], 0
        while collected < num_iter:
            rollout = parent.rollout(max_steps=num_iter)
            chunks.append(rollout.get(key))
            collected += rollout.shape[-1] if rollout.ndim else 1
        data = torch.cat(chunks, cat_dim)
        if data.shape[cat_dim] > num_iter:
            data = data.narrow(cat_dim, 0, num_iter)
        loc = data.mean(reduce_dims, keepdim=True)
        scale = data.std(reduce_dims, keepdim=True).clamp_min(self.eps)
        squeeze = [d for d in reduce_dims if keep_dims is None or d not in keep_dims]
        for d in sorted((d % data.ndim for d in squeeze), reverse=True):
            loc, scale = loc.squeeze(d), scale.squeeze(d)
        if not self.standard_normal:
            loc, scale = -loc / scale, 1.0 / scale
        self.loc = loc.detach()
        self.scale = scale.detach()
        env = enclosing_env(self)
        if env is not None:
            env._refresh_specs()

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        if not self.initialized:
            return observation_spec
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in observation_spec.keys(True, True):
                observation_spec[out_key] = _affine_spec(observation_spec[in_key], self._apply_transform)
        return observation_spec

    def __repr__(self) -> str:
        if self.initialized and self.loc.numel() == 1 and self.scale.numel() == 1:
            return f"ObservationNorm(loc={self.loc.item():.4f}, scale={self.scale.item():.4f}, keys={self.in_keys})"
        return f"ObservationNorm(keys={self.in_keys}, initialized={self.initialized})"


class VecNorm(Transform):
    """Normalises observations with exponentially-decayed running mean and variance.

    The statistics (``<key>_sum``, ``<key>_ssq``, ``<key>_count``) live in a tensordict that can be put in
    shared memory (``shared_td``) so that all workers of a ``ParallelEnv`` update the same statistics.

    Args:
        in_keys: the entries (default ``["observation"]``).
        out_keys: the outputs (default ``in_keys``).
        shared_td: an existing statistics tensordict to use (e.g. from another VecNorm).
        lock: a lock taken around updates of shared statistics.
        decay: the decay of the running sums.
        eps: lower bound of the std.
        shapes: the shape of each entry (default: from the env's specs or the first data seen).
        new_api: accepted for compatibility; only the classic statistics are implemented.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = VecNorm(in_keys=["obs"], decay=1.0)
        >>> _ = t(TensorDict({"obs": torch.tensor([1.0])}, []))
        >>> t(TensorDict({"obs": torch.tensor([3.0])}, []))["obs"]
        tensor([1.0000])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        shared_td: TensorDictBase | None = None,
        lock: Any = None,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shapes: list[torch.Size] | None = None,
        new_api: bool | None = None,
    ) -> None:
        super().__init__(in_keys=["observation"] if in_keys is None else in_keys, out_keys=out_keys)
        if shapes is not None and len(shapes) != len(self.in_keys):
            raise ValueError(f"VecNorm: {len(shapes)} shapes for {len(self.in_keys)} in_keys")
        self.decay = decay
        self.eps = eps
        self.lock = lock
        self.shapes = shapes
        self.frozen = False
        self._td = shared_td
        if shared_td is not None:
            for key in self.in_keys:
                if self._stat_key(key, "sum") not in shared_td.keys(True, True):
                    raise KeyError(f"VecNorm: shared_td has no statistics for {key!r}")
        elif shapes is not None:
            self._td = self._make_td({k: torch.Size(s) for k, s in zip(self.in_keys, shapes)})

    @staticmethod
    def _stat_key(key: NestedKey, stat: str) -> NestedKey:
        if isinstance(key, str):
            return f"{key}_{stat}"
        return (*key[:-1], f"{key[-1]}_{stat}")

    def _make_td(self, shapes: dict[NestedKey, torch.Size], dtype: torch.dtype = torch.float32) -> TensorDict:
        td = TensorDict({}, [])
        for key, shape in shapes.items():
            td.set(self._stat_key(key, "sum"), torch.zeros(shape, dtype=dtype))
            td.set(self._stat_key(key, "ssq"), torch.zeros(shape, dtype=dtype))
            td.set(self._stat_key(key, "count"), torch.zeros((), dtype=dtype))
        return td

    @property
    def loc(self) -> TensorDictBase:
        """The running means, one per key."""
        return TensorDict({k: self._moments(k)[0] for k in self.in_keys}, [])

    @property
    def scale(self) -> TensorDictBase:
        """The running stds, one per key."""
        return TensorDict({k: self._moments(k)[1] for k in self.in_keys}, [])

    def _moments(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        td = self._td
        count = td.get(self._stat_key(key, "count")).clamp_min(1e-8)
        mean = td.get(self._stat_key(key, "sum")) / count
        var = td.get(self._stat_key(key, "ssq")) / count - mean.pow(2)
        return mean, var.clamp_min(0).sqrt().clamp_min(self.eps)

    def _update(self, key: NestedKey, value: torch.Tensor) -> None:
        shape = self._td.get(self._stat_key(key, "sum")).shape
        batch_dims = value.ndim - len(shape)
        flat = value.reshape(-1, *shape) if batch_dims > 0 else value.unsqueeze(0)
        n = flat.shape[0]
        d = self.decay
        weights = d ** torch.arange(n - 1, -1, -1, dtype=flat.dtype, device=flat.device)
        w = weights.reshape(-1, *(1,) * len(shape))
        for stat, new in (
            ("sum", (flat * w).sum(0)),
            ("ssq", (flat.pow(2) * w).sum(0)),
            ("count", weights.sum()),
        ):
            stat_key = self._stat_key(key, stat)
            old = self._td.get(stat_key)
            old.mul_(d**n).add_(new.to(old.dtype))

    def _normalize(self, key: NestedKey, value: torch.Tensor, batch_dims: int) -> torch.Tensor:
        # Statistics are per feature: the data's batch dims are reduced.
        if self._td is None:
            self._td = TensorDict({}, [])
        if self._stat_key(key, "sum") not in self._td.keys(True, True):
            self._td.update(self._make_td({key: value.shape[batch_dims:]}, dtype=value.dtype))
        if not self.frozen:
            if self.lock is not None:
                with self.lock:
                    self._update(key, value)
            else:
                self._update(key, value)
        mean, std = self._moments(key)
        return ((value - mean) / std).to(value.dtype)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, next_tensordict)
                continue
            next_tensordict.set(out_key, self._normalize(in_key, value, next_tensordict.batch_dims))
        return next_tensordict

    def freeze(self) -> VecNorm:
        """Stops statistics updates (evaluation)."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNorm:
        """Resumes statistics updates."""
        self.frozen = False
        return self

    def to_observation_norm(self) -> ObservationNorm:
        """An ``ObservationNorm`` with the current statistics (single key only)."""
        if len(self.in_keys) != 1:
            raise ValueError(f"VecNorm.to_observation_norm needs exactly one in_key, got {self.in_keys}")
        mean, std = self._moments(self.in_keys[0])
        return ObservationNorm(
            loc=mean.clone(),
            scale=std.clone(),
            in_keys=self.in_keys,
            out_keys=self.out_keys,
            standard_normal=True,
        )

    @staticmethod
    def build_td_for_shared_vecnorm(
        env: Any, keys: Sequence[NestedKey] | None = None, memmap: bool = False
    ) -> TensorDictBase:
        """A shared-memory statistics tensordict for ``keys`` of ``env``'s observation spec."""
        keys = ["observation"] if keys is None else list(keys)
        spec = env.observation_spec
        shapes = {k: spec[k].shape[len(env.batch_size) :] for k in keys}
        td = VecNorm(in_keys=keys)._make_td(shapes)
        return td.memmap_() if memmap else td.share_memory_()

    def transform_output_spec(self, output_spec: Any) -> Any:
        obs = output_spec["full_observation_spec"]
        if self._td is None and not self.frozen:
            batch = len(obs.shape)
            shapes = {}
            for key in self.in_keys:
                if key in obs.keys(True, True):
                    leaf = obs[key]
                    shapes[key] = leaf.shape[batch:]
            if shapes:
                self._td = self._make_td(shapes, dtype=next(iter(obs[k] for k in shapes)).dtype)
        output_spec = output_spec.clone()
        obs = output_spec["full_observation_spec"]
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in obs.keys(True, True):
                obs[out_key] = Unbounded(
                    shape=obs[in_key].shape, dtype=obs[in_key].dtype, device=obs[in_key].device
                )
        output_spec["full_observation_spec"] = obs
        return output_spec

    def __repr__(self) -> str:
        return f"VecNorm(in_keys={self.in_keys}, decay={self.decay}, eps={self.eps})"
