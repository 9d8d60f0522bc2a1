"""Compact storage layouts for TED (TorchRL Episode Data) trajectories, used by the storage checkpointers.

A TED transition stores each observation twice: once at the root (``obs_t``) and once under ``"next"``
(``obs_{t+1}``). Along a trajectory ``obs_{t+1}`` is the next row's ``obs``, so the compact layout keeps
each trajectory's ``L`` root values followed by its one final ``("next", obs)``: ``N + n_traj`` rows
instead of ``2 N``. Done and reward entries (which only exist under ``"next"`` in a TED step) are kept
once, under their root name. The rows are written in chronological order (a full ring buffer is rolled
so its oldest row comes first); ``shift``, ``is_full`` and ``_storage_shape`` record how to undo it.

:class:`TED2Flat` / :class:`Flat2TED` convert to and from the flat layout; :class:`TED2Nested` /
:class:`Nested2TED` hold one row per trajectory (jagged nested tensors); :class:`H5Split` /
:class:`H5Combine` lay a nested layout out as one group per trajectory (``traj_0``, ``traj_1``, ...),
the structure :class:`~tdrl.data.replay_buffers.H5StorageCheckpointer` writes to an HDF5 file.

Only one-dimensional storages are supported: a ``[time, env]`` storage raises a ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase, unravel_key

__all__ = ["DEFAULT_DONE_KEYS", "Flat2TED", "H5Combine", "H5Split", "Nested2TED", "TED2Flat", "TED2Nested"]

DEFAULT_DONE_KEYS: tuple[NestedKey, ...] = ("done", "truncated", "terminated")
"""The done entries of a TED step (``("next", key)`` for each)."""

_META = ("shift", "is_full", "_storage_shape")


def _key_set(keys: Iterable[NestedKey]) -> set:
    return {unravel_key(key) for key in keys}


def _segments(done: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Compact rows of each step's root value and of its ``next`` value, for trajectory ends ``done``."""
    steps = torch.arange(done.numel())
    root = steps + torch.nn.functional.pad(done, [1, 0])[:-1].long().cumsum(0)
    return root, root + 1


class TED2Flat:
    """Converts a TED storage content (``[N]`` TensorDict) into the flat compact layout (see the module doc).

    ``shift`` (rows written so far modulo capacity, i.e. one past the last written row) and ``is_full``
    are set by the checkpointer before the call.

    Args:
        done_key: the entry that ends trajectories. Defaults to ``("next", "done")``.
        shift_key: where the shift is recorded. Defaults to ``"shift"``.
        is_full_key: where ``is_full`` is recorded. Defaults to ``"is_full"``.
        done_keys: done entries kept once, under their root name. Defaults to :data:`DEFAULT_DONE_KEYS`.
        reward_keys: reward entries kept once. Defaults to ``("reward",)``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> done = torch.tensor([False, True, False, True]).unsqueeze(-1)
        >>> td = TensorDict({"obs": torch.arange(4.0), ("next", "obs"): torch.arange(1.0, 5.0),
        ...                  ("next", "done"): done, ("next", "reward"): torch.ones(4, 1)}, [4])
        >>> to_flat = TED2Flat()
        >>> to_flat.shift, to_flat.is_full = 4, True
        >>> flat = to_flat(td)
        >>> flat["obs"].tolist()  # two trajectories of 2 steps: 2 + 1 rows each
        [0.0, 1.0, 2.0, 2.0, 3.0, 4.0]
        >>> torch.equal(Flat2TED()(flat)["next", "obs"], td["next", "obs"])
        True
    """

    shift: int | None = None
    is_full: bool | None = None

    def __init__(
        self,
        done_key: NestedKey = ("next", "done"),
        shift_key: NestedKey = "shift",
        is_full_key: NestedKey = "is_full",
        done_keys: Iterable[NestedKey] = DEFAULT_DONE_KEYS,
        reward_keys: Iterable[NestedKey] = ("reward",),
    ) -> None:
        self.done_key = done_key
        self.shift_key = shift_key
        self.is_full_key = is_full_key
        self.done_keys = _key_set(done_keys)
        self.reward_keys = _key_set(reward_keys)

    def __call__(self, data: TensorDictBase, path: Any = None) -> TensorDictBase:
        if data.ndim != 1:
            raise ValueError(
                f"{type(self).__name__} supports one-dimensional storages, got batch size {data.batch_size}."
            )
        n = data.shape[0]
        shift = n if self.shift is None else int(self.shift)
        full = bool(self.is_full)
        if full and shift % n:
            data = data.roll(-(shift % n), dims=0)  # oldest row first
        elif not full:
            data = data[:shift]
        done = data.get(self.done_key).reshape(data.shape[0], -1).any(-1).clone()
        if done.numel():
            done[-1] = True  # the newest row ends its (possibly unfinished) trajectory
        root, nxt = _segments(done)
        rows = data.shape[0] + int(done.sum())
        kept_once = self.done_keys | self.reward_keys
        next_td = data.get("next")
        out = TensorDict()
        for key in next_td.keys(True, True):
            value = next_td.get(key)
            if key in kept_once:
                out.set(key, value.clone())
                continue
            compact = value.new_zeros((rows, *value.shape[1:]))
            compact[nxt] = value
            if key in data.keys(True, True):
                compact[root] = data.get(key)
            out.set(key, compact)
        for key in data.exclude("next").keys(True, True):
            if key not in out.keys(True, True) and key not in kept_once:
                out.set(key, data.get(key).clone())
        out.set_non_tensor(self.is_full_key, full)
        out.set_non_tensor(self.shift_key, shift)
        out.set_non_tensor("_storage_shape", (n,))
        return out


