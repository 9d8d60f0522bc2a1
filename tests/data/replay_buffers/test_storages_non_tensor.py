"""Non-tensor leaves (strings) in tensor storages: kept per item, sampled, checkpointed.

Before ``storages/_objects.py`` a LazyTensorStorage broadcast the first item's string to every row
and its samples dropped the key. TorchRL 0.14.1 keeps one value per item (checked in its anchor venv).
"""

from __future__ import annotations

import pytest
import torch
from tensordict import NonTensorStack, TensorDict

from tdrl.data import LazyMemmapStorage, LazyTensorStorage, ReplayBuffer, TensorStorage

STORAGES = [LazyTensorStorage, LazyMemmapStorage]


def _batch(start: int, n: int = 3) -> TensorDict:
    return TensorDict(
        {"a": torch.arange(start, start + n, dtype=torch.float32),
         ("nested", "text"): NonTensorStack.from_list([f"s{i}" for i in range(start, start + n)])},
        [n],
    )


@pytest.mark.parametrize("storage_cls", STORAGES)
def test_each_item_keeps_its_own_string(storage_cls):
    rb = ReplayBuffer(storage=storage_cls(10))
    rb.extend(_batch(0))
    rb.extend(TensorDict({"a": torch.zeros(2), ("nested", "text"): "same"}, [2]))
    assert rb[:5]["nested", "text"].tolist() == ["s0", "s1", "s2", "same", "same"]
    assert rb[1]["nested", "text"] == "s1"


@pytest.mark.parametrize("storage_cls", STORAGES)
def test_samples_carry_the_string_of_the_sampled_item(storage_cls):
    rb = ReplayBuffer(storage=storage_cls(10), batch_size=32)
    rb.extend(_batch(0, 5))
    sample = rb.sample()
    assert [f"s{int(a)}" for a in sample["a"]] == sample["nested", "text"].tolist()


def test_overwrite_after_wrapping_replaces_the_string():
    rb = ReplayBuffer(storage=LazyTensorStorage(4))
    rb.extend(_batch(0, 4))
    rb.extend(_batch(10, 2))
    assert rb[:4]["nested", "text"].tolist() == ["s10", "s11", "s2", "s3"]


def test_missing_or_extra_non_tensor_key_is_refused_and_nothing_is_written():
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(_batch(0))
    with pytest.raises(KeyError, match="missing .*'nested', 'text'"):
        rb.extend(TensorDict({"a": torch.zeros(2)}, [2]))
    with pytest.raises(KeyError, match="unexpected .*'other'"):
        rb.extend(_batch(5).set_non_tensor("other", "x"))
    assert len(rb) == 3


def test_two_dim_storage_indexes_strings_by_cell():
    storage = LazyTensorStorage(12, ndim=2)
    data = TensorDict(
        {"a": torch.arange(6.0).view(2, 3), "t": NonTensorStack.from_list([["a", "b", "c"], ["d", "e", "f"]])},
        [2, 3],
    )
    storage.set(torch.arange(2), data)
    assert storage.get(torch.tensor([1, 0]))["t"].tolist() == [["d", "e", "f"], ["a", "b", "c"]]
    assert storage.get((torch.tensor([1, 0]), torch.tensor([2, 0])))["t"].tolist() == ["f", "a"]


def test_given_storage_with_strings_keeps_them():
    storage = TensorStorage(_batch(0))
    assert storage.get(torch.tensor([2, 0]))["nested", "text"].tolist() == ["s2", "s0"]


def test_state_dict_and_dumps_round_trip_strings(tmp_path):
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(_batch(0))
    restored = ReplayBuffer(storage=LazyTensorStorage(10))
    restored.load_state_dict(rb.state_dict())
    assert restored[:3]["nested", "text"].tolist() == ["s0", "s1", "s2"]
    rb.dumps(tmp_path)
    loaded = ReplayBuffer(storage=LazyTensorStorage(10))
    loaded.loads(tmp_path)
    assert loaded[:3]["nested", "text"].tolist() == ["s0", "s1", "s2"]
    assert len(loaded) == 3


def test_dumps_refuses_values_json_cannot_write(tmp_path):
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(TensorDict({"a": torch.zeros(2), "obj": NonTensorStack.from_list([object(), object()])}, [2]))
    with pytest.raises(TypeError, match="non-tensor key 'obj'"):
        rb.dumps(tmp_path)


def test_negative_row_indices_read_the_string_of_that_row():
    storage = LazyTensorStorage(10)
    storage.set(torch.arange(3), _batch(0))
    assert storage.get(torch.tensor([-1, 0]))["nested", "text"].tolist() == ["s2", "s0"]
