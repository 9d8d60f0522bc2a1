"""Shape and value transforms of tensors: ``CatTensors``, ``FlattenObservation``, ``UnsqueezeTransform``,
``SqueezeTransform`` and ``ClipTransform``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["CatTensors", "ClipTransform", "FlattenObservation", "SqueezeTransform", "UnsqueezeTransform"]


def _map_obs_specs(transform: Transform, spec: Any, fn: Any) -> Any:
    """Rewrites the spec of every ``in_keys`` entry present in ``spec`` with ``fn(leaf)``."""
    for in_key, out_key in zip(transform.in_keys, transform.out_keys):
        if in_key in spec.keys(True, True):
            spec[out_key] = fn(spec[in_key])
    return spec


def _squeeze_spec(spec: Any, dim: int) -> Any:
    shape = list(spec.shape)
    if shape[dim] != 1:
        raise ValueError(f"SqueezeTransform: dim {dim} of spec shape {tuple(spec.shape)} is not a singleton")
    del shape[dim]
    if not shape:  # a (1,) spec becomes a scalar one (indexing handles that case)
        return spec[0]
    return spec.reshape(torch.Size(shape))


def _map_inv_specs(transform: Transform, spec: Any, fn: Any) -> Any:
    for in_key, out_key in zip(transform.in_keys_inv, transform.out_keys_inv):
        if in_key in spec.keys(True, True):
            spec[out_key] = fn(spec[in_key])
    return spec


class CatTensors(Transform):
    """Concatenates entries into one (e.g. all observations into ``"observation_vector"``).

    Args:
        in_keys: the entries (default: every observation entry of the env, sorted).
        out_key: the concatenated entry.
        dim: the concatenation dim (negative).

    Keyword Args:
        del_keys: remove the inputs.
        unsqueeze_if_oor: unsqueeze inputs that lack ``dim``.
        sort: sort ``in_keys`` by name.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"a": torch.zeros(2), "b": torch.ones(1)}, [])
        >>> CatTensors(["a", "b"], out_key="ab")(td)["ab"]
        tensor([0., 0., 1.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey = "observation_vector",
        dim: int = -1,
        *,
        del_keys: bool = True,
        unsqueeze_if_oor: bool = False,
        sort: bool = True,
    ) -> None:
        if dim >= 0:
            raise ValueError(f"CatTensors: dim must be negative, got {dim}")
        self._auto_keys = in_keys is None
        keys = [] if in_keys is None else list(in_keys)
        if sort:
            keys = sorted(keys, key=str)
        super().__init__(in_keys=keys, out_keys=[out_key])
        self.dim = dim
        self.del_keys = del_keys
        self.unsqueeze_if_oor = unsqueeze_if_oor
        self.sort = sort

    def _values(self, tensordict: TensorDictBase) -> list[torch.Tensor] | None:
        values = []
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if value is None:
                if self._missing_tolerance:
                    return None
                self._missing(key, tensordict)
            if self.unsqueeze_if_oor and value.ndim < -self.dim:
                value = value.unsqueeze(self.dim)
            values.append(value)
        return values

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = self._values(next_tensordict)
        if values is None:
            return next_tensordict
        next_tensordict.set(self.out_keys[0], torch.cat(values, self.dim))
        if self.del_keys:
            drop = [k for k in self.in_keys if k != self.out_keys[0]]
            next_tensordict = next_tensordict.exclude(*drop)
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        if self._auto_keys:
            keys = [k for k in observation_spec.keys(True, True)]
            self.in_keys = sorted(keys, key=str) if self.sort else keys
        leaves = []
        for key in self.in_keys:
            if key not in observation_spec.keys(True, True):
                raise KeyError(
                    f"CatTensors: {key!r} not in the observation spec "
                    f"(available: {list(observation_spec.keys(True, True))})"
                )
            leaves.append(observation_spec[key])
        shapes = [leaf.shape if leaf.ndim >= -self.dim else (*leaf.shape, 1) for leaf in leaves]
        size = sum(s[self.dim] for s in shapes)
        shape = list(shapes[0])
        shape[self.dim] = size
        dtype = (
            torch.result_type(*[torch.zeros((), dtype=leaf.dtype) for leaf in leaves])
            if len(leaves) > 1
            else leaves[0].dtype
        )
        if self.del_keys:
            for key in self.in_keys:
                if key != self.out_keys[0]:
                    del observation_spec[key]
        observation_spec[self.out_keys[0]] = Unbounded(shape=shape, dtype=dtype, device=leaves[0].device)
        return observation_spec

    def _required_keys(self) -> list[NestedKey]:
        return [] if self._auto_keys else list(self.in_keys)

    def __repr__(self) -> str:
        return f"CatTensors(in_keys={self.in_keys}, out_key={self.out_keys[0]!r}, dim={self.dim})"


class FlattenObservation(Transform):
    """Flattens dims ``first_dim`` to ``last_dim`` (negative, so that batch dims are unaffected).

    Args:
        first_dim: the first dim to flatten.
        last_dim: the last dim to flatten.
        in_keys: the entries (default ``["pixels"]``).
        out_keys: the outputs (default ``in_keys``).
        allow_positive_dim: accept non-negative dims (counted from the first batch dim).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> FlattenObservation(-2, -1, in_keys=["x"])(TensorDict({"x": torch.zeros(3, 4, 5)}, [3]))["x"].shape
        torch.Size([3, 20])
    """

    def __init__(
        self,
        first_dim: int,
        last_dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
    ) -> None:
        if not allow_positive_dim and (first_dim >= 0 or last_dim >= 0):
            raise ValueError(
                f"FlattenObservation: dims must be negative (got {first_dim}, {last_dim}); "
                "pass allow_positive_dim=True to count from the first dim"
            )
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)
        self.first_dim = first_dim
        self.last_dim = last_dim

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.flatten(self.first_dim, self.last_dim)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_obs_specs(self, observation_spec, lambda s: s.flatten(self.first_dim, self.last_dim))

    def __repr__(self) -> str:
        return f"FlattenObservation(first_dim={self.first_dim}, last_dim={self.last_dim}, in_keys={self.in_keys})"


