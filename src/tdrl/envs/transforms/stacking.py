"""``Stack`` (several entries into one along a new dim, unbound back on the inverse) and ``ExpandAs``
(an entry broadcast to the shape of another)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey, expand_as_right

from tdrl.data.tensor_specs import Composite
from tdrl.envs.transforms._base import Transform

__all__ = ["ExpandAs", "Stack"]


class Stack(Transform):
    """Stacks ``in_keys`` into ``out_key`` along ``dim`` (a new dim); the inverse unbinds it again.

    Args:
        in_keys: the entries stacked (same shapes and dtypes).
        out_key: the stacked entry (must not be one of ``in_keys``).
        in_key_inv: the stacked input read by the inverse (given together with ``out_keys_inv``).
        out_keys_inv: the entries the inverse writes, one per slice along ``dim``.
        dim: the new dim, counted from the end (negative) unless ``allow_positive_dim``.
        allow_positive_dim: allow ``dim >= 0`` (then it counts the env's batch dims too).

    Keyword Args:
        del_keys: remove the stacked entries (and the sub-tensordicts they leave empty); default True.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Stack(in_keys=["a", "b"], out_key="ab")
        >>> out = t(TensorDict(a=torch.zeros(3), b=torch.ones(3)))
        >>> out["ab"].shape, sorted(out.keys())
        (torch.Size([3, 2]), ['ab'])
    """

    invertible = True

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_key: NestedKey,
        in_key_inv: NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        dim: int = -1,
        allow_positive_dim: bool = False,
        *,
        del_keys: bool = True,
    ) -> None:
        if dim >= 0 and not allow_positive_dim:
            raise ValueError(
                f"Stack: dim={dim} must be negative (envs may have different batch sizes); "
                "pass allow_positive_dim=True for a positive dim"
            )
        if (in_key_inv is None) != (out_keys_inv is None):
            raise ValueError("Stack: in_key_inv and out_keys_inv must be given together")
        super().__init__(
            in_keys=in_keys,
            out_keys=[out_key],
            in_keys_inv=None if in_key_inv is None else [in_key_inv],
            out_keys_inv=out_keys_inv,
        )
        if self.out_keys[0] in self.in_keys:
            raise ValueError(f"Stack: out_key {out_key!r} cannot be one of the in_keys {self.in_keys}")
        parents = {tuple(k[:i]) for k in self.in_keys if isinstance(k, tuple) for i in range(1, len(k))}
        self._parents = sorted(parents, key=len, reverse=True)
        self.dim = dim
        self._del_keys = del_keys

    def _drop_inputs(self, data: Any) -> None:
        for key in self.in_keys:
            if key in data.keys(True, True):
                del data[key]
        for parent in self._parents:
            sub = data.get(parent, None)
            if sub is not None and len(sub.keys()) == 0:
                del data[parent]

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = []
        for key in self.in_keys:
            value = next_tensordict.get(key, None)
            if value is None:
                self._missing(key, next_tensordict)
                continue
            values.append(value)
        if not values:
            return next_tensordict
        next_tensordict.set(self.out_keys[0], torch.stack(values, dim=self.dim))
        if self._del_keys:
            self._drop_inputs(next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        tolerance = self._missing_tolerance
        self._missing_tolerance = True
        try:
            return self._call(tensordict_reset)
        finally:
            self._missing_tolerance = tolerance

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.in_keys_inv:
            return tensordict
        stacked = tensordict.get(self.in_keys_inv[0], None)
        if stacked is None:
            return tensordict
        values = stacked.unbind(self.dim)
        if len(values) != len(self.out_keys_inv):
            raise ValueError(
                f"Stack.inv: {self.in_keys_inv[0]!r} has {len(values)} slices along dim {self.dim}, "
                f"expected {len(self.out_keys_inv)} (one per out_keys_inv)"
            )
        for key, value in zip(self.out_keys_inv, values):
            tensordict.set(key, value)
        return tensordict.exclude(self.in_keys_inv[0])

    def _stack_spec(self, spec: Any) -> Any:
        if not isinstance(spec, Composite):
            raise TypeError(f"Stack transforms Composite specs only, got {type(spec).__name__}")
        present = set(spec.keys(True, True))
        keys = [k for k in self.in_keys if k in present]
        if not keys:
            return spec
        spec[self.out_keys[0]] = torch.stack([spec[k] for k in keys], dim=self.dim)
        if self._del_keys:
            self._drop_inputs(spec)
        return spec

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return self._stack_spec(observation_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return self._stack_spec(reward_spec)

    def transform_done_spec(self, done_spec: Any) -> Any:
        return self._stack_spec(done_spec)

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        for part in ("full_state_spec", "full_action_spec"):
            if part in input_spec.keys():
                input_spec[part] = self._stack_spec(input_spec[part])
        return input_spec

    def __repr__(self) -> str:
        return f"Stack(in_keys={self.in_keys}, out_key={self.out_keys[0]!r}, dim={self.dim})"


class ExpandAs(Transform):
    """Expands ``in_key`` to the shape of ``ref_key`` (trailing singleton dims added first), into ``out_key``.

    Typical use: a per-env ``done`` of shape ``(*batch, 1)`` expanded to a per-agent reward's shape.

    Args:
        in_key: the entry expanded.
        ref_key: the entry whose shape is the target.
        out_key: where the result goes (default: ``in_key``, in place).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ExpandAs("done", ref_key="reward")
        >>> t(TensorDict(done=torch.tensor([True]), reward=torch.zeros(1, 3)))["done"].shape
        torch.Size([1, 3])
    """

    def __init__(self, in_key: NestedKey, ref_key: NestedKey, out_key: NestedKey | None = None) -> None:
        out_key = in_key if out_key is None else out_key
        super().__init__(in_keys=[in_key], out_keys=[out_key])
        self.in_key, self.ref_key, self.out_key = (
            unravel_key(in_key),
            unravel_key(ref_key),
            unravel_key(out_key),
        )

    def _required_keys(self) -> list[NestedKey]:
        return [self.in_key, self.ref_key]

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        ref = next_tensordict.get(self.ref_key, None)
        value = next_tensordict.get(self.in_key, None)
        if ref is None or value is None:
            self._missing(self.ref_key if ref is None else self.in_key, next_tensordict)
            return next_tensordict
        next_tensordict.set(self.out_key, expand_as_right(value, ref))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        value = tensordict_reset.get(self.in_key, None)
        if value is None:
            return tensordict_reset
        ref = tensordict_reset.get(self.ref_key, None)
        if ref is None:
            # A reset output usually lacks the reference (a reward): expand to its declared shape.
            found = self._find(self.parent.output_spec, self.ref_key) if self.parent is not None else None
            shape = None if found is None else found[1].shape
            tensordict_reset.set(
                self.out_key,
                value
                if shape is None
                else value.reshape(*value.shape, *(1,) * (len(shape) - value.ndim)).expand(shape),
            )
            return tensordict_reset
        tensordict_reset.set(self.out_key, expand_as_right(value, ref))
        return tensordict_reset

    @staticmethod
    def _find(output_spec: Any, key: NestedKey) -> tuple[str, Any] | None:
        for part in ("full_observation_spec", "full_reward_spec", "full_done_spec"):
            if part in output_spec.keys() and key in output_spec[part].keys(True, True):
                return part, output_spec[part][key]
        return None

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        ref, found = self._find(output_spec, self.ref_key), self._find(output_spec, self.in_key)
        if ref is None or found is None:
            missing = self.ref_key if ref is None else self.in_key
            raise KeyError(f"ExpandAs: {missing!r} is not in the env's observation, reward or done specs")
        part, leaf = found
        # A done entry renamed to something else is an observation, not a done flag.
        target = "full_observation_spec" if part == "full_done_spec" and self.out_key != self.in_key else part
        while len(leaf.shape) < len(ref[1].shape):
            leaf = leaf.unsqueeze(-1)
        output_spec[target][self.out_key] = leaf.expand(ref[1].shape)
        return output_spec

    def __repr__(self) -> str:
        return f"ExpandAs(in_key={self.in_key!r}, ref_key={self.ref_key!r}, out_key={self.out_key!r})"
