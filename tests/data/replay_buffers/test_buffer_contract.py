"""Contract suite: every storage x writer x sampler combination behaves like a replay buffer."""

from __future__ import annotations

import itertools
import pickle
import threading

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data

CAPACITY = 8

STORAGES = {
    "ListStorage": lambda: data.ListStorage(CAPACITY),
    "LazyStackStorage": lambda: data.LazyStackStorage(CAPACITY),
    "LazyTensorStorage": lambda: data.LazyTensorStorage(CAPACITY),
    "LazyMemmapStorage": lambda: data.LazyMemmapStorage(CAPACITY),
    "CompressedListStorage": lambda: data.CompressedListStorage(CAPACITY),
}
# Storages that check item shapes and dtypes (list storages accept any item).
TYPED_STORAGES = {"LazyTensorStorage", "LazyMemmapStorage"}

# Slice samplers are not here (they need trajectory ids): see tests/architecture_allowlist.toml.
SAMPLERS = {
    "RandomSampler": lambda: data.RandomSampler(),
    "SamplerWithoutReplacement": lambda: data.SamplerWithoutReplacement(),
    "PrioritizedSampler": lambda: data.PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5),
    # "step" stands in for the policy version: every item is eligible, fresher ones weigh more.
    "StalenessAwareSampler": lambda: data.StalenessAwareSampler(version_key="step"),
}
# Samplers that read an entry of TensorDict items (not applicable to plain tensors).
TD_ONLY_SAMPLERS = {"StalenessAwareSampler"}

WRITERS = {
    "RoundRobinWriter": lambda: data.RoundRobinWriter(),
    "TensorDictRoundRobinWriter": lambda: data.TensorDictRoundRobinWriter(),
}


def make_td(start: int, n: int) -> TensorDict:
    """Items whose every leaf encodes the item number, so contents can be checked after sampling."""
    obs = torch.arange(start, start + n, dtype=torch.float32)
    return TensorDict(
        {
            "obs": obs.unsqueeze(-1).expand(n, 3).clone(),
            ("next", "reward"): obs.unsqueeze(-1).clone(),
            "step": torch.arange(start, start + n),
        },
        batch_size=[n],
    )


def item_ids(td: TensorDict) -> torch.Tensor:
    """The item number of each entry of a (stacked) TensorDict, checking all leaves agree."""
    step = td["step"]
    assert torch.equal(td["obs"][..., 0].long(), step)
    assert torch.equal(td["obs"][..., 2].long(), step)
    assert torch.equal(td["next", "reward"][..., 0].long(), step)
    return step

COMBOS = list(itertools.product(STORAGES, WRITERS, SAMPLERS))


def build(storage: str, writer: str, sampler: str, **kwargs) -> data.TensorDictReplayBuffer:
    return data.TensorDictReplayBuffer(
        storage=STORAGES[storage](), writer=WRITERS[writer](), sampler=SAMPLERS[sampler](), batch_size=4, **kwargs
    )


def contents(rb) -> list[int]:
    return item_ids(rb[torch.arange(len(rb))]).tolist()


@pytest.fixture(params=COMBOS, ids=["-".join(c) for c in COMBOS])
def combo(request):
    return request.param


def test_extend_sample_roundtrip(combo):
    rb = build(*combo)
    index = rb.extend(make_td(0, 5))
    assert index.tolist() == [0, 1, 2, 3, 4]
    assert len(rb) == 5
    rb.extend(make_td(5, 3))
    batch = rb.sample()
    assert batch.batch_size == torch.Size([4])
    # Each sampled item is the one stored at its reported index.
    assert torch.equal(item_ids(batch), batch["index"])
    batch, info = rb.sample(3, return_info=True)
    assert batch.batch_size == torch.Size([3])
    assert torch.equal(torch.as_tensor(info["index"]), batch["index"])


def test_wraparound_len_and_cursor(combo):
    rb = build(*combo)
    rb.extend(make_td(0, 5))
    index = rb.extend(make_td(5, 5))
    assert index.tolist() == [5, 6, 7, 0, 1]
    assert len(rb) == CAPACITY
    assert rb._writer._cursor == 2
    assert rb.write_count == 10
    assert contents(rb) == [8, 9, 2, 3, 4, 5, 6, 7]
    # Batches larger than the capacity keep their last CAPACITY items.
    rb.extend(make_td(100, 10))
    assert sorted(contents(rb)) == list(range(102, 110))


