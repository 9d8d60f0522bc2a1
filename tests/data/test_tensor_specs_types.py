"""Per-type spec behaviour: bounds, masks, one-hot encodings, multi-discrete splits, aliases, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import NonTensorData

import tdrl.data as data
from tdrl.data import (
    Binary,
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Categorical,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)


class TestBounded:
    def test_scalar_and_tensor_bounds_broadcast(self):
        spec = Bounded(-1, 1, shape=(2, 3))
        assert spec.low.shape == (2, 3) and spec.space.high.shape == (2, 3)
        assert spec.dtype == torch.float32 and spec.domain == "continuous"
        spec = Bounded(torch.zeros(3), torch.tensor([1.0, 2.0, 3.0]), shape=(4, 3))
        assert spec.high[3].tolist() == [1.0, 2.0, 3.0]
        assert Bounded(torch.zeros(2), torch.ones(2)).shape == (2,)
        assert Bounded(np.zeros(2), np.ones(2), dtype=torch.float64).low.dtype == torch.float64

    def test_bad_bounds(self):
        with pytest.raises(ValueError, match="broadcastable.*\\(2,\\)"):
            Bounded(torch.zeros(3), torch.ones(3), shape=(2,))
        with pytest.raises(ValueError, match="<= `high`"):
            Bounded(1.0, -1.0, shape=(2,))
        with pytest.raises(TypeError, match="high"):
            Bounded(0.0, shape=(2,))

    def test_subclass_dispatch(self):
        assert isinstance(Bounded(0.0, 1.0, shape=(1,)), BoundedContinuous)
        spec = Bounded(0, 3, shape=(2,), dtype=torch.int64)
        assert isinstance(spec, BoundedDiscrete) and isinstance(spec, Bounded)
        assert spec.domain == "discrete"
        assert BoundedDiscrete(0, 2, shape=(1,)).dtype == torch.int64

    def test_discrete_rand_covers_both_ends(self):
        spec = Bounded(0, 3, shape=(1,), dtype=torch.int64)
        values = spec.rand((2000,)).unique().tolist()
        assert values == [0, 1, 2, 3]
        assert spec.cardinality() == 4
        assert spec.enumerate().flatten().tolist() == [0, 1, 2, 3]

    def test_project_clamps(self):
        spec = Bounded(torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 0.5]))
        out = spec.project(torch.tensor([[-3.0, 0.25], [2.0, 9.0]]))
        assert out.tolist() == [[-1.0, 0.25], [1.0, 0.5]]
        discrete = Bounded(0, 4, shape=(2,), dtype=torch.int64)
        assert discrete.project(torch.tensor([5, -3])).tolist() == [4, 0]
        assert discrete.project(torch.tensor([1.6, 9.0])).tolist() == [2, 4]

    def test_setting_bounds_refreshes_sampling(self):
        spec = Bounded(0.0, 1.0, shape=(3,))
        spec.low = 10.0
        spec.high = torch.full((3,), 11.0)
        val = spec.rand((50,))
        assert bool((val >= 10).all() and (val <= 11).all())

    def test_in_place_bound_edits_are_seen_by_rand(self):
        spec = Bounded(0.0, 1.0, shape=(3,))
        spec.low[:] = 5.0
        spec.high[:] = 6.0
        assert bool((spec.rand((20,)) >= 5).all())
        spec.space.high = torch.full((3,), 100.0)
        spec.space.low = torch.full((3,), 99.0)
        assert bool((spec.rand((20,)) >= 99).all())
        expanded = spec.expand(2, 3)
        expanded.low[0] = 99.5
        assert spec.low[0].item() == 99.0

    def test_infinite_bounds_sample_finite(self):
        spec = Bounded(torch.tensor([-float("inf"), 0.0]), torch.tensor([float("inf"), float("inf")]))
        val = spec.rand((100,))
        assert bool(torch.isfinite(val).all()) and spec.is_in(val)

    def test_equality(self):
        assert Bounded(-1.0, 1.0, shape=(3,)) == Bounded(-1.0, 1.0, shape=(3,))
        assert Bounded(-1.0, 1.0, shape=(3,)) != Bounded(-1.0, 2.0, shape=(3,))
        assert Bounded(-1.0, 1.0, shape=(3,)) != Unbounded(3)

    @settings(max_examples=25, deadline=None)
    @given(
        low=st.floats(-1e3, 1e3),
        width=st.floats(0.0, 1e3),
        probe=st.lists(st.floats(-1e4, 1e4), min_size=3, max_size=3),
    )
    def test_property_rand_and_project_in_spec(self, low, width, probe):
        spec = Bounded(low, low + width, shape=(3,), dtype=torch.float64)
        assert spec.is_in(spec.rand((4,)))
        assert spec.is_in(spec.project(torch.tensor(probe, dtype=torch.float64)))


class TestUnbounded:
    def test_defaults_and_domains(self):
        assert Unbounded().shape == (1,)
        assert isinstance(Unbounded(2), UnboundedContinuous)
        spec = Unbounded(shape=(2,), dtype=torch.int64)
        assert isinstance(spec, UnboundedDiscrete) and spec.domain == "discrete"
        assert spec.space.high.tolist() == [torch.iinfo(torch.int64).max] * 2
        assert Unbounded(2, dtype=torch.bool).rand().dtype == torch.bool
        assert Unbounded(2, dtype="float64").dtype == torch.float64

    def test_encode_errors_name_shapes(self):
        with pytest.raises(RuntimeError, match="\\(4,\\).*\\(3,\\)"):
            Unbounded(3).encode(np.ones(4))
        assert Unbounded(3).encode(np.ones((2, 3))).shape == (2, 3)

    def test_type_check_names_key(self):
        with pytest.raises(TypeError, match="'obs'.*float32"):
            Unbounded(3).type_check(torch.zeros(3, dtype=torch.int64), "obs")


class TestCategorical:
    def test_basics(self):
        spec = Categorical(4)
        assert spec.shape == () and spec.space.n == 4 and spec.n == 4 and spec.cardinality() == 4
        assert spec.encode(2).tolist() == 2
        assert spec.enumerate().tolist() == [0, 1, 2, 3]
        assert Categorical(3, shape=(2,)).enumerate().tolist() == [[0, 0], [1, 1], [2, 2]]
        assert spec.to_one_hot(torch.tensor(2)).tolist() == [False, False, True, False]
        assert spec.to_one_hot_spec() == OneHot(4)

    def test_mask(self):
        spec = Categorical(5, mask=torch.tensor([False, True, False, True, False]))
        assert set(spec.rand((200,)).tolist()) == {1, 3}
        assert not spec.is_in(torch.tensor(2))
        assert spec.project(torch.tensor(2)).item() in (1, 3)
        assert spec.project(torch.tensor(4)).item() == 3
        assert spec.enumerate(use_mask=True).tolist() == [1, 3]
        spec.update_mask(None)
        assert spec.is_in(torch.tensor(2)) and spec.mask is None

    def test_batched_mask(self):
        spec = Categorical(3, shape=(2,))
        spec.update_mask(torch.tensor([[True, False, False], [False, False, True]]))
        assert spec.rand((10,)).unique(dim=0).tolist() == [[0, 2]]
        assert spec[1].mask.tolist() == [False, False, True]
        assert spec.expand(4, 2).mask.shape == (4, 2, 3)

    def test_mask_errors(self):
        with pytest.raises(ValueError, match="\\(4,\\)"):
            Categorical(4, mask=torch.tensor([True, False]))
        with pytest.raises(RuntimeError, match="no category"):
            Categorical(2, mask=torch.tensor([False, False])).rand()

    def test_index(self):
        values = torch.arange(8.0).view(2, 4)
        assert Categorical(4, shape=(2,)).index(torch.tensor([1, 3]), values).tolist() == [[1.0], [7.0]]


class TestOneHot:
    def test_encode_index_numpy(self):
        spec = OneHot(4)
        assert spec.encode(np.array(2)).tolist() == [False, False, True, False]
        assert spec.encode(np.array([1, 2])).shape == (2, 4)
        assert spec.index(spec.encode(1), torch.arange(8.0).view(2, 4)).tolist() == [[1.0], [5.0]]
        assert spec.to_numpy(spec.encode(3)) == 3
        assert spec.to_categorical(spec.encode(3)).item() == 3
        assert spec.to_categorical_spec() == Categorical(4)
        with pytest.raises(ValueError, match="outside"):
            spec.encode(4)

    def test_shape_checks(self):
        with pytest.raises(ValueError, match="n=4"):
            OneHot(4, shape=(2, 3))
        with pytest.raises(ValueError, match="final dimension"):
            OneHot(4).unsqueeze(-1)
        with pytest.raises(IndexError, match="final dim"):
            OneHot(4, shape=(2, 4))[0, 1]
        assert OneHot(4, shape=(2, 4))[..., :].shape == (2, 4)

    def test_mask_and_projection(self):
        spec = OneHot(4, mask=torch.tensor([True, False, True, False]))
        assert set(spec.rand((100,)).long().argmax(-1).tolist()) == {0, 2}
        assert not spec.is_in(spec.encode(1))
        assert spec.project(torch.tensor([0.0, 5.0, 1.0, 0.0])).tolist() == [False, False, True, False]
        assert spec != OneHot(4)

    def test_use_register(self):
        spec = OneHot(3, use_register=True)
        assert spec.encode("left").tolist() == [True, False, False]
        assert spec.encode("right").tolist() == [False, True, False]
        assert spec.encode("left").tolist() == [True, False, False]


class TestMultiDiscrete:
    def test_multi_one_hot_splits(self):
        spec = MultiOneHot([2, 3])
        assert spec.shape == (5,) and spec.space.boxes[1].n == 3 and spec.cardinality() == 6
        vals = spec.rand((50,))
        assert bool((vals[:, :2].sum(-1) == 1).all() and (vals[:, 2:].sum(-1) == 1).all())
        enc = spec.encode(np.array([1, 2]))
        assert enc.tolist() == [False, True, False, False, True]
        assert spec.to_categorical(enc).tolist() == [1, 2]
        assert not spec.is_in(torch.tensor([True, True, False, False, True]))
        assert spec.enumerate().shape == (6, 5)
        assert spec.to_categorical_spec() == MultiCategorical([2, 3])
        assert spec.project(torch.tensor([0.0, 2.0, 1.0, 5.0, 1.0])).tolist() == [
            False,
            True,
            False,
            True,
            False,
        ]

    def test_multi_one_hot_index_and_mask(self):
        spec = MultiOneHot([2, 3], mask=torch.tensor([True, False, False, True, True]))
        vals = spec.rand((50,))
        assert not bool(vals[:, 1].any() or vals[:, 2].any())
        q = torch.arange(10.0).view(2, 5)
        assert spec.index(spec.encode(np.array([0, 2])), q).tolist() == [[0.0, 4.0], [5.0, 9.0]]

    def test_multi_categorical(self):
        spec = MultiCategorical([2, 3])
        vals = spec.rand((200,))
        assert vals[:, 0].unique().tolist() == [0, 1] and vals[:, 1].unique().tolist() == [0, 1, 2]
        assert spec.enumerate().shape == (6, 2) and spec.cardinality() == 6
        assert spec.project(torch.tensor([5, -1])).tolist() == [1, 0]
        assert spec.to_one_hot(torch.tensor([1, 2])).tolist() == [False, True, False, False, True]
        assert spec.to_one_hot_spec() == MultiOneHot([2, 3])
        batched = MultiCategorical(torch.tensor([[2, 3], [4, 5]]))
        assert batched.shape == (2, 2) and batched.is_in(batched.rand((10,)))
        assert not batched.is_in(torch.tensor([[0, 0], [4, 0]]))

    def test_multi_categorical_mask(self):
        spec = MultiCategorical([2, 3], mask=torch.tensor([True, False, False, True, True]))
        vals = spec.rand((100,))
        assert vals[:, 0].unique().tolist() == [0] and vals[:, 1].unique().tolist() == [1, 2]
        assert not spec.is_in(torch.tensor([1, 1]))
        assert spec.is_in(spec.project(torch.tensor([1, 0])))


class TestBinary:
    def test_binary(self):
        spec = Binary(3)
        assert spec.shape == (3,) and spec.dtype == torch.int8 and spec.n == 2
        assert Binary(shape=(2, 4)).shape == (2, 4)
        assert set(spec.rand((100,)).unique().tolist()) == {0, 1}
        assert spec.project(torch.tensor([3.0, -1.0, 0.4])).tolist() == [1, 0, 0]
        assert not spec.is_in(torch.tensor([0, 2, 1], dtype=torch.int8))
        with pytest.raises(ValueError, match="n=4"):
            Binary(4, shape=(2, 3))
        assert Binary(3) != OneHot(3)


def test_deprecated_aliases_are_plain_aliases():
    pairs = {
        "BoundedTensorSpec": "Bounded",
        "UnboundedContinuousTensorSpec": "UnboundedContinuous",
        "UnboundedDiscreteTensorSpec": "UnboundedDiscrete",
        "CompositeSpec": "Composite",
        "DiscreteTensorSpec": "Categorical",
        "OneHotDiscreteTensorSpec": "OneHot",
        "MultiOneHotDiscreteTensorSpec": "MultiOneHot",
        "MultiDiscreteTensorSpec": "MultiCategorical",
        "BinaryDiscreteTensorSpec": "Binary",
        "NonTensorSpec": "NonTensor",
    }
    for alias, name in pairs.items():
        assert getattr(data, alias) is getattr(data, name)


def test_heterogeneous_stack_is_lazy():
    spec = torch.stack([Unbounded(3), Unbounded(4)], 0)
    assert type(spec).__name__ == "Stacked" and spec.shape == (2, -1)
    assert spec.unbind(0)[1] == Unbounded(4)
    assert spec.is_in((torch.zeros(3), torch.zeros(4)))
    same_shape = torch.stack([Unbounded(3), Bounded(0.0, 1.0, shape=(3,))], 0)
    val = same_shape.rand()
    assert val.shape == (2, 3) and same_shape.is_in(val)


class TestChoice:
    def test_spec_choices(self):
        spec = data.Choice([Bounded(0.0, 1.0, shape=(1,)), Bounded(10.0, 11.0, shape=(1,))])
        draws = torch.cat([spec.rand() for _ in range(40)])
        assert bool(((draws <= 1) | (draws >= 10)).all()) and draws.min() < 1 and draws.max() > 10
        assert spec.is_in(torch.tensor([0.5])) and not spec.is_in(torch.tensor([5.0]))
        assert spec.project(torch.tensor([5.0])).tolist() == [1.0]
        assert spec.expand(3, 1).rand().shape == (3, 1)
        assert spec.clone() == spec and spec.num_choices == 2
        with pytest.raises(ValueError, match="shape"):
            data.Choice([Bounded(0.0, 1.0, shape=(1,)), Bounded(0.0, 1.0, shape=(2,))])

    def test_non_tensor_choices(self):
        spec = data.Choice([NonTensorData(s) for s in ["a", "b", "c"]])
        assert {spec.rand().data for _ in range(60)} == {"a", "b", "c"}
        assert spec.is_in(NonTensorData("b")) and not spec.is_in(NonTensorData("z"))
        assert spec.cardinality() == 3 and spec.zero().data == "a"
