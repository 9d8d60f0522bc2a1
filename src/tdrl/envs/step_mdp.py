"""``step_mdp``: move the ``"next"`` entries of a transition to the root, for the next step.

TorchRL rebuilds the output with one ``get``/``_set_str`` per key and per call. Here the output is built
straight from the tensordicts' internal dicts, with the list of keys to copy computed once per
(key layout, options) signature and cached: a call that sees the same keys as before only does dict
look-ups and one ``TensorDict._new_unsafe`` per (sub-)tensordict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from tensordict import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.envs._fast_td import fast_td

__all__ = ["make_step_mdp", "step_mdp"]

_LEAF_COLLECTIONS = (NonTensorData, NonTensorStack)

# Cache of "plans", keyed by (excluded key paths, keep_other, kept action paths, path, root keys, next keys).
# A plan lists, for one level of nesting, which root keys and which next keys are copied and which keys
# hold sub-tensordicts to recurse into. Bounded so that pathological callers cannot grow it forever.
_PLANS: dict[tuple, tuple] = {}
_MAX_PLANS = 4096


def _as_path(key: NestedKey) -> tuple[str, ...]:
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple) and key and all(isinstance(k, str) for k in key):
        return cast(tuple[str, ...], key)
    if isinstance(key, tuple):  # unusual nesting such as (("a", "b"), "c")
        flat: list[str] = []
        for k in key:
            flat.extend(_as_path(k))
        return tuple(flat)
    raise TypeError(f"step_mdp: keys must be str or tuples of str, got {key!r} ({type(key).__name__})")


def _as_paths(keys: NestedKey | Sequence[NestedKey]) -> tuple[tuple[str, ...], ...]:
    if isinstance(keys, (str, tuple)):
        return (_as_path(keys),)
    return tuple(_as_path(k) for k in keys)


def _is_sub_td(value: Any) -> bool:
    return isinstance(value, TensorDictBase) and not isinstance(value, _LEAF_COLLECTIONS)


def _filtered_out(full: tuple[str, ...], allowed: frozenset | None) -> bool:
    """Whether ``full`` is neither an allowed leaf path nor a prefix of one (``None`` allows everything)."""
    return allowed is not None and not any(full == p[: len(full)] for p in allowed)


def _make_plan(
    root: dict | None,
    nxt: dict | None,
    path: tuple[str, ...],
    excluded: frozenset,
    keep_only: tuple,
) -> tuple:
    """Decides which keys of one nesting level are copied (root first, then next overwrites)."""
    copy_root: list[str] = []
    copy_next: list[str] = []
    nested: list[str] = []
    seen_nested: set[str] = set()
    for source, dest in ((root, copy_root), (nxt, copy_next)):
        if source is None:
            continue
        for key, value in source.items():
            full = (*path, key)
            if full in excluded:
                continue
            if _filtered_out(full, keep_only[0] if source is root else keep_only[1]):
                continue
            if _is_sub_td(value):
                if key not in seen_nested:
                    seen_nested.add(key)
                    nested.append(key)
                continue
            dest.append(key)
    # A key that is a tensor in next but a sub-tensordict at the root (or the reverse) keeps next's value.
    copy_root = [k for k in copy_root if k not in seen_nested or (nxt is not None and k not in nxt)]
    return tuple(copy_root), tuple(copy_next), tuple(nested)


def _merge(
    root: TensorDictBase | None,
    nxt: TensorDictBase | None,
    path: tuple[str, ...],
    excluded: frozenset,
    keep_only: tuple,
) -> TensorDict | None:
    """Builds the output tensordict for one nesting level; returns None when it would be empty."""
    # The storage dicts directly: step_mdp runs once per env step, and TensorDict.get parses each key.
    # Any: the plan lists keys only of the storages that are present.
    rd: Any = None if root is None else root._tensordict
    nd: Any = None if nxt is None else nxt._tensordict
    sig = (excluded, keep_only, path, None if rd is None else tuple(rd), None if nd is None else tuple(nd))
    plan = _PLANS.get(sig)
    if plan is None:
        plan = _make_plan(rd, nd, path, excluded, keep_only)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[sig] = plan
    copy_root, copy_next, nested = plan
    out: dict[str, Any] = {}
    for key in copy_root:
        out[key] = rd[key]
    for key in copy_next:
        out[key] = nd[key]
    for key in nested:
        sub_root = None if rd is None else rd.get(key)
        sub_next = None if nd is None else nd.get(key)
        if sub_root is not None and not _is_sub_td(sub_root):
            sub_root = None
        if sub_next is not None and not _is_sub_td(sub_next):
            sub_next = None
        sub = _merge_any(sub_root, sub_next, (*path, key), excluded, keep_only)
        if sub is not None:
            out[key] = sub
    if not out:
        return None
    template = nxt if nxt is not None else root
    assert template is not None  # out is empty (returned above) when both are None
    return fast_td(out, template._batch_size, template._device, _names(template))


def _names(td: TensorDictBase) -> list | None:
    names = getattr(td, "_td_dim_names", None)
    if names is None or all(n is None for n in names):
        return None
    return list(names)


def _merge_any(
    root: TensorDictBase | None,
    nxt: TensorDictBase | None,
    path: tuple[str, ...],
    excluded: frozenset,
    keep_only: tuple,
) -> TensorDictBase | None:
    if (root is None or type(root) is TensorDict) and (nxt is None or type(nxt) is TensorDict):
        return _merge(root, nxt, path, excluded, keep_only)
    return _merge_generic(root, nxt, path, excluded, keep_only)


def _merge_generic(
    root: TensorDictBase | None,
    nxt: TensorDictBase | None,
    path: tuple[str, ...],
    excluded: frozenset,
    keep_only: tuple,
) -> TensorDictBase | None:
    """Slow path for lazy stacks, tensorclasses and other TensorDictBase subclasses."""
    if isinstance(root, LazyStackedTensorDict) or isinstance(nxt, LazyStackedTensorDict):
        lazy = cast(LazyStackedTensorDict, root if isinstance(root, LazyStackedTensorDict) else nxt)
        roots = root.unbind(lazy.stack_dim) if root is not None else [None] * lazy.batch_size[lazy.stack_dim]
        nexts = nxt.unbind(lazy.stack_dim) if nxt is not None else [None] * lazy.batch_size[lazy.stack_dim]
        parts = [_merge_generic(r, n, path, excluded, keep_only) for r, n in zip(roots, nexts)]
        if any(p is None for p in parts):
            return None
        return LazyStackedTensorDict.lazy_stack(cast(list[TensorDictBase], parts), lazy.stack_dim)
    template = nxt if nxt is not None else root
    assert template is not None, "step_mdp: merging two missing tensordicts"
    out = template.empty()
    non_empty = False
    for source in (root, nxt):
        if source is None:
            continue
        for key in source.keys():
            full = (*path, key)
            if full in excluded:
                continue
            if _filtered_out(full, keep_only[0] if source is root else keep_only[1]):
                continue
            value = source.get(key)
            if _is_sub_td(value):
                sub = _merge_generic(
                    value if source is root else _sub_or_none(root, key),
                    value if source is nxt else _sub_or_none(nxt, key),
                    full,
                    excluded,
                    keep_only,
                )
                if sub is not None:
                    out.set(key, sub)
                    non_empty = True
            else:
                out.set(key, value)
                non_empty = True
    return out if non_empty else None


def _sub_or_none(td: TensorDictBase | None, key: str) -> TensorDictBase | None:
    if td is None:
        return None
    value = td.get(key, None)
    return value if _is_sub_td(value) else None


# (root filter, next filter) of step_mdp's merge: None keeps every entry of that side.
_KeepOnly = tuple[frozenset | None, frozenset | None]


def _options(
    keep_other: bool,
    exclude_reward: bool,
    exclude_done: bool,
    exclude_action: bool,
    reward_keys: Any,
    done_keys: Any,
    action_keys: Any,
) -> tuple[frozenset, _KeepOnly]:
    # "next" is a root key like any other for the merge: excluding its path keeps it out of the output.
    excluded: set[tuple[str, ...]] = {("next",)}
    action_paths = _as_paths(action_keys)
    if exclude_reward:
        excluded.update(_as_paths(reward_keys))
    if exclude_done:
        excluded.update(_as_paths(done_keys))
    if exclude_action:
        excluded.update(action_paths)
    if keep_other:
        root_only = None
    else:
        # Without keep_other only the actions survive from the root (when they are not excluded).
        root_only = frozenset() if exclude_action else frozenset(action_paths)
    # (root filter, next filter): step_mdp itself takes everything from "next".
    return frozenset(excluded), (root_only, None)


_OPTIONS: dict[tuple, tuple[frozenset, _KeepOnly]] = {}


def step_mdp(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None = None,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: NestedKey | list[NestedKey] = "reward",
    done_keys: NestedKey | list[NestedKey] = "done",
    action_keys: NestedKey | list[NestedKey] = "action",
) -> TensorDictBase:
    """Returns the tensordict of the next step: the ``"next"`` entries moved to the root.

    Root entries other than ``"next"`` are kept when ``keep_other`` is set; entries of ``"next"`` then
    overwrite them. Reward, done and action keys (nested keys allowed, one or a list of each) are dropped
    according to the ``exclude_*`` flags. Tensors are not copied: the output shares them with the input.

    Args:
        tensordict: a transition with a ``"next"`` sub-tensordict.
        next_tensordict: if given, it is updated with the result and returned.
        keep_other: keep the root entries that are not in ``"next"``.
        exclude_reward: drop the reward keys.
        exclude_done: drop the done keys.
        exclude_action: drop the action keys (else they are kept from the root).
        reward_keys: reward key(s).
        done_keys: done key(s).
        action_keys: action key(s).

    Returns:
        A new tensordict with the batch size and device of ``tensordict["next"]`` (or ``next_tensordict``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({
        ...     "obs": torch.zeros(2), "action": torch.ones(2), "other": torch.ones(2),
        ...     "next": {"obs": torch.ones(2), "reward": torch.ones(2), "done": torch.zeros(2, dtype=torch.bool)},
        ... }, batch_size=[2])
        >>> sorted(step_mdp(td).keys())
        ['done', 'obs', 'other']
        >>> sorted(step_mdp(td, keep_other=False, exclude_reward=False).keys())
        ['done', 'obs', 'reward']
        >>> step_mdp(td)["obs"]
        tensor([1., 1.])
    """
    opt_key = (
        keep_other,
        exclude_reward,
        exclude_done,
        exclude_action,
        (list, *reward_keys) if type(reward_keys) is list else reward_keys,
        (list, *done_keys) if type(done_keys) is list else done_keys,
        (list, *action_keys) if type(action_keys) is list else action_keys,
    )
    try:
        options = _OPTIONS.get(opt_key)
    except TypeError:  # unhashable key lists: computed, not cached
        options = _options(
            keep_other, exclude_reward, exclude_done, exclude_action, reward_keys, done_keys, action_keys
        )
        return _apply(tensordict, next_tensordict, *options)
    if options is None:
        options = _options(
            keep_other, exclude_reward, exclude_done, exclude_action, reward_keys, done_keys, action_keys
        )
        if len(_OPTIONS) < _MAX_PLANS:
            _OPTIONS[opt_key] = options
    return _apply(tensordict, next_tensordict, *options)


def _apply(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None,
    excluded: frozenset,
    keep_only: tuple,
) -> TensorDictBase:
    nxt = (
        tensordict._tensordict.get("next") if type(tensordict) is TensorDict else tensordict.get("next", None)
    )
    if nxt is None:
        raise KeyError(
            f"step_mdp: the input has no 'next' entry (keys: {sorted(map(str, tensordict.keys()))}); "
            "call it on the output of env.step()"
        )
    if type(tensordict) is TensorDict and type(nxt) is TensorDict:
        out = _merge(tensordict, nxt, (), excluded, keep_only)
    else:
        out = _merge_generic(tensordict, nxt, (), excluded, keep_only)
    if out is None:
        out = nxt.empty()
    if next_tensordict is not None:
        return next_tensordict.update(out)
    return out


def make_step_mdp(
    *,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: NestedKey | Sequence[NestedKey] = "reward",
    done_keys: NestedKey | Sequence[NestedKey] = "done",
    action_keys: NestedKey | Sequence[NestedKey] = "action",
    next_keys: Sequence[NestedKey] | None = None,
) -> Callable[[TensorDictBase], TensorDictBase]:
    """Returns ``step_mdp`` with its options bound once (what environments call on their hot path).

    Args:
        keep_other: see :func:`step_mdp`.
        exclude_reward: see :func:`step_mdp`.
        exclude_done: see :func:`step_mdp`.
        exclude_action: see :func:`step_mdp`.
        reward_keys: see :func:`step_mdp`.
        done_keys: see :func:`step_mdp`.
        action_keys: see :func:`step_mdp`.
        next_keys: if given, only these entries are taken from ``"next"`` (an env passes its observation,
            state and done keys, so that undeclared entries of ``"next"`` do not leak into the next step).

    Returns:
        A function ``f(tensordict) -> next tensordict``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> f = make_step_mdp(exclude_action=False)
        >>> td = TensorDict({"action": torch.ones(()), "next": {"obs": torch.ones(()), "reward": torch.ones(())}})
        >>> sorted(f(td).keys())
        ['action', 'obs']
    """
    excluded, keep_only = _options(
        keep_other,
        exclude_reward,
        exclude_done,
        exclude_action,
        list(reward_keys) if not isinstance(reward_keys, (str, tuple)) else reward_keys,
        list(done_keys) if not isinstance(done_keys, (str, tuple)) else done_keys,
        list(action_keys) if not isinstance(action_keys, (str, tuple)) else action_keys,
    )

    if next_keys is not None:
        keep_only = (keep_only[0], frozenset(_as_path(k) for k in next_keys))

    def bound_step_mdp(tensordict: TensorDictBase) -> TensorDictBase:
        return _apply(tensordict, None, excluded, keep_only)

    return bound_step_mdp