def test_add_and_getitem(combo):
    rb = build(*combo)
    rb.extend(make_td(0, 3))
    index = rb.add(make_td(42, 1)[0])
    assert int(index) == 3
    assert int(rb[3]["step"]) == 42
    assert item_ids(rb[[3, 0]]).tolist() == [42, 0]
    with pytest.raises(IndexError):
        rb[CAPACITY + 5]


def test_state_dict_roundtrip(combo):
    rb = build(*combo)
    rb.extend(make_td(0, 6))
    rb.extend(make_td(6, 4))
    state = rb.state_dict()
    other = build(*combo)
    other.load_state_dict(state)
    assert len(other) == len(rb)
    assert other._writer._cursor == rb._writer._cursor
    assert contents(other) == contents(rb)
    other.extend(make_td(50, 1))
    assert int(other[2]["step"]) == 50


def test_dumps_loads_roundtrip(combo, tmp_path):
    rb = build(*combo)
    rb.extend(make_td(0, 10))
    rb.dumps(tmp_path / "ckpt")
    other = build(*combo)
    other.loads(tmp_path / "ckpt")
    assert len(other) == len(rb) and other._writer._cursor == rb._writer._cursor
    assert contents(other) == contents(rb)
    batch = other.sample(5)
    assert torch.equal(item_ids(batch), torch.tensor([contents(rb)[i] for i in batch["index"].tolist()]))


def test_empty(combo):
    rb = build(*combo)
    rb.extend(make_td(0, 5))
    rb.empty()
    assert len(rb) == 0 and rb._writer._cursor == 0
    with pytest.raises(RuntimeError, match="empty"):
        rb.sample()
    rb.extend(make_td(10, 2))
    assert contents(rb) == [10, 11]


def test_iteration(combo):
    rb = build(*combo)
    rb.extend(make_td(0, CAPACITY))
    batches = list(itertools.islice(iter(rb), 3))
    assert all(b.batch_size == torch.Size([4]) for b in batches)
    for b in batches:
        assert torch.equal(item_ids(b), b["index"])


def test_prefetch(combo):
    rb = build(*combo, prefetch=2)
    rb.extend(make_td(0, CAPACITY))
    for _ in range(4):
        b = rb.sample()
        assert torch.equal(item_ids(b), b["index"])


def test_transforms(combo):
    rb = build(*combo)

    class Shift:
        """Forward adds a "doubled" entry to sampled data; inv marks written data."""

        def __call__(self, td):
            td = td.clone()
            td["doubled"] = td["obs"] * 2
            return td

        def inv(self, td):
            return td.clone().set("written", torch.ones(td.shape))

    rb.append_transform(Shift())
    rb.insert_transform(0, lambda td: td.set("seen", torch.ones(td.shape)))
    source = make_td(0, 5)
    rb.extend(source)
    assert "written" not in source.keys()
    b = rb.sample()
    assert torch.equal(b["doubled"], b["obs"] * 2)
    assert (b["seen"] == 1).all() and (b["written"] == 1).all()


def test_thread_safety_smoke(combo):
    rb = build(*combo)
    rb.extend(make_td(0, CAPACITY))
    errors: list[BaseException] = []

    def writer():
        try:
            for i in range(30):
                rb.extend(make_td(100 + 3 * i, 3))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def reader():
        try:
            for _ in range(30):
                b = rb.sample()
                assert b.batch_size == torch.Size([4])
                item_ids(b)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(rb) == CAPACITY and rb.write_count == CAPACITY + 90


def _bad_batches(storage: str) -> list[tuple[TensorDict, type]]:
    missing = make_td(0, 2).exclude("step")
    extra = make_td(0, 2).set("other", torch.zeros(2))
    out = [(missing, KeyError), (extra, KeyError)]
    if storage in TYPED_STORAGES:
        wrong_shape = make_td(0, 2).set("obs", torch.zeros(2, 4))
        wrong_dtype = make_td(0, 2).set("step", torch.zeros(2, dtype=torch.int32))
        out += [(wrong_shape, ValueError), (wrong_dtype, TypeError)]
    return out


