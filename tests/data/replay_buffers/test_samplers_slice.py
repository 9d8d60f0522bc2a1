"""Tests of the slice samplers: SliceSampler, SliceSamplerWithoutReplacement, PrioritizedSliceSampler."""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensordict import TensorDict

from tdrl._utils import TDRLWarning
from tdrl.data.replay_buffers import LazyTensorStorage, ListStorage, TensorDictReplayBuffer
from tdrl.data.replay_buffers.samplers import (
    PrioritizedSliceSampler,
    SliceSampler,
    SliceSamplerWithoutReplacement,
    _trajectories,
)


class RingStorage:
    """A ``[capacity, *cols]`` TensorDict ring buffer exposing what slice samplers read."""

    def __init__(self, capacity: int, col_shape: tuple[int, ...] = ()) -> None:
        self.capacity, self.col_shape = capacity, col_shape
        self.ndim = 1 + len(col_shape)
        self.max_size = capacity * math.prod(col_shape)
        self._storage: TensorDict | None = None
        self._len0, self._cursor, self._last_cursor = 0, 0, None

    def write(self, data: TensorDict) -> torch.Tensor:
        if self._storage is None:
            self._storage = data[:1].expand(self.capacity, *data.shape[1:]).clone()
        rows = (self._cursor + torch.arange(data.shape[0])) % self.capacity
        self._storage[rows] = data
        self._cursor = (self._cursor + data.shape[0]) % self.capacity
        self._len0 = min(self.capacity, self._len0 + data.shape[0])
        self._last_cursor = rows
        return rows

    @property
    def shape(self) -> torch.Size:
        return torch.Size([self._len0, *self.col_shape])

    def __len__(self) -> int:
        return self.shape.numel()

    @property
    def _is_full(self) -> bool:
        return self._len0 == self.capacity

    def get(self, index):
        return self._storage[index]


def reference_ends(signal: torch.Tensor, *, kind: str, full: bool, cursor: int | None) -> torch.Tensor:
    """End flags ``[T, cols]`` per TorchRL's ``find_start_stop_traj`` conventions, written as loops."""
    signal = signal.reshape(signal.shape[0], -1)
    length, ncols = signal.shape
    end = torch.zeros(length, ncols, dtype=torch.bool)
    for c in range(ncols):
        for t in range(length):
            if kind == "end":
                end[t, c] = bool(signal[t, c])
            elif t + 1 < length:
                end[t, c] = bool(signal[t, c] != signal[t + 1, c])
            elif full:
                end[t, c] = bool(signal[t, c] != signal[0, c])
        if not full:
            end[length - 1, c] = True
        else:
            if cursor is not None:
                end[cursor, c] = True
            if not end[:, c].any():
                end[length - 1, c] = True
    return end


def reference_boundaries(end: torch.Tensor) -> set[tuple[int, int, int, int]]:
    """``{(column, start, stop, length)}`` from end flags, with wrap-around in each column."""
    length = end.shape[0]
    out = set()
    for c in range(end.shape[1]):
        stops = end[:, c].nonzero().squeeze(-1).tolist()
        for i, stop in enumerate(stops):
            start = (stops[i - 1] + 1) % length
            out.add((c, start, stop, (stop - start) % length + 1))
    return out


def observed_boundaries(bounds) -> set[tuple[int, int, int, int]]:
    cols = bounds.columns().tolist()
    return {
        (c, int(s), int(e), int(n))
        for c, s, e, n in zip(cols, bounds.start[:, 0], bounds.stop[:, 0], bounds.lengths)
    }


def make_episodes(lengths: list[int], n_cols: int = 0, first_id: int = 0) -> TensorDict:
    traj = torch.cat([torch.full((n,), first_id + i) for i, n in enumerate(lengths)])
    done = torch.zeros(traj.shape[0], 1, dtype=torch.bool)
    done[torch.tensor(lengths).cumsum(0) - 1] = True
    td = TensorDict({"traj": traj, "obs": torch.arange(traj.shape[0]), ("next", "done"): done}, [traj.shape[0]])
    if n_cols:
        td = torch.stack([td.clone().apply(lambda x: x) for _ in range(n_cols)], 1)
        td["traj"] = td["traj"] * n_cols + torch.arange(n_cols)
    return td