class Flat2TED:
    """Rebuilds TED rows from the flat compact layout of :class:`TED2Flat` (the storage's physical order).

    Args:
        done_key: the compact entry ending trajectories. Defaults to ``"done"``.
        shift_key: where the shift was recorded. Defaults to ``"shift"``.
        is_full_key: where ``is_full`` was recorded. Defaults to ``"is_full"``.
        done_keys: done entries, restored under ``"next"`` (and as ``False`` at the root). Defaults to
            :data:`DEFAULT_DONE_KEYS`.
        reward_keys: reward entries, restored under ``"next"``. Defaults to ``("reward",)``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> flat = TensorDict({"obs": torch.tensor([0.0, 1.0, 2.0]), "done": torch.tensor([[False], [True]])})
        >>> _ = flat.set_non_tensor("shift", 2).set_non_tensor("is_full", True)
        >>> ted = Flat2TED()(flat)
        >>> ted["obs"].tolist(), ted["next", "obs"].tolist()
        ([0.0, 1.0], [1.0, 2.0])
    """

    def __init__(
        self,
        done_key: NestedKey = "done",
        shift_key: NestedKey = "shift",
        is_full_key: NestedKey = "is_full",
        done_keys: Iterable[NestedKey] = DEFAULT_DONE_KEYS,
        reward_keys: Iterable[NestedKey] = ("reward",),
    ) -> None:
        self.done_key = done_key
        self.shift_key = shift_key
        self.is_full_key = is_full_key
        self.done_keys = _key_set(done_keys)
        self.reward_keys = _key_set(reward_keys)

    def __call__(self, data: TensorDictBase, out: TensorDictBase | None = None) -> TensorDictBase:
        shift = data.get_non_tensor(self.shift_key, default=None)
        full = bool(data.get_non_tensor(self.is_full_key, default=True))
        done = data.get(self.done_key).reshape(data.get(self.done_key).shape[0], -1).any(-1).clone()
        steps = done.shape[0]
        if steps:
            done[-1] = True
        root, nxt = _segments(done)
        kept_once = self.done_keys | self.reward_keys
        ted = TensorDict(batch_size=[steps])
        for key, value in data.items(True, True):
            if key in _META or unravel_key(key) in (self.shift_key, self.is_full_key):
                continue
            if not isinstance(value, torch.Tensor):
                continue
            if key in kept_once:
                ted.set(("next", *_tuple(key)), value)
                if key != "reward" and key not in self.reward_keys:
                    ted.set(key, torch.zeros_like(value))
            elif value.shape[0] == steps:
                ted.set(key, value)
            else:
                ted.set(key, value[root])
                ted.set(("next", *_tuple(key)), value[nxt])
        if full and shift and steps and shift % steps:
            ted = ted.roll(shift % steps, dims=0)  # back to the storage's physical order
        if out is not None:
            out[:steps].update(ted)
            return out
        return ted


def _tuple(key: NestedKey) -> tuple:
    return (key,) if isinstance(key, str) else tuple(key)


