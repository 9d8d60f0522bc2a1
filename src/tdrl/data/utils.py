"""Spec utilities for lazily stacked specs (heterogeneous envs, multi-agent groups)."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.data.tensor_specs import DEVICE_TYPING, Composite, Stacked, StackedComposite, TensorSpec

__all__ = ["DEVICE_TYPING", "check_no_exclusive_keys", "consolidate_spec", "contains_lazy_spec"]


def _placeholder(examples: list[Any], shape: torch.Size) -> Any:
    """An entry for a member that lacks an exclusive key: the examples' spec with zero-sized extra dims."""
    first = examples[0]
    classes = {type(e).__name__ for e in examples}
    if len(classes) > 1:
        raise ValueError(f"consolidate_spec: one exclusive key holds specs of different classes {sorted(classes)}.")
    if isinstance(first, Composite):  # StackedComposite included
        return Composite(shape=first.shape, device=first.device)
    if isinstance(first, Stacked):
        inner = torch.Size([*shape[: first.stack_dim], *shape[first.stack_dim + 1:]])
        return Stacked(*(_placeholder(list(first._specs), inner) for _ in first._specs), dim=first.stack_dim)
    # Dims where the examples disagree become 0; if they all agree, every dim past the batch dims does.
    dims = [d if all(e.shape[i] == d for e in examples) else 0 for i, d in enumerate(first.shape)]
    if 0 not in dims:
        dims = [d if i < len(shape) else 0 for i, d in enumerate(dims)]
    return first[(0,) * first.ndim].expand(*dims)


def _consolidate_sub_stacks(members: list[Composite], dim: int, recurse_through_stack: bool) -> None:
    # A Composite entry of every member is itself a lazy stack of them: its exclusive keys are filled too.
    for key in list(members[0].keys()):
        values = [m[key] for m in members]
        if all(isinstance(v, Composite) for v in values):
            stacked = consolidate_spec(StackedComposite(*values, dim=dim), True, recurse_through_stack)
            for m, sub in zip(members, stacked._stacked):
                m[key] = sub


def _consolidate_stack(spec: StackedComposite, recurse_through_entries: bool, recurse_through_stack: bool) -> Composite:
    members = [
        consolidate_spec(m, recurse_through_entries, recurse_through_stack) if recurse_through_stack else m.clone()
        for m in spec._stacked
    ]
    shared = set(spec.keys())
    examples: dict[Any, list[Any]] = {}
    for m in members:
        for key in m.keys():
            if key not in shared:
                examples.setdefault(key, []).append(m[key])
    for m in members:
        for key, values in examples.items():
            if key not in m.keys():
                m[key] = _placeholder(values, m.shape)
    if recurse_through_entries:
        _consolidate_sub_stacks(members, spec.dim, recurse_through_stack)
    return StackedComposite(*members, dim=spec.dim)


def consolidate_spec(
    spec: Composite,
    recurse_through_entries: bool = True,
    recurse_through_stack: bool = True,
) -> Any:
    """Gives every member of a lazily stacked Composite the keys of all others, as zero-sized specs.

    A member lacking a key another member has (an *exclusive* key) gets an entry of the same spec
    class whose dims are zero where the members disagree (or past the batch dims if they agree), so
    the stacked members all hold the same keys. Other specs are returned cloned.

    Args:
        spec: the spec to consolidate.
        recurse_through_entries: also consolidate nested Composite entries.
        recurse_through_stack: also consolidate each stacked member first.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> spec = torch.stack([Composite(a=Unbounded(3)), Composite(a=Unbounded(3), b=Unbounded(2))], 0)
        >>> out = consolidate_spec(spec)
        >>> sorted(out.keys()), out[0]["b"].shape, check_no_exclusive_keys(out)
        (['a', 'b'], torch.Size([0]), True)
    """
    if not isinstance(spec, Composite):
        return spec.clone() if isinstance(spec, TensorSpec) else spec
    if isinstance(spec, StackedComposite):
        return _consolidate_stack(spec, recurse_through_entries, recurse_through_stack)
    out = spec.clone()
    if recurse_through_entries:
        for key, value in list(out.items()):
            if isinstance(value, Composite):
                out[key] = consolidate_spec(value, recurse_through_entries, recurse_through_stack)
    return out


def check_no_exclusive_keys(spec: TensorSpec, recurse: bool = True) -> bool:
    """Whether every member of each lazily stacked Composite in ``spec`` holds the same keys.

    Args:
        spec: the spec to check.
        recurse: also check nested entries and stacked members.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> spec = torch.stack([Composite(a=Unbounded(3)), Composite(a=Unbounded(3), b=Unbounded(2))], 0)
        >>> check_no_exclusive_keys(spec), check_no_exclusive_keys(Composite(a=Unbounded(1)))
        (False, True)
    """
    if isinstance(spec, StackedComposite):
        shared = set(spec.keys())
        return all(set(m.keys()) == shared and (not recurse or check_no_exclusive_keys(m)) for m in spec._stacked)
    if isinstance(spec, Composite) and recurse:
        return all(check_no_exclusive_keys(v) for v in spec.values() if v is not None)
    return True


def contains_lazy_spec(spec: TensorSpec) -> bool:
    """Whether ``spec`` is, or holds (at any depth), a lazily stacked spec.

    Args:
        spec: the spec to inspect.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> lazy = torch.stack([Unbounded(2), Unbounded(3)], 0)
        >>> contains_lazy_spec(Composite(a=Composite(b=lazy))), contains_lazy_spec(Composite(a=Unbounded(1)))
        (True, False)
    """
    if isinstance(spec, (Stacked, StackedComposite)):
        return True
    if isinstance(spec, Composite):
        return any(contains_lazy_spec(v) for v in spec.values() if v is not None)
    return False
