"""Entry-wise transforms: ``SignTransform``, ``BinarizeReward``, ``LineariseRewards`` and ``PermuteTransform``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Binary, Bounded, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["BinarizeReward", "LineariseRewards", "PermuteTransform", "SignTransform"]


def _map_leaves(spec: Any, in_keys: Sequence[NestedKey], out_keys: Sequence[NestedKey],
                build: Callable[[Any], Any]) -> Any:
    """Writes ``build(spec[in_key])`` under each ``out_key`` whose ``in_key`` the (composite) spec holds."""
    present = set(spec.keys(True, True))
    for in_key, out_key in zip(in_keys, out_keys):
        if in_key in present:
            spec[out_key] = build(spec[in_key])
    return spec


class SignTransform(Transform):
    """Replaces entries by their sign (-1, 0 or 1), forward on ``in_keys`` and inverse on ``in_keys_inv``.

    Args:
        in_keys: entries read (observations or rewards).
        out_keys: entries written (default ``in_keys``).
        in_keys_inv: entries written by the inverse (in the base env's domain).
        out_keys_inv: entries read by the inverse (default ``in_keys_inv``).

    Examples:
        >>> from tensordict import TensorDict
        >>> SignTransform(in_keys=["x"])(TensorDict({"x": torch.tensor([-2.0, 0.0, 3.0])}, []))["x"]
        tensor([-1.,  0.,  1.])
    """

    def __init__(self, in_keys: Sequence[NestedKey] | None = None, out_keys: Sequence[NestedKey] | None = None,
                 in_keys_inv: Sequence[NestedKey] | None = None,
                 out_keys_inv: Sequence[NestedKey] | None = None) -> None:
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.sign()

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.sign()

    @staticmethod
    def _bounded(leaf: Any) -> Bounded:
        return Bounded(low=-1.0, high=1.0, shape=leaf.shape, dtype=leaf.dtype, device=leaf.device)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_leaves(observation_spec, self.in_keys, self.out_keys, self._bounded)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_leaves(reward_spec, self.in_keys, self.out_keys, self._bounded)

    def transform_action_spec(self, action_spec: Any) -> Any:
        # The policy writes out_keys_inv; the env reads the sign of it under in_keys_inv: the outer action
        # space is the same as the base one.
        return action_spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict_reset.get(in_key, None)
            if value is not None:  # reward entries are absent from reset outputs
                tensordict_reset.set(out_key, self._apply_transform(value))
        return tensordict_reset


class BinarizeReward(Transform):
    """Maps rewards to ``1`` where they are positive and ``0`` elsewhere (``int8``, a ``Binary`` spec).

    Args:
        in_keys: reward entries (default ``["reward"]``).
        out_keys: entries written (default ``in_keys``).

    Examples:
        >>> from tensordict import TensorDict
        >>> BinarizeReward()(TensorDict({"reward": torch.tensor([[-1.0], [0.0], [0.5]])}, [3]))["reward"].flatten()
        tensor([0, 0, 1], dtype=torch.int8)
    """

    def __init__(self, in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None) -> None:
        super().__init__(in_keys=["reward"] if in_keys is None else in_keys, out_keys=out_keys)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if reward.ndim == 0 or reward.shape[-1] != 1:
            raise ValueError(f"BinarizeReward expects rewards with a trailing singleton dim, got {tuple(reward.shape)}")
        return (reward > 0).to(torch.int8)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_leaves(reward_spec, self.in_keys, self.out_keys,
                           lambda leaf: Binary(n=leaf.shape[-1], shape=leaf.shape, dtype=torch.int8,
                                               device=leaf.device))


class LineariseRewards(Transform):
    """Turns a vector of rewards (multi-objective) into one scalar: the weighted sum over the last dim.

    Args:
        in_keys: the reward vectors.
        out_keys: where the scalar rewards go (default ``in_keys``).
        weights: one weight per reward (default all ones).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = LineariseRewards(in_keys=["reward"], weights=[1.0, 0.5, 2.0])
        >>> t(TensorDict({"reward": torch.tensor([[1.0, 2.0, 3.0]])}, [1]))["reward"]
        tensor([[8.]])
    """

    def __init__(self, in_keys: Sequence[NestedKey], out_keys: Sequence[NestedKey] | None = None, *,
                 weights: Sequence[float] | torch.Tensor | None = None) -> None:
        if not in_keys:
            raise ValueError("LineariseRewards needs at least one in_key")
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if weights is not None:
            weights = torch.as_tensor(weights, dtype=torch.get_default_dtype())
            if weights.ndim != 1:
                raise ValueError(f"LineariseRewards: weights must be 1-d, got shape {tuple(weights.shape)}")
            if (weights < 0).any():
                raise ValueError("LineariseRewards: weights must be non-negative")
        self.register_buffer("weights", weights)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        weights = self.weights
        if weights is None:
            return reward.sum(-1, keepdim=True)
        if weights.shape[-1] != reward.shape[-1]:
            raise ValueError(f"LineariseRewards: {weights.shape[-1]} weights for rewards of size {reward.shape[-1]}")
        return (reward * weights.to(reward)).sum(-1, keepdim=True)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _scalar_leaf(self, leaf: Any) -> Any:
        shape = (*leaf.shape[:-1], 1)
        if isinstance(leaf, Bounded):
            weights = torch.ones(leaf.shape[-1]) if self.weights is None else self.weights
            low = (leaf.low * weights.to(leaf.low)).sum(-1, keepdim=True)
            high = (leaf.high * weights.to(leaf.high)).sum(-1, keepdim=True)
            return Bounded(low=low, high=high, shape=shape, dtype=leaf.dtype, device=leaf.device)
        return Unbounded(shape=shape, dtype=leaf.dtype, device=leaf.device)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_leaves(reward_spec, self.in_keys, self.out_keys, self._scalar_leaf)


class PermuteTransform(Transform):
    """Permutes the trailing dims of entries; ``dims`` are negative indices of those dims (``(-1, -3, -2)``).

    Args:
        dims: the new order of the last ``len(dims)`` dims, as negative indices.
        in_keys: entries permuted on the way out.
        out_keys: where they go (default ``in_keys``).
        in_keys_inv: entries written by the inverse (base env domain; inverse permutation).
        out_keys_inv: entries read by the inverse (default ``in_keys_inv``).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = PermuteTransform((-1, -3, -2), in_keys=["pixels"])
        >>> t(TensorDict({"pixels": torch.zeros(4, 5, 3)}, []))["pixels"].shape
        torch.Size([3, 4, 5])
    """

    def __init__(self, dims: Sequence[int], in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None, in_keys_inv: Sequence[NestedKey] | None = None,
                 out_keys_inv: Sequence[NestedKey] | None = None) -> None:
        dims = tuple(int(d) for d in dims)
        n = len(dims)
        if sorted(dims) != list(range(-n, 0)):
            raise ValueError(f"PermuteTransform: dims must be a permutation of {tuple(range(-n, 0))}, got {dims}")
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self.dims = dims
        self._inverse = tuple(dims.index(d) - n for d in range(-n, 0))

    def _permute(self, value: torch.Tensor, order: tuple[int, ...]) -> torch.Tensor:
        lead = value.ndim - len(order)
        if lead < 0:
            raise ValueError(f"PermuteTransform: a tensor of shape {tuple(value.shape)} has fewer than {len(order)} dims")
        return value.permute(*range(lead), *(lead + len(order) + d for d in order))

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._permute(obs, self.dims)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._permute(state, self._inverse)

    def _permuted_leaf(self, leaf: Any, order: tuple[int, ...]) -> Any:
        n = len(order)
        shape = (*leaf.shape[:-n], *(leaf.shape[d] for d in order))
        if isinstance(leaf, Bounded):
            low = self._permute(leaf.low, order)
            high = self._permute(leaf.high, order)
            return Bounded(low=low, high=high, shape=shape, dtype=leaf.dtype, device=leaf.device)
        return Unbounded(shape=shape, dtype=leaf.dtype, device=leaf.device)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_leaves(observation_spec, self.in_keys, self.out_keys,
                           lambda leaf: self._permuted_leaf(leaf, self.dims))

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in ("full_action_spec", "full_state_spec"):
            if part in input_spec.keys():
                input_spec[part] = _map_leaves(input_spec[part], self.in_keys_inv, self.out_keys_inv,
                                               lambda leaf: self._permuted_leaf(leaf, self.dims))
        return input_spec
