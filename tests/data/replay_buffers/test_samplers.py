"""Tests of the item samplers: segment trees, SamplerWithoutReplacement, PrioritizedSampler."""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from tensordict import TensorDict

from tdrl.data.replay_buffers import (
    LazyTensorStorage,
    ListStorage,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from tdrl.data.replay_buffers.samplers import (
    MinSegmentTree,
    PrioritizedSampler,
    RandomSampler,
    SamplerWithoutReplacement,
    SumSegmentTree,
)


class FlatStorage:
    """The minimal storage protocol samplers use: length, shape, ndim, max_size."""

    def __init__(self, n: int, *, shape: tuple[int, ...] | None = None, max_size: int | None = None) -> None:
        self.n = n
        self.shape = torch.Size(shape or (n,))
        self.ndim = len(self.shape)
        self.max_size = max_size or n

    def __len__(self) -> int:
        return self.n


def chi2_stat(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


# Upper 0.1% quantile of chi-square with k degrees of freedom (Wilson-Hilferty); generous on purpose.
def chi2_bound(dof: int) -> float:
    z = 3.09
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


# ---- segment trees ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 5, 32, 33, 1000, 40_000])
def test_segment_tree_queries_match_reference(size):
    leaves = torch.rand(size, dtype=torch.float64)
    leaves[torch.rand(size) < 0.2] = 0.0
    sum_tree, min_tree = SumSegmentTree(size, dtype=torch.float64), MinSegmentTree(size, dtype=torch.float64)
    sum_tree.update(torch.arange(size), leaves)
    min_tree.update(torch.arange(size), leaves)
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        lo, hi = sorted(torch.randint(0, size + 1, (2,), generator=gen).tolist())
        assert sum_tree.query(lo, hi) == pytest.approx(float(leaves[lo:hi].sum()), rel=1e-12, abs=1e-12)
        expected_min = float(leaves[lo:hi].min()) if hi > lo else math.inf
        assert min_tree.query(lo, hi) == expected_min
    if leaves.sum() > 0:
        mass = torch.rand(500, dtype=torch.float64, generator=gen) * leaves.sum()
        expected = torch.searchsorted(leaves.cumsum(0), mass, right=True)
        assert torch.equal(sum_tree.scan_lower_bound(mass), expected)


def test_segment_tree_repeated_index_last_write_wins_and_state_roundtrip():
    tree = SumSegmentTree(100)
    tree.update(torch.tensor([3, 7, 3, 3]), torch.tensor([1.0, 2.0, 5.0, 4.0]))
    assert tree[3].item() == 4.0 and tree.query() == 6.0
    restored = SumSegmentTree(100)
    restored.load_state_dict(tree.state_dict())
    assert torch.equal(restored.leaves(), tree.leaves()) and restored.query() == 6.0
    with pytest.raises(IndexError, match="out of range"):
        tree.update(torch.tensor([100]), 1.0)
    with pytest.raises(ValueError, match="tree size mismatch"):
        SumSegmentTree(99).load_state_dict(tree.state_dict())


def test_segment_tree_float32_rounds_leaves():
    tree = SumSegmentTree(4, dtype=torch.float32)
    tree.update(0, 0.1)
    assert tree.leaves()[0].item() == torch.tensor(0.1, dtype=torch.float32).item()
    assert tree[0].dtype == torch.float32


# ---- SamplerWithoutReplacement ------------------------------------------------------------------
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n", [10, 12])
def test_without_replacement_covers_every_index_once_per_epoch(drop_last, n):
    sampler, storage, batch = SamplerWithoutReplacement(drop_last=drop_last), FlatStorage(n), 4
    for _ in range(3):
        seen, sizes = [], []
        while True:
            index, info = sampler.sample(storage, batch)
            assert info == {}
            seen.extend(index.tolist())
            sizes.append(index.numel())
            if sampler.ran_out:
                break
        full, rest = divmod(n, batch)
        if drop_last:
            assert sizes == [batch] * full and len(set(seen)) == len(seen) == full * batch
        else:
            assert sorted(seen) == list(range(n))
            assert sizes == [batch] * full + ([rest] if rest else [])


def test_without_replacement_no_shuffle_order_and_remaining_batches():
    sampler, storage = SamplerWithoutReplacement(shuffle=False), FlatStorage(5)
    assert sampler.sample(storage, 2)[0].tolist() == [0, 1]
    assert sampler._remaining_batches == 2 and not sampler.ran_out
    assert sampler.sample(storage, 2)[0].tolist() == [2, 3]
    assert sampler.sample(storage, 2)[0].tolist() == [4] and sampler.ran_out
    assert sampler.sample(storage, 2)[0].tolist() == [0, 1] and not sampler.ran_out


def test_without_replacement_restarts_when_storage_grows():
    sampler, storage = SamplerWithoutReplacement(), FlatStorage(6)
    first = sampler.sample(storage, 4)[0]
    storage.n = 8
    seen = []
    while True:
        seen.extend(sampler.sample(storage, 4)[0].tolist())
        if sampler.ran_out:
            break
    assert sorted(seen) == list(range(8)) and first.numel() == 4


def test_without_replacement_errors():
    sampler = SamplerWithoutReplacement(drop_last=True)
    with pytest.raises(RuntimeError, match="empty storage"):
        sampler.sample(FlatStorage(0), 2)
    with pytest.raises(ValueError, match="batch size"):
        sampler.sample(FlatStorage(3), 4)
    assert not sampler.can_sample(FlatStorage(3), 4) and sampler.can_sample(FlatStorage(4), 4)


def test_without_replacement_state_dict_roundtrip_continues_identically(tmp_path):
    storage = FlatStorage(20)
    sampler = SamplerWithoutReplacement()
    sampler.sample(storage, 3)
    clone = SamplerWithoutReplacement()
    clone.load_state_dict(sampler.state_dict())
    assert [sampler.sample(storage, 3)[0].tolist() for _ in range(5)] == [
        clone.sample(storage, 3)[0].tolist() for _ in range(5)
    ]
    sampler.dumps(tmp_path)
    loaded = SamplerWithoutReplacement()
    loaded.loads(tmp_path)
    assert torch.equal(loaded._sample_list, sampler._sample_list) and loaded.ran_out == sampler.ran_out


def test_without_replacement_multidim_storage_and_dispatch():
    sampler = RandomSampler(replacement=False, shuffle=False)
    assert isinstance(sampler, SamplerWithoutReplacement)
    index, _ = sampler.sample(FlatStorage(6, shape=(3, 2)), 4)
    assert isinstance(index, tuple) and [t.tolist() for t in index] == [[0, 0, 1, 1], [0, 1, 0, 1]]


def test_without_replacement_iterates_one_epoch_in_a_buffer():
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(10), sampler=SamplerWithoutReplacement(), batch_size=4)
    rb.extend(TensorDict({"x": torch.arange(10)}, [10]))
    seen = torch.cat([batch["x"] for batch in rb])
    assert sorted(seen.tolist()) == list(range(10))


def test_random_sampler_is_uniform():
    storage = LazyTensorStorage(30)
    storage.set(torch.arange(20), torch.zeros(20))
    counts = torch.bincount(RandomSampler().sample(storage, 20_000)[0], minlength=20).double()
    assert chi2_stat(counts, torch.full((20,), 1 / 20, dtype=torch.float64)) < chi2_bound(19)


# ---- PrioritizedSampler -------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_prioritized_frequencies_follow_p_alpha(alpha):
    n, draws = 16, 20_000
    priority = torch.linspace(0.1, 4.0, n)
    sampler = PrioritizedSampler(n, alpha=alpha, beta=0.5)
    sampler.update_priority(torch.arange(n), priority)
    index, _ = sampler.sample(FlatStorage(n), draws)
    counts = torch.bincount(index, minlength=n).double()
    q = (priority.double() + 1e-8) ** alpha
    assert chi2_stat(counts, q / q.sum()) < chi2_bound(n - 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_prioritized_weights_exact_formula(dtype):
    n, alpha, beta, eps = 10, 0.7, 0.4, 1e-3
    priority = torch.rand(n, dtype=torch.float64) + 0.05
    sampler = PrioritizedSampler(n, alpha=alpha, beta=beta, eps=eps, dtype=dtype)
    sampler.update_priority(torch.arange(n), priority.to(dtype))
    index, info = sampler.sample(FlatStorage(n), 64)
    q = (priority.to(dtype) + eps) ** alpha
    q = q.to(dtype).double()
    expected = (q[index] / q.min()) ** -beta
    assert info["priority_weight"].dtype == dtype
    torch.testing.assert_close(info["priority_weight"].double(), expected, rtol=1e-5, atol=0)
    # TorchRL's form: (N * P(i)) ** -beta normalised by its max
    w = (n * q / q.sum()) ** -beta
    torch.testing.assert_close(info["priority_weight"].double(), w[index] / w.max(), rtol=1e-5, atol=0)


def test_prioritized_only_samples_the_filled_part():
    sampler = PrioritizedSampler(100, alpha=1.0, beta=1.0)
    sampler.update_priority(torch.arange(100), torch.ones(100))
    index, _ = sampler.sample(FlatStorage(7, max_size=100), 1000)
    assert int(index.max()) < 7


def test_new_items_get_max_priority_seen_so_far():
    sampler = PrioritizedSampler(8, alpha=0.5, beta=1.0)
    assert sampler.default_priority == 1.0
    sampler.mark_update(torch.arange(4))
    sampler.update_priority(torch.tensor([1, 2]), torch.tensor([3.0, 7.0]))
    sampler.update_priority(torch.tensor([2]), torch.tensor([0.5]))
    assert sampler.default_priority == 7.0
    sampler.mark_update(torch.tensor([5]))
    assert sampler._sum_tree[5].item() == pytest.approx((7.0 + 1e-8) ** 0.5)


def test_max_priority_within_buffer_recomputed():
    sampler = PrioritizedSampler(8, alpha=1.0, beta=1.0, max_priority_within_buffer=True)
    sampler.update_priority(torch.arange(4), torch.tensor([1.0, 5.0, 2.0, 3.0]))
    sampler.update_priority(torch.tensor([1]), torch.tensor([0.5]))
    assert sampler.default_priority == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("index", "priority", "error", "match"),
    [
        (torch.tensor([0, 1]), torch.tensor([1.0, float("nan")]), ValueError, "finite priorities"),
        (torch.tensor([0, 1]), torch.tensor([1.0, float("inf")]), ValueError, "finite priorities"),
        (torch.tensor([0, 1]), torch.tensor([1.0, -2.0]), ValueError, ">= 0"),
        (torch.tensor([0, 8]), torch.tensor([1.0, 2.0]), IndexError, "max_capacity"),
        (torch.tensor([0, 1, 2]), torch.tensor([1.0, 2.0]), ValueError, "one value per index"),
    ],
)
def test_bad_priority_updates_raise_and_leave_tree_unchanged(index, priority, error, match):
    sampler = PrioritizedSampler(8, alpha=0.7, beta=1.0)
    sampler.update_priority(torch.arange(8), torch.arange(8.0))
    before = (sampler._sum_tree.leaves().clone(), sampler._min_tree.leaves().clone(), sampler.default_priority)
    with pytest.raises(error, match=match):
        sampler.update_priority(index, priority)
    assert torch.equal(sampler._sum_tree.leaves(), before[0]) and torch.equal(sampler._min_tree.leaves(), before[1])
    assert sampler._sum_tree.query() == pytest.approx(float(before[0].sum()))
    assert sampler.default_priority == before[2]


def test_negative_indices_are_skipped():
    sampler = PrioritizedSampler(4, alpha=1.0, beta=1.0)
    sampler.update_priority(torch.tensor([-1, 2]), torch.tensor([9.0, 3.0]))
    assert sampler._sum_tree.leaves().tolist() == pytest.approx([0, 0, 3.0, 0])


def test_prioritized_errors_on_empty_or_zero_mass():
    sampler = PrioritizedSampler(4, alpha=1.0, beta=1.0)
    with pytest.raises(RuntimeError, match="empty storage"):
        sampler.sample(FlatStorage(0, max_size=4), 2)
    with pytest.raises(RuntimeError, match="p_sum"):
        sampler.sample(FlatStorage(4), 2)
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedSampler(4, alpha=-1.0, beta=1.0)
    with pytest.raises(ValueError, match="max_capacity"):
        PrioritizedSampler(0, alpha=1.0, beta=1.0)


def test_prioritized_state_dict_roundtrip_continues_identically(tmp_path):
    n = 50
    sampler = PrioritizedSampler(n, alpha=0.8, beta=0.3)
    sampler.update_priority(torch.arange(n), torch.rand(n))
    clone = PrioritizedSampler(n, alpha=0.1, beta=0.9)
    clone.load_state_dict(sampler.state_dict())
    loaded = PrioritizedSampler(n, alpha=0.1, beta=0.9)
    sampler.dumps(tmp_path)
    loaded.loads(tmp_path)
    for _ in range(3):
        outs = []
        for s in (sampler, clone, loaded):
            torch.manual_seed(3)
            outs.append(s.sample(FlatStorage(n), 16))
        new = torch.rand(16)
        for s, (index, info) in zip((sampler, clone, loaded), outs):
            assert torch.equal(index, outs[0][0]) and torch.equal(info["priority_weight"], outs[0][1]["priority_weight"])
            s.update_priority(index, new)
    assert clone.default_priority == loaded.default_priority == sampler.default_priority


def test_alpha_setter_retransforms_stored_priorities():
    sampler = PrioritizedSampler(4, alpha=1.0, beta=1.0, eps=0.0)
    sampler.update_priority(torch.arange(4), torch.tensor([1.0, 2.0, 4.0, 8.0]))
    sampler.alpha = 0.5
    assert sampler._sum_tree.leaves().tolist() == pytest.approx([1.0, 2**0.5, 2.0, 8**0.5], rel=1e-6)
    assert sampler._min_tree.query() == pytest.approx(1.0)


def test_prioritized_multidim_storage():
    storage = FlatStorage(12, shape=(4, 3))
    sampler = PrioritizedSampler(12, alpha=1.0, beta=1.0)
    sampler.update_priority(torch.tensor([[0, 0], [2, 1]]), torch.tensor([0.0, 5.0]), storage=storage)
    assert sampler._sum_tree.leaves()[7].item() == pytest.approx(5.0)
    with pytest.raises(RuntimeError, match="storage="):
        sampler.update_priority(torch.tensor([[0, 0]]), 1.0)
    sampler.update_priority(torch.arange(12), torch.tensor([0.0] * 7 + [1.0] + [0.0] * 4))
    (row, col), _ = sampler.sample(storage, 5)
    assert row.tolist() == [2] * 5 and col.tolist() == [1] * 5


@pytest.mark.parametrize("storage", [LazyTensorStorage(50), ListStorage(50)])
def test_prioritized_with_real_storages(storage):
    rb = TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=storage, batch_size=32)
    rb.extend(TensorDict({"x": torch.arange(20)}, [20]))
    sample = rb.sample()
    assert int(sample["x"].max()) < 20 and torch.equal(sample["priority_weight"], torch.ones(32))
    rb.update_priority(torch.tensor([3]), torch.tensor([1000.0]))
    assert rb.sample()["x"].eq(3).float().mean() > 0.5