def test_rejected_extend_leaves_buffer_unchanged(combo):
    if combo[0] == "LazyStackStorage":
        pytest.skip("LazyStackStorage accepts heterogeneous items by design")
    rb = build(*combo)
    rb.extend(make_td(0, 5))
    before = (len(rb), rb._writer._cursor, rb.write_count, contents(rb))
    for bad, err in _bad_batches(combo[0]):
        with pytest.raises(err):
            rb.extend(bad)
        assert (len(rb), rb._writer._cursor, rb.write_count, contents(rb)) == before


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_sample_empty_raises(storage):
    rb = data.TensorDictReplayBuffer(storage=STORAGES[storage](), batch_size=2)
    with pytest.raises(RuntimeError, match="empty"):
        rb.sample()


PLAIN_STORAGES = ["ListStorage", "LazyTensorStorage", "LazyMemmapStorage", "CompressedListStorage"]


@pytest.mark.parametrize("storage", PLAIN_STORAGES)
@pytest.mark.parametrize("sampler", sorted(set(SAMPLERS) - TD_ONLY_SAMPLERS))
def test_plain_tensors(storage, sampler):
    rb = data.ReplayBuffer(storage=STORAGES[storage](), sampler=SAMPLERS[sampler](), batch_size=4)
    values = torch.arange(10.0).unsqueeze(-1) * torch.ones(1, 2)
    rb.extend(values)
    assert len(rb) == CAPACITY
    assert torch.equal(rb[torch.arange(CAPACITY)][:, 0], torch.tensor([8.0, 9, 2, 3, 4, 5, 6, 7]))
    batch, info = rb.sample(return_info=True)
    assert batch.shape == (4, 2)
    stored = torch.tensor([8.0, 9, 2, 3, 4, 5, 6, 7])
    assert torch.equal(batch[:, 0], stored[torch.as_tensor(info["index"])])
    assert int(rb.add(torch.full((2,), 7.0))) == 2


@pytest.mark.parametrize("storage", PLAIN_STORAGES)
def test_extend_with_a_list_of_items(storage):
    rb = data.ReplayBuffer(storage=STORAGES[storage](), batch_size=2)
    index = rb.extend([torch.zeros(2), torch.ones(2), torch.full((2,), 2.0)])
    assert index.tolist() == [0, 1, 2]
    assert rb[2].tolist() == [2.0, 2.0]


def test_pickle_roundtrip(combo):
    rb = build(*combo, prefetch=1)
    rb.extend(make_td(0, 6))
    rb.sample()
    clone = pickle.loads(pickle.dumps(rb))
    assert len(clone) == 6 and contents(clone) == contents(rb)
    batch = clone.sample()
    assert torch.equal(item_ids(batch), batch["index"])


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_iteration_without_replacement_is_one_epoch(storage):
    rb = data.TensorDictReplayBuffer(
        storage=STORAGES[storage](), sampler=data.SamplerWithoutReplacement(), batch_size=3
    )
    rb.extend(make_td(0, CAPACITY))
    for _ in range(2):  # a second iteration starts a new epoch
        batches = list(iter(rb))
        assert [b.batch_size[0] for b in batches] == [3, 3, 2]
        assert sorted(torch.cat([item_ids(b) for b in batches]).tolist()) == list(range(CAPACITY))


def test_prefetch_with_concurrent_samplers():
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(CAPACITY), batch_size=4, prefetch=3)
    rb.extend(make_td(0, CAPACITY))
    errors: list[BaseException] = []

    def reader():
        try:
            for _ in range(40):
                b = rb.sample()
                assert torch.equal(item_ids(b), b["index"])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_sampled_batches_can_be_written_back(storage):
    rb = data.TensorDictReplayBuffer(storage=STORAGES[storage](), batch_size=3)
    rb.extend(make_td(0, 4))
    batch = rb.sample()
    rb.extend(batch)  # carries "index": the buffer's output, not data
    rb.add(batch[0])
    assert len(rb) == CAPACITY
    written = item_ids(batch).tolist()
    assert contents(rb)[4:] == written + written[:1]
    again = rb.sample()
    assert torch.equal(item_ids(again), torch.tensor(contents(rb))[again["index"]])