class UnsqueezeTransform(Transform):
    """Inserts a singleton dim (the inverse squeezes it out of the inputs).

    Args:
        dim: the new dim (negative unless ``allow_positive_dim``).

    Keyword Args:
        allow_positive_dim: accept a non-negative ``dim``.
        in_keys: the entries.
        out_keys: the outputs (default ``in_keys``).
        in_keys_inv: inputs squeezed by the inverse.
        out_keys_inv: their outer names (default ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> UnsqueezeTransform(-1, in_keys=["x"])(TensorDict({"x": torch.zeros(3)}, []))["x"].shape
        torch.Size([3, 1])
    """

    invertible = True

    def __init__(
        self,
        dim: int | None = None,
        *,
        allow_positive_dim: bool = False,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        if dim is None:
            raise TypeError(f"{type(self).__name__}: dim is required")
        if dim >= 0 and not allow_positive_dim:
            raise ValueError(
                f"{type(self).__name__}: dim must be negative (got {dim}); pass allow_positive_dim=True"
            )
        super().__init__(
            in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv
        )
        self.dim = dim
        self.allow_positive_dim = allow_positive_dim

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.unsqueeze(self.dim)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.squeeze(self.dim)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_obs_specs(self, observation_spec, lambda s: s.unsqueeze(self.dim))

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_obs_specs(self, reward_spec, lambda s: s.unsqueeze(self.dim))

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in ("full_action_spec", "full_state_spec"):
            if part in input_spec.keys():
                input_spec[part] = _map_inv_specs(self, input_spec[part], lambda s: s.unsqueeze(self.dim))
        return input_spec

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, in_keys={self.in_keys}, in_keys_inv={self.in_keys_inv})"
        )


class SqueezeTransform(UnsqueezeTransform):
    """Removes a singleton dim (the inverse unsqueezes the inputs).

    Args:
        dim: the dim to remove.
        *args: forwarded to :class:`UnsqueezeTransform` keyword arguments is not supported; pass keywords.

    Keyword Args:
        in_keys: the entries.
        out_keys: the outputs (default ``in_keys``).
        in_keys_inv: inputs unsqueezed by the inverse.
        out_keys_inv: their outer names (default ``in_keys_inv``).
        **kwargs: ``allow_positive_dim``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> SqueezeTransform(-1, in_keys=["x"])(TensorDict({"x": torch.zeros(3, 1)}, []))["x"].shape
        torch.Size([3])
    """

    def __init__(
        self,
        dim: int | None = None,
        *args: Any,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        **kwargs: Any,
    ) -> None:
        if args:
            raise TypeError(f"SqueezeTransform takes dim as its only positional argument, got extra {args}")
        super().__init__(
            dim,
            in_keys=in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
            **kwargs,
        )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.squeeze(self.dim)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.unsqueeze(self.dim)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_obs_specs(self, observation_spec, lambda s: _squeeze_spec(s, self.dim))

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_obs_specs(self, reward_spec, lambda s: _squeeze_spec(s, self.dim))

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in ("full_action_spec", "full_state_spec"):
            if part in input_spec.keys():
                input_spec[part] = _map_inv_specs(self, input_spec[part], lambda s: _squeeze_spec(s, self.dim))
        return input_spec


class ClipTransform(Transform):
    """Clamps entries to ``[low, high]`` (the inverse clamps inputs such as actions).

    Args:
        in_keys: the entries clamped on output.
        out_keys: the outputs (default ``in_keys``).
        in_keys_inv: inputs clamped by the inverse.
        out_keys_inv: their outer names (default ``in_keys_inv``).

    Keyword Args:
        low: the lower bound (None: unbounded).
        high: the upper bound (None: unbounded).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> ClipTransform(["x"], low=-1.0, high=1.0)(TensorDict({"x": torch.tensor([-2.0, 2.0])}, []))["x"]
        tensor([-1.,  1.])
    """

    invertible = True

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        low: float | None = None,
        high: float | None = None,
    ) -> None:
        if low is None and high is None:
            raise ValueError("ClipTransform: at least one of low and high must be given")
        if low is not None and high is not None and low >= high:
            raise ValueError(f"ClipTransform: low={low} must be smaller than high={high}")
        super().__init__(
            in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv
        )
        self.low = low
        self.high = high

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.clamp(self.low, self.high)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.clamp(self.low, self.high)

    def _bounded(self, leaf: Any) -> Any:
        low = -float("inf") if self.low is None else self.low
        high = float("inf") if self.high is None else self.high
        return Bounded(low=low, high=high, shape=leaf.shape, dtype=leaf.dtype, device=leaf.device)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_obs_specs(self, observation_spec, self._bounded)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_obs_specs(self, reward_spec, self._bounded)

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in ("full_action_spec", "full_state_spec"):
            if part in input_spec.keys():
                input_spec[part] = _map_inv_specs(self, input_spec[part], self._bounded)
        return input_spec

    def __repr__(self) -> str:
        return f"ClipTransform(low={self.low}, high={self.high}, in_keys={self.in_keys})"
