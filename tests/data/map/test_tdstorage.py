"""Tests of ``tdrl.data.map.tdstorage``: ``TensorDictMap`` and the ``TensorMap`` interface."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import (
    LazyTensorStorage,
    ListStorage,
    QueryModule,
    RandomProjectionHash,
    SipHash,
    TensorDictMap,
    TensorMap,
)


def _keys(values):
    return TensorDict(k1=torch.tensor(values, dtype=torch.float32).unsqueeze(-1), k2=torch.tensor(values) * 2,
                      batch_size=[len(values)])


def _map(**kwargs):
    return TensorDictMap(query_module=QueryModule(in_keys=["k1", "k2"]), storage=LazyTensorStorage(10), **kwargs)


def test_set_get_contains():
    m = _map()
    keys = _keys([1, 2, 3])
    m[keys] = TensorDict(out=torch.tensor([10.0, 20, 30]), batch_size=[3])
    assert len(m) == 3 and m.max_size == 10
    assert m[_keys([3, 1])]["out"].tolist() == [30.0, 10.0]
    assert m[_keys([2])[0]]["out"].item() == 20.0  # 0-dim keys
    assert m.contains(_keys([1, 4, 3])).tolist() == [True, False, True]
    assert bool(_keys([2])[0] in m) and not bool(_keys([9])[0] in m)
    assert m.out_keys == ["out"] and m.in_keys == ["k1", "k2"]
    with pytest.raises(KeyError, match="1 of the 2 queried keys"):
        m[_keys([1, 7])]


def test_overwrite_keeps_length_and_unknown_keys_absent():
    m = _map()
    m[_keys([1, 2])] = TensorDict(out=torch.tensor([1.0, 2.0]), batch_size=[2])
    m[_keys([2, 3])] = TensorDict(out=torch.tensor([5.0, 6.0]), batch_size=[2])
    # TorchRL counts the overwrite of key 2 as a new item (len 4), and then reports key 4 as present.
    assert len(m) == 3
    assert m[_keys([1, 2, 3])]["out"].tolist() == [1.0, 5.0, 6.0]
    assert not bool(m.contains(_keys([4])).any())


def test_write_fn_sees_old_values_and_repeated_keys():
    calls = []

    def accumulate(new, old=None):
        calls.append(old is None)
        return new if old is None else new.apply(lambda n, o: n + o, old)

    m = _map(write_fn=accumulate)
    m[_keys([1, 2])] = TensorDict(out=torch.tensor([1.0, 2.0]), batch_size=[2])
    m[_keys([2, 3])] = TensorDict(out=torch.tensor([10.0, 3.0]), batch_size=[2])
    assert m[_keys([1, 2, 3])]["out"].tolist() == [1.0, 12.0, 3.0]
    # a key repeated in one batch is written row by row, each write seeing the previous one
    m[_keys([1, 1])] = TensorDict(out=torch.tensor([100.0, 1000.0]), batch_size=[2])
    assert m[_keys([1])]["out"].tolist() == [1101.0]
    assert calls == [True, False, True, False, False]


def test_out_keys_select_and_errors():
    m = _map(out_keys=["out"])
    m[_keys([1])] = TensorDict(out=torch.ones(1), other=torch.zeros(1), batch_size=[1])
    assert set(m[_keys([1])].keys()) == {"out"}
    lst = TensorDictMap(query_module=QueryModule(in_keys=["k1"]), storage=ListStorage())
    with pytest.raises(AttributeError, match="out_keys"):
        _ = lst.out_keys
    with pytest.raises(TypeError, match="storage must be a storage"):
        TensorDictMap(query_module=QueryModule(in_keys=["k1"]), storage={"out": LazyTensorStorage(3)})
    with pytest.raises(ValueError, match="batch"):
        m[_keys([1, 2])] = TensorDict(out=torch.ones(3), batch_size=[3])


def test_list_storage_collates_by_stacking():
    m = TensorDictMap(query_module=QueryModule(in_keys=["k1"]), storage=ListStorage(), out_keys=["v"])
    m[_keys([1, 2])] = TensorDict(v=torch.tensor([[1.0, 1.0], [2.0, 2.0]]), batch_size=[2])
    assert m[_keys([2, 1])]["v"].tolist() == [[2.0, 2.0], [1.0, 1.0]]


def test_clear_forgets_keys():
    m = _map()
    m[_keys([1, 2])] = TensorDict(out=torch.tensor([1.0, 2.0]), batch_size=[2])
    m.clear()
    assert len(m) == 0 and not bool(m.contains(_keys([1])).any())
    m[_keys([3])] = TensorDict(out=torch.tensor([3.0]), batch_size=[1])
    assert m[_keys([3])]["out"].tolist() == [3.0] and len(m) == 1


def test_from_tensordict_pair_picks_hashes_and_storage():
    source = TensorDict(small=torch.randn(5, 3), big=torch.randn(5, 17), scalar=torch.arange(5), batch_size=[5])
    dest = TensorDict(r=torch.arange(5.0), batch_size=[5])
    m = TensorDictMap.from_tensordict_pair(source, dest, in_keys=["small", "big", "scalar"], max_size=20)
    kinds = {k: type(h) for k, h in m.query_module.hash_module.items()}
    assert kinds == {"small": SipHash, "big": RandomProjectionHash, "scalar": SipHash}
    assert isinstance(m.storage, LazyTensorStorage) and m.max_size == 20
    m[source] = dest
    assert m[source[3]]["r"].item() == 3.0
    assert source["_index"].tolist() == [0, 1, 2, 3, 4]
    lm = TensorDictMap.from_tensordict_pair(source, dest, in_keys=["scalar"], storage_constructor=ListStorage)
    assert isinstance(lm.storage, ListStorage)


def test_tensor_map_is_abstract():
    assert issubclass(TensorDictMap, TensorMap)
    with pytest.raises(TypeError):
        TensorMap()