def make_columns(lengths: list[int], n_cols: int) -> TensorDict:
    """``[T, n_cols]`` episodes: column ``c`` holds ``lengths`` rotated by ``c`` (same total ``T``)."""
    columns = []
    for c in range(n_cols):
        shift = c % len(lengths)
        td = make_episodes(lengths[shift:] + lengths[:shift])
        td["traj"] = td["traj"] * n_cols + c
        columns.append(td)
    return torch.stack(columns, 1)


def assert_slices_valid(
    index: tuple[torch.Tensor, ...], seq: list[int], ends: torch.Tensor, len0: int
) -> None:
    rows_all = index[0]
    cols_all = index[1] if len(index) > 1 else torch.zeros_like(rows_all)
    pos = 0
    for n in seq:
        rows, cols = rows_all[pos : pos + n].tolist(), cols_all[pos : pos + n]
        pos += n
        assert (cols == cols[0]).all(), "a slice spans two columns"
        col = int(cols[0])
        for a, b in zip(rows[:-1], rows[1:]):
            assert b == (a + 1) % len0, f"slice {rows} is not contiguous"
            assert not ends[a, col], f"slice {rows} crosses the trajectory end at row {a}"
    assert pos == rows_all.numel()


def slice_lengths(info: dict, key=("next", "truncated")) -> list[int]:
    last = info[key].reshape(-1).nonzero().squeeze(-1)
    return torch.diff(last, prepend=torch.tensor([-1])).tolist()


