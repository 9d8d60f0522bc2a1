"""Tests of ``tdrl.data.map.query``: ``HashToInt`` and ``QueryModule``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import HashToInt, QueryModule, SipHash


def test_hash_to_int_extend_and_lookup():
    h2i = HashToInt()
    assert h2i(torch.tensor([10, 20, 10]), extend=True).tolist() == [0, 1, 0]
    assert h2i(torch.tensor([30, 20])).tolist() == [2, 1]  # unknown -> len, not added
    assert len(h2i) == 2
    out = h2i(torch.tensor([30, 40], dtype=torch.int32), extend=True)
    assert out.tolist() == [2, 3] and out.dtype == torch.int32


def test_hash_to_int_state_dict_round_trip():
    h2i = HashToInt()
    h2i(torch.tensor([5, -7, 9]), extend=True)
    state = h2i.state_dict()
    assert state["keys"].tolist() == [5, -7, 9] and state["values"].tolist() == [0, 1, 2]
    other = HashToInt()
    other.load_state_dict(state)
    assert other(torch.tensor([9, 5])).tolist() == [2, 0]
    with pytest.raises(KeyError, match="values"):
        other.load_state_dict({"keys": torch.tensor([1])})
    with pytest.raises(ValueError, match="shape"):
        other.load_state_dict({"keys": torch.tensor([1, 2]), "values": torch.tensor([0])})
    h2i.clear()
    assert len(h2i) == 0


def _td():
    return TensorDict(a=torch.tensor([[1.0], [1], [2], [1]]), b=torch.tensor([3, 3, 3, 4]), batch_size=[4])


def test_query_module_indices_and_hashes():
    q = QueryModule(in_keys=["a", "b"])
    td = _td()
    out = q(td)
    assert out is td  # written in place unless clone
    assert td["_index"].tolist() == [0, 0, 1, 2]
    expected = SipHash()(torch.stack([SipHash()(td["a"]), SipHash()(td["b"])], -1))
    assert td["_hash"].tolist() == expected.tolist()
    # a second query finds the same indices; new rows extend
    td2 = TensorDict(a=torch.tensor([[2.0], [5]]), b=torch.tensor([3, 5]), batch_size=[2])
    assert q(td2, extend=False)["_index"].tolist() == [1, 3]
    assert q(td2)["_index"].tolist() == [1, 3]
    assert q(td2, extend=False)["_index"].tolist() == [1, 3]


def test_query_module_options():
    q = QueryModule(in_keys="a", index_key=("out", "i"), hash_key="h", clone=True)
    td = _td()
    out = q(td)
    assert out is not td and ("out", "i") not in td.keys(True)
    assert out["out", "i"].tolist() == [0, 0, 1, 0] and "h" in out.keys()
    assert "h" not in q(td, write_hash=False).keys()
    assert q(td, clone=False) is td
    assert q.in_keys == ["a"] and q.out_keys == [("out", "i"), "h"]


def test_query_module_hash_modules():
    hm = SipHash()
    q = QueryModule(in_keys=["a", "b"], hash_module=hm)
    assert q.hash_module["a"] is not q.hash_module["b"] and q.aggregator is hm
    single = QueryModule(in_keys=["a"], hash_module=hm)
    assert single.hash_module["a"] is hm
    with pytest.raises(ValueError, match="2 hash modules for 1 in_keys"):
        QueryModule(in_keys=["a"], hash_module=[SipHash(), SipHash()])
    with pytest.warns(UserWarning, match="single in_key"):
        QueryModule(in_keys=["a"], aggregator=SipHash())
    with pytest.raises(ValueError, match="empty"):
        QueryModule(in_keys=[])
    with pytest.raises(KeyError, match="'c'"):
        QueryModule(in_keys=["c"])(_td())


def test_query_module_state_dict_holds_the_table():
    q = QueryModule(in_keys=["a", "b"])
    q(_td())
    state = q.state_dict()
    assert state["hash_to_int.values"].tolist() == [0, 1, 2]
    fresh = QueryModule(in_keys=["a", "b"])
    fresh.load_state_dict(state)
    assert fresh(_td(), extend=False)["_index"].tolist() == [0, 0, 1, 2]
    with pytest.raises(RuntimeError, match="hash_to_int.keys"):
        QueryModule(in_keys=["a"]).load_state_dict({})
