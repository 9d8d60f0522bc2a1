"""Environment utilities: done aggregation, reset merging, specs from data, exploration-type aliases.

``ExplorationType``, ``set_exploration_type`` and ``exploration_type`` are tensordict's
``InteractionType``, ``set_interaction_type`` and ``interaction_type`` (TorchRL aliases them the same way).
``check_env_specs`` validates an env against its specs with one short rollout.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase, is_tensor_collection
from tensordict.nn import InteractionType as ExplorationType
from tensordict.nn import interaction_type as exploration_type
from tensordict.nn import set_interaction_type as set_exploration_type
from tensordict.utils import NestedKey

from tdrl.data import Composite, NonTensor, TensorSpec, Unbounded
from tdrl.envs.marl import MarlGroupMapType, check_marl_grouping
from tdrl.envs.step_mdp import step_mdp

__all__ = [
    "ExplorationType",
    "MarlGroupMapType",
    "check_env_specs",
    "check_marl_grouping",
    "complete_done",
    "exploration_type",
    "make_composite_from_td",
    "set_exploration_type",
    "step_mdp",
    "terminated_or_truncated",
    "update_during_reset",
]

_DONE_NAMES = ("done", "terminated", "truncated")


def _is_non_tensor(value: Any) -> bool:
    return isinstance(value, (NonTensorData, NonTensorStack))


def terminated_or_truncated(
    data: TensorDictBase,
    full_done_spec: TensorSpec | None = None,
    key: NestedKey | None = "_reset",
    write_full_false: bool = False,
) -> bool:
    """Aggregates the done signals of every (sub-)tensordict into one ``key`` entry per level.

    At each level holding done leaves (``full_done_spec``'s leaves, or ``done``/``terminated``/``truncated``
    when no spec is given), the OR of those leaves is written under ``key`` (skipped when no signal is set,
    unless ``write_full_false``). A level with leaves of its own does not report its sub-levels in the
    return value (they still get their ``key`` entry), as in TorchRL.

    Args:
        data: a tensordict without ``"next"`` (e.g. ``td["next"]``); modified in place.
        full_done_spec: where to look for done leaves; missing leaves count as False.
        key: name of the aggregated entry, or ``None`` to only compute the result.
        write_full_false: write the entries even when no done signal is True.

    Returns:
        Whether any done signal was True.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"done": torch.tensor([[False], [True]]), "truncated": torch.zeros(2, 1, dtype=torch.bool)}, [2])
        >>> terminated_or_truncated(data)
        True
        >>> data["_reset"].squeeze(-1)
        tensor([False,  True])
    """
    written: list[tuple[str, ...]] = []
    any_done = _aggregate(data, cast("Composite | None", full_done_spec), key, (), written)
    if not any_done and not write_full_false and written:
        data.exclude(*written, inplace=True)
    return bool(any_done)


def _aggregate(
    data: TensorDictBase, spec: Composite | None, key: NestedKey | None, path: tuple, written: list
) -> bool:
    aggregate: Any = None
    sub_levels: dict[NestedKey, Any] = {}
    if spec is None:
        for name, item in data.items():
            if name in _DONE_NAMES and not is_tensor_collection(item):
                aggregate = item if aggregate is None else aggregate | item
            elif is_tensor_collection(item) and not _is_non_tensor(item):
                sub_levels[name] = (item, None)
    else:
        for spec_key, spec_item in spec.items():
            if isinstance(spec_item, Composite):
                sub_levels[spec_key] = (data.get(spec_key), spec_item)
            else:
                value = data.get(spec_key, None)
                if value is None:
                    value = torch.zeros((*data.shape, 1), dtype=torch.bool, device=data.device)
                aggregate = value if aggregate is None else aggregate | value
    any_done = False
    for level, (sub_data, sub_spec) in sub_levels.items():
        sub_done = _aggregate(sub_data, sub_spec, key, (*path, level), written)
        if aggregate is None:
            any_done = any_done or sub_done
    if aggregate is not None:
        if key is not None:
            data.set(key, aggregate)
            written.append((*path, *((key,) if isinstance(key, str) else key)))
        any_done = any_done or bool(aggregate.any())
    return any_done


def update_during_reset(
    tensordict_reset: TensorDictBase, tensordict: TensorDictBase, reset_keys: list[NestedKey]
) -> TensorDictBase:
    """Writes the output of ``_reset`` into ``tensordict`` where its ``"_reset"`` masks are True.

    Without a mask (or with an all-True one) the reset data replace the entries. With a partial mask,
    each entry becomes ``where(mask, reset_value, old_value)``; entries the input lacks are taken from the
    reset data. New tensors are written: the input's tensors are never modified in place (they are often
    shared with the previous step's ``"next"`` entry). The ``"_reset"`` entries are removed.

    Args:
        tensordict_reset: the output of ``env._reset``.
        tensordict: the tensordict given to ``env.reset`` (updated and returned).
        reset_keys: the env's ``reset_keys``.

    Returns:
        ``tensordict``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.zeros(2, 1), "_reset": torch.tensor([[True], [False]])}, [2])
        >>> out = update_during_reset(TensorDict({"obs": torch.ones(2, 1)}, [2]), td, ["_reset"])
        >>> out["obs"].squeeze(-1)
        tensor([1., 0.])
    """
    done_roots: list[tuple] = []
    for reset_key in reset_keys or ["_reset"]:
        path = (reset_key,) if isinstance(reset_key, str) else tuple(reset_key)
        root = path[:-1]
        reset = cast("torch.Tensor | None", tensordict.pop(reset_key, None))
        tensordict_reset.pop(reset_key, None)
        if any(root[: len(r)] == r for r in done_roots):
            continue
        done_roots.append(root)
        node = cast(TensorDictBase, tensordict.get(root) if root else tensordict)
        node_reset = cast("TensorDictBase | None", tensordict_reset.get(root, None) if root else tensordict_reset)
        if node_reset is None:
            continue
        if reset is None or bool(reset.all()):
            node.update(node_reset)
            continue
        if reset.ndim > node.ndim:
            reset = reset.flatten(node.ndim, reset.ndim - 1).any(-1)
        _masked_update(node, node_reset, reset.reshape(node.shape))
    return tensordict


def _masked_update(node: TensorDictBase, node_reset: TensorDictBase, mask: torch.Tensor) -> None:
    new: Any  # a tensor or a non-tensor leaf
    for key, new in node_reset.items(include_nested=True, leaves_only=True, is_leaf=_leaf):
        old = node.get(key, None)
        if _is_non_tensor(new):
            node.set(key, new if old is None else old)
            continue
        m = mask.reshape(*mask.shape, *((1,) * (new.ndim - mask.ndim)))
        if old is None or old.shape != new.shape:
            old = torch.zeros_like(new)
        node.set(key, torch.where(m, new, old.to(new.dtype)))


def _leaf(cls: type) -> bool:
    return not issubclass(cls, TensorDictBase) or issubclass(cls, (NonTensorData, NonTensorStack))


def make_composite_from_td(
    data: TensorDictBase, *, unsqueeze_null_shapes: bool = True, dynamic_shape: bool = False
) -> Composite:
    """Builds a ``Composite`` of ``Unbounded`` specs (``NonTensor`` for non-tensor data) shaped like ``data``.

    Args:
        data: the tensordict to describe.
        unsqueeze_null_shapes: give scalar entries the shape ``(1,)``.
        dynamic_shape: mark the last dim of every entry as dynamic (``-1``).

    Returns:
        A ``Composite`` with ``data``'s batch size.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> spec = make_composite_from_td(TensorDict({"obs": torch.zeros(3), "x": torch.zeros(())}, []))
        >>> spec["obs"].shape, spec["x"].shape
        (torch.Size([3]), torch.Size([1]))
    """
    nb = len(data.batch_size)

    def shape_of(shape: torch.Size) -> torch.Size:
        if not shape and unsqueeze_null_shapes:
            return torch.Size([1])
        if dynamic_shape and len(shape) > nb:  # batch dims stay fixed
            return torch.Size([*shape[:-1], -1])
        return shape

    entries: dict[str, TensorSpec] = {}
    for key, value in data.items():
        if _is_non_tensor(value):
            entries[key] = NonTensor(shape=value.shape, device=value.device)
        elif is_tensor_collection(value):
            entries[key] = make_composite_from_td(
                cast(TensorDictBase, value), unsqueeze_null_shapes=unsqueeze_null_shapes, dynamic_shape=dynamic_shape
            )
        else:
            entries[key] = Unbounded(shape=shape_of(value.shape), dtype=value.dtype, device=value.device)
    return Composite(entries, shape=data.shape)


def complete_done(done_spec: Composite, data: TensorDictBase) -> TensorDictBase:
    """Fills the done leaves ``data`` lacks, in place, following ``done_spec``.

    ``terminated`` is copied from ``done``, ``done`` is ``terminated | truncated``, other leaves are zeros;
    present leaves are reshaped to the spec's shape.

    Args:
        done_spec: the env's ``full_done_spec`` (or a nested part of it).
        data: a next-level tensordict (the output of ``_step`` or ``_reset``).

    Returns:
        ``data``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Categorical, Composite
        >>> spec = Composite(done=Categorical(2, (1,), dtype=torch.bool), terminated=Categorical(2, (1,), dtype=torch.bool))
        >>> sorted(complete_done(spec, TensorDict({"done": torch.ones(1, dtype=torch.bool)})).keys())
        ['done', 'terminated']
    """
    lead = data.batch_size[: len(data.batch_size) - done_spec.ndim] if done_spec.ndim else data.batch_size
    present: dict[NestedKey, torch.Tensor] = {}
    for key, item in done_spec.items():
        value = data.get(key, None)
        if isinstance(item, Composite):
            if value is not None:
                complete_done(item, value)
            continue
        if value is not None and item is not None:
            shape = (*lead, *item.shape)
            if value.shape != shape:
                value = value.reshape(shape)
                data.set(key, value)
            present[key] = value
    for key, item in done_spec.items():
        if isinstance(item, Composite) or key in present:
            continue
        if key == "terminated" and "done" in present:
            if "truncated" in present:
                raise RuntimeError("Cannot infer 'terminated' when only 'done' and 'truncated' are given.")
            value = present["done"]
        elif key == "done" and "terminated" in present:
            value = present["terminated"]
            if "truncated" in present:
                value = value | present["truncated"]
        elif item is not None:
            value = item.zero(lead)
        else:
            continue
        data.set(key, value)
        present[key] = value
    return data


def _leaf_keys(td: TensorDictBase) -> set[tuple[str, ...]]:
    return {(k,) if isinstance(k, str) else tuple(k) for k in td.keys(True, True, is_leaf=_leaf)}


def _fmt(keys: set[tuple[str, ...]]) -> str:
    return ", ".join(sorted(repr(k[0] if len(k) == 1 else k) for k in keys)) or "-"


def check_env_specs(
    env: Any,
    return_contiguous: bool | None = True,
    check_dtype: bool = True,
    seed: int | None = None,
    tensordict: TensorDictBase | None = None,
    break_when_any_done: bool | str | None = False,
) -> None:
    """Runs a 3-step rollout and checks that its data match the env's specs (keys, shapes, dtypes).

    The reference data are ``env.fake_tensordict()`` (zeros built from the specs). Every difference is
    listed in one ``AssertionError``: keys the env writes but the specs do not declare (or the reverse),
    and per key the expected vs received shape and dtype.

    Args:
        env: the environment.
        return_contiguous: stack the rollout densely.
        check_dtype: compare dtypes too.
        seed: seed the env (and torch) first.
        tensordict: first input of the rollout (then no reset is done first).
        break_when_any_done: passed to ``rollout``; ``"both"`` checks both settings.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> check_env_specs(PendulumEnv(seed=0))
    """
    if break_when_any_done == "both":
        for flag in (True, False):
            check_env_specs(env, return_contiguous, check_dtype, seed, tensordict, flag)
        return
    if seed is not None:
        torch.manual_seed(seed)
        env.set_seed(seed)
    fake = env.fake_tensordict()
    real = env.rollout(
        3,
        return_contiguous=bool(return_contiguous),
        tensordict=tensordict,
        auto_reset=tensordict is None,
        break_when_any_done=bool(break_when_any_done),
    )
    state_next = {
        ("next", *((k,) if isinstance(k, str) else k)) for k in env.full_state_spec.keys(True, True)
    }
    fake_keys, real_keys = _leaf_keys(fake) - state_next, _leaf_keys(real) - state_next
    problems = []
    if real_keys - fake_keys:
        problems.append(
            f"keys written by the env but not declared in its specs: {_fmt(real_keys - fake_keys)}"
        )
    if fake_keys - real_keys:
        problems.append(
            f"keys declared in the specs but missing from the data: {_fmt(fake_keys - real_keys)}"
        )
    lead = real.batch_size
    for key in sorted(fake_keys & real_keys):
        spec_value, value = fake.get(key), real.get(key)
        if _is_non_tensor(value) or _is_non_tensor(spec_value):
            continue
        name = key[0] if len(key) == 1 else key
        expected_shape = (*lead, *spec_value.shape[len(fake.batch_size) :])
        if tuple(value.shape) != tuple(expected_shape):
            problems.append(
                f"{name!r}: shape {tuple(value.shape)} but the spec gives {tuple(expected_shape)} "
                f"(batch {tuple(lead)} + spec shape {tuple(spec_value.shape[len(fake.batch_size) :])})"
            )
        if check_dtype and value.dtype != spec_value.dtype:
            problems.append(f"{name!r}: dtype {value.dtype} but the spec says {spec_value.dtype}")
    for key in env.reward_keys:
        path = (key,) if isinstance(key, str) else tuple(key)
        if path in real_keys:
            problems.append(f"reward {key!r} found at the root: _reset must not write rewards")
    if problems:
        raise AssertionError(f"check_env_specs({type(env).__name__}) failed:\n- " + "\n- ".join(problems))