# ---- the TorchRL benchmark case -----------------------------------------------------------------
@pytest.mark.parametrize(
    "storage_cls",
    [
        LazyTensorStorage,
        ListStorage,
    ],
)
def test_benchmark_case_slices_within_trajectories(storage_cls):
    size = 10_000 if storage_cls is LazyTensorStorage else 1_000
    rb = TensorDictReplayBuffer(
        storage=storage_cls(size), sampler=SliceSampler(num_slices=8, traj_key="traj"), batch_size=256
    )
    rb.extend(TensorDict({"traj": torch.arange(size) // 123, "obs": torch.arange(size)}, [size]))
    for _ in range(5):
        sample = rb.sample()
        obs = sample["obs"].view(8, 32)
        assert (obs.diff(dim=1) == 1).all()
        assert (sample["traj"].view(8, 32) == sample["traj"].view(8, 32)[:, :1]).all()
        assert sample["next", "truncated"].view(8, 32)[:, -1].all()
        assert sample["next", "truncated"].sum() == 8


# ---- incremental boundaries: property test ------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    capacity=st.integers(3, 40),
    lengths=st.lists(st.integers(1, 15), min_size=1, max_size=12),
    chunks=st.lists(st.integers(1, 25), min_size=1, max_size=8),
    kind=st.sampled_from(["trajectory", "end"]),
    slice_len=st.integers(1, 6),
    n_cols=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_boundaries_and_slices_match_reference(capacity, lengths, chunks, kind, slice_len, n_cols, seed):
    torch.manual_seed(seed)
    data = make_columns(lengths, n_cols) if n_cols else make_episodes(lengths)
    key = "traj" if kind == "trajectory" else ("next", "done")
    kwargs = {"traj_key": "traj"} if kind == "trajectory" else {"end_key": ("next", "done")}
    sampler = SliceSampler(slice_len=slice_len, strict_length=False, **kwargs)
    storage, pos = RingStorage(capacity, (n_cols,) if n_cols else ()), 0
    for chunk in chunks:
        if pos >= data.shape[0]:
            break
        rows = storage.write(data[pos : pos + chunk])
        pos += chunk
        sampler.extend(rows)
        signal = storage._storage.get(key)[: storage._len0]
        cursor = int(rows[-1]) if storage._is_full else None
        ends = reference_ends(signal, kind=kind, full=storage._is_full, cursor=cursor)
        assert observed_boundaries(sampler._boundaries(storage)) == reference_boundaries(ends)
        index, info = sampler.sample(storage, 4 * slice_len)
        assert_slices_valid(index, slice_lengths(info), ends, storage._len0)


def test_boundary_refresh_reads_only_written_rows(monkeypatch):
    read_rows = []
    original = _trajectories.read_entry

    def counting(storage, key, index):
        read_rows.append(index[0].numel())
        return original(storage, key, index)

    monkeypatch.setattr(_trajectories, "read_entry", counting)
    storage = RingStorage(10_000)
    sampler = SliceSampler(num_slices=4, traj_key="traj")
    data = make_episodes([100] * 200)
    sampler.extend(storage.write(data[:8_000]))
    sampler.sample(storage, 64)
    assert sum(read_rows) >= 8_000
    read_rows.clear()
    for _ in range(5):
        sampler.sample(storage, 64)
    assert read_rows == []
    sampler.extend(storage.write(data[8_000:8_050]))
    sampler.sample(storage, 64)
    assert 0 < sum(read_rows) <= 2 * 51 + 2


def test_multidim_storage_slices_stay_in_one_env_and_trajectory():
    storage = RingStorage(40, col_shape=(3,))
    sampler = SliceSampler(slice_len=5, traj_key="traj")
    data = make_episodes([7, 9, 12, 6], n_cols=3)
    sampler.extend(storage.write(data))
    for _ in range(10):
        (rows, cols), info = sampler.sample(storage, 20)
        traj = storage._storage["traj"][rows, cols].view(4, 5)
        assert (traj == traj[:, :1]).all() and (cols.view(4, 5) == cols.view(4, 5)[:, :1]).all()
        assert (rows.view(4, 5).diff(dim=1) == 1).all()
        assert info[("next", "truncated")].view(4, 5)[:, -1].all()


def test_multidim_real_storage_through_buffer():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(120, ndim=2), sampler=SliceSampler(slice_len=4, traj_key="traj"), batch_size=16
    )
    env_major = make_episodes([5, 8, 7], n_cols=3).transpose(0, 1)  # [env, time], as a collector writes
    rb.extend(env_major)
    sample = rb.sample()
    traj = sample["traj"].view(4, 4)
    assert (traj == traj[:, :1]).all() and (sample["obs"].view(4, 4).diff(dim=1) == 1).all()


# ---- options --------------------------------------------------------------------------------------
def test_strict_length_filters_short_trajectories_or_errors():
    storage = RingStorage(100)
    storage.write(make_episodes([3, 10, 2]))
    strict = SliceSampler(slice_len=5, traj_key="traj")
    for _ in range(5):
        (index,), _ = strict.sample(storage, 20)
        assert ((index >= 3) & (index < 13)).all()
    with pytest.raises(RuntimeError, match="sufficient length"):
        SliceSampler(slice_len=11, traj_key="traj").sample(storage, 22)
    loose = SliceSampler(slice_len=5, traj_key="traj", strict_length=False)
    seen = set()
    for _ in range(30):
        (index,), info = loose.sample(storage, 20)
        lengths = slice_lengths(info)
        assert sum(lengths) == index.numel() and max(lengths) <= 5
        seen.update(lengths)
    assert {2, 3, 5} <= seen


def test_slice_end_markers_and_done_terminated_init():
    storage = RingStorage(50)
    data = make_episodes([10, 10])
    data["next", "terminated"] = data["next", "done"].clone()
    data["is_init"] = torch.zeros(20, 1, dtype=torch.bool)
    data["is_init"][[0, 10]] = True
    storage.write(data)
    sampler = SliceSampler(num_slices=4, traj_key="traj")
    (index,), info = sampler.sample(storage, 12)
    truncated = info[("next", "truncated")].view(4, 3)
    assert truncated[:, -1].all() and not truncated[:, :-1].any()
    stored_done = data["next", "done"][index].view(4, 3)
    assert torch.equal(info[("next", "done")].view(4, 3), stored_done | truncated)
    assert torch.equal(info[("next", "terminated")], data["next", "terminated"][index])
    is_init = info["is_init"].view(4, 3)
    assert is_init[:, 0].all() and torch.equal(is_init[:, 1:], data["is_init"][index].view(4, 3)[:, 1:])
    no_marks = SliceSampler(num_slices=4, traj_key="traj", truncated_key=None, init_key=None)
    assert no_marks.sample(storage, 12)[1] == {}


def test_pad_output_pads_short_slices_with_mask():
    storage = RingStorage(30)
    storage.write(make_episodes([2, 12]))
    sampler = SliceSampler(slice_len=4, traj_key="traj", strict_length=False, pad_output=True)
    for _ in range(10):
        (index,), info = sampler.sample(storage, 16)
        mask = info[("collector", "mask")].view(4, 4)
        assert index.numel() == 16
        short = ~mask.all(1)
        assert (mask[short].sum(1) == 2).all() and (index.view(4, 4)[short][:, 2:] == 1).all()


@pytest.mark.parametrize(("span", "side"), [((True, False), "left"), ((False, True), "right"), (2, "both")])
def test_span_cuts_slices_at_trajectory_edges(span, side):
    storage = RingStorage(60)
    storage.write(make_episodes([20, 20, 20]))
    sampler = SliceSampler(slice_len=8, traj_key="traj", span=span)
    lengths_seen = set()
    for _ in range(40):
        (index,), info = sampler.sample(storage, 32)
        lengths = slice_lengths(info)
        lengths_seen.update(lengths)
        pos = 0
        for n in lengths:
            rows = index[pos : pos + n]
            pos += n
            assert (rows // 20 == rows[0] // 20).all() and (rows.diff() == 1).all()
            if n < 8 and side == "left":
                assert rows[0] % 20 == 0
            if n < 8 and side == "right":
                assert rows[-1] % 20 == 19
        assert min(lengths) >= (6 if span == 2 else 1)
    assert min(lengths_seen) < 8


def test_bad_arguments():
    with pytest.raises(TypeError, match="num_slices or slice_len"):
        SliceSampler(traj_key="traj")
    with pytest.raises(TypeError, match="num_slices or slice_len"):
        SliceSampler(num_slices=2, slice_len=3)
    storage = RingStorage(20)
    storage.write(make_episodes([10, 10]))
    with pytest.raises(RuntimeError, match="divisible by the number of slices"):
        SliceSampler(num_slices=3, traj_key="traj").sample(storage, 10)
    with pytest.raises(RuntimeError, match="divisible by the slice length"):
        SliceSampler(slice_len=3, traj_key="traj").sample(storage, 10)
    with pytest.raises(RuntimeError, match="cache_values"):
        SliceSampler(num_slices=2, ends=torch.zeros(5, dtype=torch.bool))
    with pytest.raises(ValueError, match="pad_output"):
        SliceSampler(num_slices=2, pad_output=True)
    with pytest.raises(RuntimeError, match="empty storage"):
        SliceSampler(num_slices=2).sample(RingStorage(5), 4)


def test_key_resolution_and_fallbacks():
    storage = RingStorage(30)
    data = make_episodes([10, 20])
    data["episode"] = data["traj"].clone()
    storage.write(data.exclude("traj"))
    auto = SliceSampler(slice_len=5)
    auto.sample(storage, 10)
    assert auto.traj_key == "episode"
    fallback = SliceSampler(slice_len=5, traj_key="missing")
    (index,), _ = fallback.sample(storage, 10)
    episode = data["episode"][index].view(2, 5)
    assert not fallback._fetch_traj and (episode == episode[:, :1]).all()
    bare = RingStorage(30)
    bare.write(TensorDict({"obs": torch.arange(30)}, [30]))
    with pytest.raises(KeyError, match="traj_key= or end_key="):
        SliceSampler(slice_len=5, traj_key="missing").sample(bare, 10)


def test_end_keys_union_and_static_trajectories():
    storage = RingStorage(20)
    data = make_episodes([20])
    data["next", "truncated"] = torch.zeros(20, 1, dtype=torch.bool)
    data["next", "truncated"][9] = True
    storage.write(data)
    sampler = SliceSampler(slice_len=10, end_keys=[("next", "done"), ("next", "truncated"), ("next", "nope")])
    starts = {int(sampler.sample(storage, 20)[0][0].view(2, 10)[i, 0]) for i in range(2) for _ in range(5)}
    assert starts <= {0, 10}
    static = SliceSampler(slice_len=10, trajectories=torch.arange(20) // 10, cache_values=True)
    (index,), _ = static.sample(storage, 20)
    assert set((index.view(2, 10)[:, 0]).tolist()) <= {0, 10}


def test_cache_values_ignores_unreported_writes_until_extend():
    storage = RingStorage(20)
    storage.write(make_episodes([10, 10]))
    sampler = SliceSampler(slice_len=10, traj_key="traj", cache_values=True)
    sampler.sample(storage, 10)
    storage._storage["traj"][:] = 0
    assert sampler._boundaries(storage).lengths.tolist() == [10, 10]
    sampler.extend(torch.arange(20))
    assert sampler._boundaries(storage).lengths.tolist() == [20]


def test_compile_option_gives_the_same_slices():
    storage = RingStorage(40)
    storage.write(make_episodes([10, 30]))
    eager = SliceSampler(slice_len=4, traj_key="traj", strict_length=False)
    compiled = SliceSampler(slice_len=4, traj_key="traj", strict_length=False, compile={"backend": "eager"})
    torch.manual_seed(0)
    a = eager.sample(storage, 16)
    torch.manual_seed(0)
    b = compiled.sample(storage, 16)
    assert torch.equal(a[0][0], b[0][0])


# ---- without replacement ------------------------------------------------------------------------
@pytest.mark.parametrize("drop_last", [False, True])
def test_slice_without_replacement_visits_each_trajectory_once(drop_last):
    storage = RingStorage(100)
    storage.write(make_episodes([10] * 7))
    sampler = SliceSamplerWithoutReplacement(num_slices=3, traj_key="traj", drop_last=drop_last)
    for _ in range(2):
        seen = []
        while True:
            (index,), _ = sampler.sample(storage, 3 * 4)
            traj = (index // 10).view(-1, 4)
            assert (traj == traj[:, :1]).all()
            seen.extend(traj[:, 0].tolist())
            if sampler.ran_out:
                break
        assert len(seen) == len(set(seen)) == (6 if drop_last else 7)
    sampler.sample(storage, 12)
    clone = SliceSamplerWithoutReplacement(num_slices=3, traj_key="traj", drop_last=not drop_last)
    clone.load_state_dict(sampler.state_dict())
    for _ in range(4):
        torch.manual_seed(7)
        (a,), _ = sampler.sample(storage, 12)
        torch.manual_seed(7)
        (b,), _ = clone.sample(storage, 12)
        assert torch.equal(a, b) and sampler.ran_out == clone.ran_out


def test_slice_without_replacement_dispatch_and_buffer_iteration():
    sampler = SliceSampler(replacement=False, num_slices=2, traj_key="traj")
    assert isinstance(sampler, SliceSamplerWithoutReplacement)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), sampler=sampler, batch_size=8)
    rb.extend(make_episodes([10] * 5))
    batches = list(rb)
    assert len(batches) == 3 and sum(b.numel() for b in batches) == 5 * 4


# ---- prioritized slices -------------------------------------------------------------------------
def test_prioritized_slice_starts_avoid_trajectory_tails_and_follow_priority():
    storage = RingStorage(40)
    storage.write(make_episodes([10, 10, 20]))
    sampler = PrioritizedSliceSampler(40, alpha=1.0, beta=0.5, slice_len=4, traj_key="traj")
    priority = torch.ones(40)
    priority[5] = 30.0  # an eligible start
    priority[8] = 1000.0  # inside the tail of trajectory 0: cannot start a slice
    sampler.update_priority(torch.arange(40), priority)
    starts = []
    for _ in range(50):
        (index,), info = sampler.sample(storage, 16)
        rows = index.view(4, 4)
        assert ((rows // 10).clamp_max(2) == (rows[:, :1] // 10).clamp_max(2)).all()
        starts.extend(rows[:, 0].tolist())
        w = info["priority_weight"].view(4, 4)
        assert (w == w[:, :1]).all()
        q = priority[rows[:, 0]] + 1e-8
        torch.testing.assert_close(w[:, 0], (q / (1 + 1e-8)) ** -0.5)
    starts = torch.tensor(starts)
    eligible = [r for r in range(40) if (r % 10 if r < 20 else r - 20) <= (6 if r < 20 else 16)]
    assert set(starts.tolist()) <= set(eligible)
    p5 = 30.0 / (sum(priority[r].item() for r in eligible))
    assert abs((starts == 5).float().mean().item() - p5) < 0.1


def test_prioritized_slice_refreshes_after_writes_and_strict_false():
    storage = RingStorage(30)
    sampler = PrioritizedSliceSampler(30, alpha=1.0, beta=1.0, slice_len=5, traj_key="traj", strict_length=False)
    sampler.mark_update(storage.write(make_episodes([3, 12])), storage=storage)
    sampler.extend(torch.arange(15))
    for _ in range(10):
        (index,), info = sampler.sample(storage, 20)
        for rows in torch.split(index, slice_lengths(info)):
            assert (rows.diff() == 1).all() and ((rows < 3).all() or (rows >= 3).all())
    rows = storage.write(make_episodes([15], first_id=2))
    sampler.mark_update(rows, storage=storage)
    sampler.extend(rows)
    (index,), _ = sampler.sample(storage, 200)
    assert (index >= 15).any()


def test_prioritized_slice_warns_on_left_span_and_errors_without_starts():
    with pytest.warns(TDRLWarning, match="Left spanning"):
        sampler = PrioritizedSliceSampler(10, alpha=1.0, beta=1.0, slice_len=4, traj_key="traj", span=True)
    assert sampler.span == (0, True)
    storage = RingStorage(10)
    storage.write(make_episodes([2, 2, 6]))
    strict = PrioritizedSliceSampler(10, alpha=1.0, beta=1.0, slice_len=8, traj_key="traj")
    strict.update_priority(torch.arange(10), torch.ones(10))
    with pytest.raises(RuntimeError, match="can start a slice"):
        strict.sample(storage, 16)


def test_sampling_a_large_storage_does_no_full_scan(monkeypatch):
    size = 1_000_000
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(size), sampler=SliceSampler(num_slices=8, traj_key="traj"), batch_size=256
    )
    rb.extend(TensorDict({"traj": torch.arange(size) // 1000}, [size]))
    sampler, storage = rb._sampler, rb._storage
    sampler.sample(storage, 256)
    largest = []
    arange, read = torch.arange, _trajectories.read_entry

    def recording_arange(*args, **kwargs):
        out = arange(*args, **kwargs)
        largest.append(out.numel())
        return out

    def recording_read(storage, key, index):
        largest.append(index[0].numel())
        return read(storage, key, index)

    monkeypatch.setattr(torch, "arange", recording_arange)
    monkeypatch.setattr(_trajectories, "read_entry", recording_read)
    for _ in range(3):
        sampler.sample(storage, 256)
    rb.extend(TensorDict({"traj": torch.full((100,), 10_000)}, [100]))
    sampler.sample(storage, 256)
    assert max(largest) <= 10 * 256


def test_slice_sampler_reads_list_storages():
    storage = ListStorage(50)
    data = make_episodes([6, 9, 5])
    storage.set(list(range(20)), data)
    sampler = SliceSampler(num_slices=3, traj_key="traj")
    sampler.extend(torch.arange(20))
    (index,), info = sampler.sample(storage, 12)
    traj = data["traj"][index].view(3, 4)
    assert (traj == traj[:, :1]).all() and (index.view(3, 4).diff(dim=1) == 1).all()
    assert torch.equal(info[("next", "done")].view(3, 4)[:, -1], torch.ones(3, dtype=torch.bool))


def test_can_sample_counts_windows():
    storage = RingStorage(30)
    assert not SliceSampler(slice_len=4, traj_key="traj").can_sample(storage, 8)
    storage.write(make_episodes([2, 5]))
    assert SliceSampler(slice_len=4, traj_key="traj")._sampleable_count(storage, 8) == 2
    assert SliceSampler(slice_len=4, traj_key="traj", strict_length=False)._sampleable_count(storage, 8) == 3
    assert not SliceSampler(slice_len=6, traj_key="traj").can_sample(storage, 12)


def test_prioritized_slice_multidim_storage():
    storage = RingStorage(10, col_shape=(2,))
    storage.write(make_columns([10], 2))
    sampler = PrioritizedSliceSampler(20, alpha=1.0, beta=1.0, slice_len=3, traj_key="traj")
    priority = torch.zeros(10, 2)
    priority[4, 1] = 1.0  # flat position 9
    sampler.update_priority(torch.stack(torch.meshgrid(torch.arange(10), torch.arange(2), indexing="ij"), -1).view(-1, 2),
                            priority.view(-1), storage=storage)
    (rows, cols), info = sampler.sample(storage, 6)
    assert rows.tolist() == [4, 5, 6, 4, 5, 6] and cols.tolist() == [1] * 6


def test_prioritized_slices_through_a_buffer_and_pickling():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=PrioritizedSliceSampler(100, alpha=1.0, beta=0.5, slice_len=5, traj_key="traj"),
        batch_size=20,
    )
    rb.extend(TensorDict({"traj": torch.arange(60) // 12, "obs": torch.arange(60)}, [60]))
    sample = rb.sample()
    assert torch.equal(sample["priority_weight"], torch.ones(20))
    rb.update_priority(sample["index"], torch.zeros(20))
    rb.update_priority(torch.tensor([[30]]), torch.tensor([1e6]))
    starts = rb.sample()["obs"].view(4, 5)[:, 0]
    assert (starts == 30).float().mean() >= 0.75
    clone = pickle.loads(pickle.dumps(rb._sampler))
    (index,), _ = clone.sample(rb._storage, 10)
    assert (index.view(2, 5).diff(dim=1) == 1).all()
    plain = pickle.loads(pickle.dumps(SliceSampler(slice_len=5, traj_key="traj")))
    assert plain.sample(rb._storage, 10)[0][0].numel() == 10


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    capacity=st.integers(3, 30),
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=10),
    chunks=st.lists(st.integers(1, 20), min_size=1, max_size=6),
    slice_len=st.integers(1, 5),
    strict=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_prioritized_slice_eligible_starts_match_reference(capacity, lengths, chunks, slice_len, strict, seed):
    torch.manual_seed(seed)
    data = make_episodes(lengths)
    sampler = PrioritizedSliceSampler(
        capacity, alpha=1.0, beta=1.0, slice_len=slice_len, traj_key="traj", strict_length=strict
    )
    storage, pos = RingStorage(capacity), 0
    for chunk in chunks:
        if pos >= data.shape[0]:
            break
        rows = storage.write(data[pos : pos + chunk])
        pos += chunk
        sampler.mark_update(rows, storage=storage)
        sampler.extend(rows)
        sampler.update_priority(rows, torch.rand(rows.numel()) + 0.1)
        try:
            sampler.sample(storage, 2 * slice_len)
        except RuntimeError as err:
            assert "can start a slice" in str(err)
        len0 = storage._len0
        cursor = int(rows[-1]) if storage._is_full else None
        ends = reference_ends(storage._storage["traj"][:len0], kind="trajectory", full=storage._is_full, cursor=cursor)
        eligible = torch.zeros(capacity, dtype=torch.bool)
        eligible[:len0] = True
        for _col, _start, stop, length in reference_boundaries(ends):
            tail = min(length if strict else length - 1, slice_len - 1)
            for back in range(tail):
                eligible[(stop - back) % len0] = False
        expected = sampler._sum_tree.leaves() * eligible
        torch.testing.assert_close(sampler._start_tree.leaves()[:len0], expected[:len0])


def test_slice_starts_are_uniform_over_trajectories_then_offsets():
    storage = RingStorage(40)
    storage.write(make_episodes([10, 30]))
    sampler = SliceSampler(slice_len=5, traj_key="traj")
    starts = torch.cat([sampler.sample(storage, 5 * 200)[0][0].view(200, 5)[:, 0] for _ in range(20)])
    # trajectory picked uniformly (1/2 each), then the start uniformly among its L - 5 + 1 offsets
    probs = torch.zeros(40, dtype=torch.float64)
    probs[0:6] = 0.5 / 6
    probs[10:36] = 0.5 / 26
    counts = torch.bincount(starts, minlength=40).double()
    assert counts[probs == 0].sum() == 0
    support = probs > 0
    expected = probs[support] * counts.sum()
    chi2 = float(((counts[support] - expected) ** 2 / expected).sum())
    dof = int(support.sum()) - 1
    assert chi2 < dof * (1 - 2 / (9 * dof) + 3.09 * math.sqrt(2 / (9 * dof))) ** 3


def test_time_env_buffer_with_wraparound_matches_reference():
    gen = torch.Generator().manual_seed(3)
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(60, ndim=2),
        sampler=SliceSampler(slice_len=3, end_key=("next", "done"), strict_length=False),
        batch_size=12,
    )
    for step in range(6):
        done = torch.rand(3, 7, 1, generator=gen) < 0.2
        batch = TensorDict({"obs": torch.full((3, 7), step), ("next", "done"): done}, [3, 7])
        rb.extend(batch)  # [env, time], written as [time, env]
        storage = rb._storage
        len0 = storage.shape[0]
        cursor = (7 * (step + 1) - 1) % 20 if storage._is_full else None  # last row written
        signal = storage._storage["next", "done"][:len0]
        ends = reference_ends(signal, kind="end", full=storage._is_full, cursor=cursor)
        assert observed_boundaries(rb._sampler._boundaries(storage)) == reference_boundaries(ends)
        index, info = rb._sampler.sample(storage, 12)
        assert_slices_valid(index, slice_lengths(info), ends, len0)


def test_slice_markers_keep_the_stored_flag_shape():
    # TorchRL 0.14.1 returns ("next", "done"/"truncated"/"terminated") and "is_init" as [B, 1] like the
    # stored flags; a [B] marker broadcasts against [B, 1] rewards into a [B, B] loss target.
    import torch
    from tensordict import TensorDict

    from tdrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer

    n = 64
    flag = torch.zeros(n, 1, dtype=torch.bool)
    td = TensorDict({"obs": torch.randn(n, 3), "is_init": flag, "traj": torch.arange(n) // 16,
                     ("next", "done"): flag, ("next", "truncated"): flag, ("next", "terminated"): flag}, [n])
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), sampler=SliceSampler(slice_len=8, traj_key="traj"),
                                batch_size=16)
    rb.extend(td)
    sample = rb.sample()
    for key in ["is_init", ("next", "done"), ("next", "truncated"), ("next", "terminated")]:
        assert sample[key].shape == (16, 1), (key, sample[key].shape)
    assert sample["next", "truncated"].view(2, 8)[:, -1].all()
    assert sample["is_init"].view(2, 8)[:, 0].all()