def test_segment_tree_survives_pickling():
    tree = SumSegmentTree(100)
    tree.update(torch.arange(100), torch.ones(100))
    clone = pickle.loads(pickle.dumps(tree))
    clone.update(torch.tensor([5]), 11.0)
    assert clone.query() == 110.0 and tree.query() == 100.0
    assert int(clone.scan_lower_bound(torch.tensor([6.5]))) == 5


def test_within_buffer_max_is_erased_only_when_overwritten():
    storage = FlatStorage(8, shape=(4, 2))
    sampler = PrioritizedSampler(8, alpha=1.0, beta=1.0, max_priority_within_buffer=True)
    sampler.update_priority(torch.tensor([[0, 0], [3, 1]]), torch.tensor([1.0, 9.0]), storage=storage)
    assert sampler.default_priority == pytest.approx(9.0)
    sampler.extend(torch.tensor([[1, 0], [1, 1]]))
    assert sampler.default_priority == pytest.approx(9.0)
    sampler.extend(torch.tensor([[3, 0], [3, 1]]))
    assert sampler.default_priority == 1.0
    flat = PrioritizedSampler(8, alpha=1.0, beta=1.0, max_priority_within_buffer=True)
    flat.update_priority(torch.tensor([2, 5]), torch.tensor([1.0, 4.0]))
    flat.add(2)
    assert flat.default_priority == pytest.approx(4.0)
    flat.extend(slice(4, 6))
    assert flat.default_priority == 1.0
