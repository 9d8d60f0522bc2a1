"""Composite: nested keys, mapping operations, values, shape operations, caches and error messages."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import TensorDict, tensorclass

from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    CompositeSpec,
    NonTensor,
    OneHot,
    Unbounded,
)


def _nested() -> Composite:
    return Composite(
        {"agent": {"obs": Unbounded((3, 4)), "action": Bounded(-1.0, 1.0, shape=(3, 2))}},
        done=Binary(1, shape=(3, 1), dtype=torch.bool),
        reward=Unbounded((3, 1)),
        shape=(3,),
    )


class TestKeys:
    def test_dict_and_kwargs_build_sub_composites(self):
        spec = _nested()
        assert isinstance(spec["agent"], Composite)
        assert spec["agent"].shape == (3,)
        assert spec["agent", "obs"].shape == (3, 4)
        assert spec[("agent", "obs")] is spec.get(("agent", "obs"))

    def test_keys_nested_and_leaves(self):
        spec = _nested()
        assert list(spec.keys()) == ["agent", "done", "reward"]
        assert list(spec.keys(True)) == [("agent", "obs"), ("agent", "action"), "agent", "done", "reward"]
        assert list(spec.keys(True, True)) == [("agent", "obs"), ("agent", "action"), "done", "reward"]
        assert list(spec.keys(False, True)) == ["done", "reward"]
        keys = spec.keys(include_nested=True)
        assert ("agent", "obs") in keys and ("done",) in keys and "agent" in keys
        assert ("agent", "obs") not in spec.keys()
        assert len(keys) == 5

    def test_items_values(self):
        spec = _nested()
        items = dict(spec.items(True, True))
        assert items["reward"] is spec["reward"]
        assert items[("agent", "action")] is spec["agent", "action"]
        assert len(spec.values(True, True)) == 4

    def test_contains_and_iter(self):
        spec = _nested()
        assert "agent" in spec and ("agent", "obs") in spec and ("agent", "nope") not in spec
        assert list(spec) == ["agent", "done", "reward"] and len(spec) == 3

    def test_set_nested_creates_sub_composites(self):
        spec = Composite(shape=(2,))
        spec["a", "b", "c"] = Unbounded((2, 5))
        assert isinstance(spec["a"], Composite) and isinstance(spec["a", "b"], Composite)
        assert spec["a", "b"].shape == (2,)
        assert spec.rand()["a", "b", "c"].shape == (2, 5)

    def test_keys_cache_invalidated_on_nested_mutation(self):
        spec = _nested()
        assert ("agent", "extra") not in spec.keys(True, True)
        spec["agent"]["extra"] = Unbounded((3,))
        assert ("agent", "extra") in spec.keys(True, True)
        assert spec.rand()["agent", "extra"].shape == (3,)
        del spec["agent", "extra"]
        assert ("agent", "extra") not in spec.keys(True, True)
        assert "extra" not in spec.rand()["agent"].keys()

    def test_none_entries(self):
        spec = Composite(a=Unbounded(1), b=None)
        assert "b" in spec.keys() and spec["b"] is None
        assert list(spec.rand().keys()) == ["a"]

    def test_update_merges_nested(self):
        spec = _nested()
        spec.update({"agent": Composite(extra=Unbounded((3, 1)), shape=(3,)), "new": Unbounded((3,))})
        assert {("agent", "obs"), ("agent", "extra"), "new"} <= set(spec.keys(True, True))

    def test_select_exclude_empty_pop(self):
        spec = _nested()
        assert list(spec.select(("agent", "obs"), "reward").keys(True, True)) == [("agent", "obs"), "reward"]
        assert set(spec.exclude(("agent", "obs"), "done").keys(True, True)) == {("agent", "action"), "reward"}
        assert spec.select("missing", strict=False).is_empty()
        with pytest.raises(KeyError, match="missing"):
            spec.select("missing")
        empty = spec.empty()
        assert empty.is_empty() and empty.shape == spec.shape
        assert isinstance(spec.pop("reward"), Unbounded) and "reward" not in spec
        assert spec.pop("reward", None) is None

    def test_is_empty_recurse(self):
        assert Composite().is_empty()
        assert not Composite(a=Composite()).is_empty()
        assert Composite(a=Composite()).is_empty(recurse=True)

    def test_missing_key_error_names_path(self):
        spec = _nested()
        with pytest.raises(KeyError, match="'nope'.*under"):
            spec["agent", "nope"]
        assert spec.get("nope", None) is None

    def test_lock(self):
        spec = _nested().lock_()
        assert spec.is_locked and spec["agent"].is_locked
        with pytest.raises(RuntimeError, match="locked"):
            spec["x"] = Unbounded((3,))
        with pytest.raises(RuntimeError, match="locked"):
            spec["agent"]["x"] = Unbounded((3,))
        with pytest.raises(RuntimeError, match="locked"):
            del spec["reward"]
        spec.unlock_()
        spec["x"] = Unbounded((3,))
        assert not spec.clone().is_locked

    def test_deprecated_alias(self):
        assert CompositeSpec is Composite


class TestValues:
    def test_rand_zero_one_batch(self):
        spec = _nested()
        for td in (spec.rand(), spec.zero(), spec.one()):
            assert isinstance(td, TensorDict) and td.batch_size == (3,)
            assert td["agent", "obs"].shape == (3, 4) and td["done"].dtype == torch.bool
        td = spec.rand((5,))
        assert td.batch_size == (5, 3) and td["agent", "action"].shape == (5, 3, 2)
        assert spec.is_in(td)
        assert spec.zeros((2,)).batch_size == (2, 3)

    def test_empty_composite_values(self):
        assert Composite().rand().batch_size == ()
        assert Composite(shape=(4,)).zero().batch_size == (4,)
        assert Composite(shape=(4,)).rand((2,)).batch_size == (2, 4)

    def test_device(self):
        assert Composite(a=Unbounded(1)).device is None
        assert Composite(a=Unbounded(1)).rand().device is None
        spec = Composite(a=Unbounded(1), device="cpu")
        assert spec.rand().device == torch.device("cpu")
        spec["b", "c"] = Unbounded(2)
        assert spec["b"].device == torch.device("cpu")
        moved = Composite(a=Unbounded(1)).to("cpu")
        assert moved.device == torch.device("cpu") and moved.cpu() is moved

    def test_device_setter_refreshes_cached_plans(self):
        spec = Composite(a=Unbounded(1))
        spec.rand()
        spec.device = "meta"
        assert spec["a"].device.type == "meta" and spec.rand()["a"].device.type == "meta"

    def test_device_mismatch_names_key(self):
        with pytest.raises(RuntimeError, match="'a'.*meta"):
            Composite(a=Unbounded(1, device="meta"), device="cpu")

    def test_shape_mismatch_names_key(self):
        with pytest.raises(ValueError, match="'obs'.*\\(2, 4\\).*\\(3,\\)"):
            Composite(obs=Unbounded((2, 4)), shape=(3,))

    def test_shape_setter(self):
        spec = Composite(a=Unbounded((3, 2)))
        spec.shape = (3,)
        assert spec.rand().batch_size == (3,)
        with pytest.raises(ValueError, match="'a'"):
            spec.shape = (4,)

    def test_is_in_and_assert_names_nested_leaf(self):
        spec = _nested()
        td = spec.rand()
        assert spec.is_in(td)
        td["agent", "action"] = torch.full((3, 2), 5.0)
        assert not spec.is_in(td)
        with pytest.raises(AssertionError, match=r"\('agent', 'action'\).*Bounded.*space"):
            spec.assert_is_in(td)
        td = spec.rand()
        td["reward"] = torch.zeros(3, 1, dtype=torch.float64)
        with pytest.raises(AssertionError, match=r"'reward'.*float32.*float64"):
            spec.assert_is_in(td)
        td = spec.rand()
        td["agent", "obs"] = torch.zeros(3, 5)
        with pytest.raises(AssertionError, match=r"'obs'.*\(3, 4\).*\(3, 5\)"):
            spec.assert_is_in(td)
        del td["done"]
        assert not spec.is_in(td)
        with pytest.raises(AssertionError, match="'done': missing"):
            spec.select("done").assert_is_in(td)

    def test_extra_keys_are_ignored(self):
        spec = _nested()
        td = spec.rand()
        td["other"] = torch.zeros(3)
        assert spec.is_in(td)

    def test_type_check(self):
        spec = _nested()
        spec.type_check(spec.rand())
        with pytest.raises(TypeError, match="'reward'"):
            spec.type_check(torch.zeros(3, 1, dtype=torch.int64), "reward")
        td = spec.rand()
        td["reward"] = td["reward"].double()
        with pytest.raises(TypeError, match="reward"):
            spec.type_check(td)

    def test_project(self):
        spec = _nested()
        td = spec.rand()
        td["agent", "action"] = torch.full((3, 2), 5.0)
        out = spec.project(td)
        assert spec.is_in(out)
        assert torch.equal(out["agent", "action"], torch.ones(3, 2))

    def test_encode_and_to_numpy(self):
        spec = Composite(obs=Unbounded(3), action=OneHot(4))
        td = spec.encode({"obs": np.ones(3), "action": 2})
        assert td["obs"].dtype == torch.float32 and td["action"].tolist() == [False, False, True, False]
        with pytest.raises(RuntimeError, match="'obs'.*\\(4,\\).*\\(3,\\)"):
            spec.encode({"obs": np.ones(4), "action": 1})
        nested = _nested()
        arrays = nested.to_numpy(nested.rand())
        assert isinstance(arrays["agent"]["obs"], np.ndarray)

    def test_enumerate_and_cardinality(self):
        spec = Composite(a=Categorical(3), b=Categorical(2))
        assert spec.cardinality() == 6
        values = spec.enumerate()
        assert values.batch_size == (6,)
        pairs = {(int(a), int(b)) for a, b in zip(values["a"], values["b"])}
        assert len(pairs) == 6

    def test_non_tensor_entry(self):
        spec = Composite(text=NonTensor(shape=(), example_data="hi"), x=Unbounded(1))
        td = spec.rand()
        assert td["text"] == "hi"
        assert spec.is_in(td)


class TestShapeOps:
    def test_expand(self):
        spec = _nested()
        expanded = spec.expand(2, 3)
        assert expanded.shape == (2, 3) and expanded["agent", "obs"].shape == (2, 3, 4)
        assert expanded.is_in(expanded.rand())
        assert spec.expand(-1 if False else 2, -1).shape == (2, 3)
        with pytest.raises(ValueError, match="expand"):
            spec.expand(2, 4)

    def test_squeeze_unsqueeze(self):
        spec = _nested()
        unsq = spec.unsqueeze(-1)
        assert unsq.shape == (3, 1) and unsq["agent", "obs"].shape == (3, 1, 4)
        assert unsq.squeeze() == spec and unsq.squeeze(-1) == spec
        assert spec.unsqueeze(0).shape == (1, 3)

    def test_indexing(self):
        spec = _nested()
        first = spec[0]
        assert first.shape == () and first["agent", "obs"].shape == (4,)
        assert spec[:2]["reward"].shape == (2, 1)
        assert spec[..., 1]["agent", "action"].shape == (2,)
        assert len(spec.unbind(0)) == 3

    def test_reshape(self):
        spec = Composite(a=Unbounded((2, 3, 4)), shape=(2, 3))
        assert spec.reshape(6)["a"].shape == (6, 4)
        assert spec.view(-1).shape == (6,)

    def test_clone_eq_pickle(self):
        spec = _nested()
        twin = spec.clone()
        assert twin == spec and twin["agent"] is not spec["agent"]
        twin["agent", "obs"] = Unbounded((3, 5))
        assert twin != spec
        assert pickle.loads(pickle.dumps(spec)) == spec
        assert spec != {"agent": 1}

    def test_stack_same_keys_dense(self):
        spec = _nested()
        stacked = torch.stack([spec, spec.clone()], 0)
        assert type(stacked) is Composite and stacked.shape == (2, 3)
        assert stacked == spec.expand(2, 3)
        other = spec.clone()
        other["agent", "action"] = Bounded(-2.0, 2.0, shape=(3, 2))
        mixed = torch.stack([spec, other], 0)
        assert type(mixed) is Composite
        assert mixed["agent", "action"].high[:, 0, 0].tolist() == [1.0, 2.0]

    def test_stack_different_keys_lazy(self):
        a = Composite(x=Unbounded(1))
        b = Composite(x=Unbounded(1), y=Unbounded(2))
        stacked = torch.stack([a, b], 0)
        assert type(stacked).__name__ == "StackedComposite"
        assert list(stacked.keys()) == ["x"] and stacked["x"].shape == (2, 1)
        td = stacked.rand()
        assert stacked.is_in(td)
        assert stacked.unbind(0) == (a, b)
        with pytest.raises(RuntimeError, match="locked"):
            stacked["z"] = Unbounded(1)


class TestMisc:
    def test_separates(self):
        spec = _nested()
        out = spec.separates("done", ("agent", "obs"), "missing")
        assert set(out.keys(True, True)) == {"done", ("agent", "obs")}
        assert "done" not in spec and ("agent", "obs") not in spec

    def test_pickle_drops_caches(self):
        spec = _nested()
        list(spec.keys(True, True))
        spec.rand()
        clone = pickle.loads(pickle.dumps(spec))
        assert clone._cache == {} and clone == spec
        clone["agent", "more"] = Unbounded((3,))
        assert ("agent", "more") in clone.keys(True, True)

    def test_clear_device(self):
        spec = Composite(a=Composite(b=Unbounded(1)), device="cpu")
        spec.clear_device_()
        assert spec.device is None and spec["a"].device is None
        spec["c"] = Unbounded(1, device="meta")
        assert spec["c"].device == torch.device("meta")

    def test_bool_categorical_done_spec(self):
        spec = Composite(done=Categorical(2, shape=(4, 1), dtype=torch.bool), shape=(4,))
        td = spec.zero()
        assert td["done"].dtype == torch.bool and not td["done"].any()
        assert spec.is_in(spec.rand())
        assert spec["done"].enumerate().shape == (2, 4, 1)

    def test_rand_is_in_many_specs(self):
        spec = Composite(
            a=Bounded(0, 3, shape=(2, 1), dtype=torch.int64),
            b=OneHot(3, shape=(2, 3)),
            c={"d": Binary(2, shape=(2, 2)), "e": NonTensor(shape=(2,), example_data=1)},
            shape=(2,),
        )
        for batch in (None, (3,), (2, 2)):
            td = spec.rand(batch)
            assert spec.is_in(td)
            spec.assert_is_in(td)


_KEYS = st.sampled_from(["a", "b", ("a", "x"), ("b", "y", "z"), ("c", "d")])


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["set", "del", "share", "shared_set"]), _KEYS), max_size=12))
def test_property_caches_follow_mutations(ops):
    """After any sequence of mutations (including of a sub-Composite shared by two parents), the cached
    key lists and rand() agree with an uncached walk of the tree."""
    root, other = Composite(), Composite()
    shared = Composite(s=Unbounded(1))
    for op, key in ops:
        # Warm the caches before each mutation so that a missed invalidation would show.
        list(root.keys(True, True))
        list(other.keys(True, True))
        if op == "set":
            try:
                root[key] = Unbounded(1)
            except KeyError:
                pass  # an intermediate key holds a leaf
        elif op == "del" and key in root:
            del root[key]
        elif op == "share":
            root["shared"] = shared
            other["shared"] = shared
        elif op == "shared_set":
            try:
                shared[key] = Unbounded(2)
            except KeyError:
                pass
    for spec in (root, other):
        uncached = [k for k, _ in spec._walk(True, True)]
        assert list(spec.keys(True, True)) == uncached
        assert sorted(map(str, spec.rand().keys(True, True))) == sorted(map(str, uncached))


class _SpecData(TensorDict):
    """A TensorDict subclass for ``data_cls``."""


def test_data_cls_is_the_class_of_every_built_value():
    # TorchRL 0.14.1 builds zero/rand/one/zeros/ones/encode as ``data_cls``; tdrl built plain TensorDicts.
    spec = Composite(a=Unbounded(3), b=Composite(x=Unbounded(2)), shape=(), data_cls=_SpecData)
    for method in ("zero", "rand", "one", "zeros", "ones"):
        assert type(getattr(spec, method)()) is _SpecData, method
    assert type(spec.zero((2,))) is _SpecData
    assert type(spec.expand(4).zero()) is _SpecData
    assert type(spec.clone().rand()) is _SpecData
    assert type(spec.encode({"a": [1.0, 2.0, 3.0], "b": {"x": [1.0, 2.0]}})) is _SpecData
    assert type(spec.zero()["b"]) is TensorDict  # the nested Composite has no data_cls


@tensorclass
class _Obs:
    a: torch.Tensor


def test_data_cls_may_be_a_tensorclass():
    value = Composite(a=Unbounded((2, 3)), shape=(2,), data_cls=_Obs).rand()
    assert isinstance(value, _Obs) and value.a.shape == (2, 3)