class TED2Nested(TED2Flat):
    """Like :class:`TED2Flat`, with one row per trajectory: every entry becomes a jagged nested tensor.

    Entries kept once (done, reward, actions) have ``L`` steps per trajectory, the compacted observations
    ``L + 1``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> done = torch.tensor([False, True, True]).unsqueeze(-1)
        >>> td = TensorDict({"obs": torch.arange(3.0), ("next", "obs"): torch.arange(1.0, 4.0),
        ...                  ("next", "done"): done}, [3])
        >>> nested = TED2Nested()(td)
        >>> [t.tolist() for t in nested["obs"].unbind()]
        [[0.0, 1.0, 2.0], [2.0, 3.0]]
        >>> torch.equal(Nested2TED()(nested)["obs"], td["obs"])
        True
    """

    def __call__(self, data: TensorDictBase, path: Any = None) -> TensorDictBase:
        flat = super().__call__(data, path)
        done = flat.get("done").reshape(flat.get("done").shape[0], -1).any(-1).clone()
        if done.numel():
            done[-1] = True
        lengths = torch.diff(torch.nn.functional.pad(done.nonzero().squeeze(-1) + 1, [1, 0])).tolist()
        out = TensorDict(batch_size=[len(lengths)])
        for key, value in flat.items(True, True):
            if key in _META or not isinstance(value, torch.Tensor):
                continue
            sizes = lengths if value.shape[0] == done.shape[0] else [n + 1 for n in lengths]
            out.set(key, torch.nested.as_nested_tensor(list(value.split(sizes)), layout=torch.jagged))
        for key in _META:
            out.set_non_tensor(key, flat.get_non_tensor(key))
        return out


class Nested2TED(Flat2TED):
    """Rebuilds TED rows from the one-row-per-trajectory layout of :class:`TED2Nested`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.arange(2.0), ("next", "obs"): torch.arange(1.0, 3.0),
        ...                  ("next", "done"): torch.ones(2, 1, dtype=torch.bool)}, [2])
        >>> Nested2TED()(TED2Nested()(td))["next", "obs"].tolist()
        [1.0, 2.0]
    """

    def __call__(self, data: TensorDictBase, out: TensorDictBase | None = None) -> TensorDictBase:
        flat = TensorDict()
        for key, value in data.items(True, True):
            if key in _META or not isinstance(value, torch.Tensor):
                continue
            flat.set(key, torch.cat(list(value.unbind())) if value.is_nested else value)
        for key in _META:
            flat.set_non_tensor(key, data.get_non_tensor(key, default=None))
        return super().__call__(flat, out)


class H5Split(TED2Flat):
    """Splits a :class:`TED2Nested` layout into one sub-TensorDict per trajectory (``traj_00``, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.arange(3.0), ("next", "obs"): torch.arange(1.0, 4.0),
        ...                  ("next", "done"): torch.tensor([[True], [False], [True]])}, [3])
        >>> split = H5Split()(TED2Nested()(td))
        >>> sorted(k for k in split.keys() if k.startswith("traj")), split["traj_1", "obs"].tolist()
        (['traj_0', 'traj_1'], [1.0, 2.0, 3.0])
    """

    def __call__(self, data: TensorDictBase, path: Any = None) -> TensorDictBase:
        n = data.shape[0]
        width = max(1, math.ceil(math.log10(n))) if n > 1 else 1
        out = TensorDict()
        for i in range(n):
            traj = TensorDict()
            for key, value in data.items(True, True):
                if key in _META or not isinstance(value, torch.Tensor):
                    continue
                traj.set(key, value.unbind()[i] if value.is_nested else value[i])
            out.set(f"traj_{str(i).zfill(width)}", traj)
        for key in _META:
            out.set_non_tensor(key, data.get_non_tensor(key, default=None))
        return out


class H5Combine:
    """Joins the per-trajectory groups of :class:`H5Split` back into a :class:`TED2Nested` layout.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.arange(3.0), ("next", "obs"): torch.arange(1.0, 4.0),
        ...                  ("next", "done"): torch.tensor([[True], [False], [True]])}, [3])
        >>> back = Nested2TED()(H5Combine()(H5Split()(TED2Nested()(td))))
        >>> torch.equal(back["next", "obs"], td["next", "obs"])
        True
    """

    def __call__(self, data: TensorDictBase, out: TensorDictBase | None = None) -> TensorDictBase:
        names = sorted(k for k in data.keys() if isinstance(k, str) and k.startswith("traj"))
        trajs = [data.get(name) for name in names]
        result = TensorDict(batch_size=[len(trajs)])
        if trajs:
            for key in trajs[0].keys(True, True):
                if key in _META:
                    continue
                values = [torch.as_tensor(t.get(key)) for t in trajs]
                result.set(key, torch.nested.as_nested_tensor(values, layout=torch.jagged))
        for key in _META:
            value = data.get_non_tensor(key, default=None) if key in data.keys() else None
            result.set_non_tensor(key, value)
        return result
