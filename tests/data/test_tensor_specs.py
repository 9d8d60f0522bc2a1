"""Contract suite: every spec type passes the same checks (rand/zero/one/is_in/project/encode/shape ops)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
)

# Every factory builds a spec with batch dims (4,) in front of its feature dims.
SPECS = {
    "unbounded": lambda: Unbounded(shape=(4, 3)),
    "unbounded_int": lambda: Unbounded(shape=(4, 3), dtype=torch.int32),
    "bounded": lambda: Bounded(-1.0, 2.0, shape=(4, 3)),
    "bounded_tensor": lambda: Bounded(
        torch.tensor([-1.0, 0.0, 1.0]), torch.tensor([0.0, 1.0, 3.0]), shape=(4, 3)
    ),
    "bounded_int": lambda: Bounded(0, 5, shape=(4, 3), dtype=torch.int64),
    "categorical": lambda: Categorical(5, shape=(4,)),
    "categorical_masked": lambda: Categorical(
        5, shape=(4,), mask=torch.tensor([True, False, True, False, True])
    ),
    "one_hot": lambda: OneHot(5, shape=(4, 5)),
    "one_hot_masked": lambda: OneHot(5, shape=(4, 5), mask=torch.tensor([False, True, True, False, False])),
    "multi_one_hot": lambda: MultiOneHot([2, 3], shape=(4, 5)),
    "multi_categorical": lambda: MultiCategorical([2, 3], shape=(4, 2)),
    "binary": lambda: Binary(3, shape=(4, 3)),
}
TENSOR_SPECS = list(SPECS)


def _out_of_spec(name: str, spec: TensorSpec) -> torch.Tensor | None:
    """A value of the right shape and dtype that is outside the spec (None when none exists)."""
    if name.startswith("unbounded"):
        return None
    if name.startswith("bounded"):
        return torch.full(spec.shape, 100, dtype=spec.dtype)
    if name.startswith("categorical") or name == "multi_categorical":
        return torch.full(spec.shape, 7, dtype=spec.dtype)
    if name == "binary":
        return torch.full(spec.shape, 2, dtype=spec.dtype)
    return torch.ones(spec.shape, dtype=spec.dtype)  # one-hot families: all ones is invalid


@pytest.fixture(params=TENSOR_SPECS)
def case(request: pytest.FixtureRequest) -> tuple[str, TensorSpec]:
    return request.param, SPECS[request.param]()


class TestSpecContract:
    def test_rand_is_in(self, case):
        _, spec = case
        for _ in range(5):
            val = spec.rand()
            assert val.shape == spec.shape and val.dtype == spec.dtype
            assert spec.is_in(val)
        batched = spec.rand((2, 3))
        assert batched.shape == (2, 3, *spec.shape)
        assert spec.is_in(batched)
        spec.assert_is_in(batched)

    def test_zero_one_shape_dtype(self, case):
        _, spec = case
        for val in (spec.zero(), spec.one(), spec.zeros((2,)), spec.ones((2,))):
            assert val.dtype == spec.dtype
            assert val.shape[-spec.ndim :] == spec.shape

    def test_project_maps_into_spec(self, case):
        name, spec = case
        val = spec.rand()
        assert spec.project(val) is val
        bad = _out_of_spec(name, spec)
        if bad is None:
            return
        assert not spec.is_in(bad)
        with pytest.raises(AssertionError, match="not in"):
            spec.assert_is_in(bad)
        assert spec.is_in(spec.project(bad))

    def test_is_in_rejects_wrong_dtype_and_shape(self, case):
        _, spec = case
        val = spec.rand()
        other = torch.float64 if spec.dtype != torch.float64 else torch.float32
        assert not spec.is_in(val.to(other))
        assert not spec.is_in(torch.zeros(7, 7, 7, 9, dtype=spec.dtype))
        with pytest.raises(AssertionError, match="dtype"):
            spec.assert_is_in(val.to(other))

    def test_encode_numpy_and_list(self, case):
        name, spec = case
        val = spec.rand()
        raw = val.numpy()
        if name.startswith("one_hot"):
            raw = val.long().argmax(-1).numpy()
        elif name == "multi_one_hot":
            raw = spec.to_categorical(val).numpy()
        enc = spec.encode(raw)
        assert torch.equal(enc, val)
        assert torch.equal(spec.encode(raw.tolist()), val)

    def test_to_numpy(self, case):
        _, spec = case
        val = spec.rand()
        out = spec.to_numpy(val, safe=True)
        assert isinstance(out, np.ndarray)

    def test_expand(self, case):
        _, spec = case
        expanded = spec.expand(2, *spec.shape)
        assert expanded.shape == (2, *spec.shape)
        assert expanded.is_in(expanded.rand())
        assert spec.expand(torch.Size([2, *spec.shape])) == expanded
        with pytest.raises(ValueError, match="expand"):
            spec.expand(2, *spec.shape[:-1], spec.shape[-1] + 1)

    def test_unsqueeze_squeeze(self, case):
        _, spec = case
        unsq = spec.unsqueeze(0)
        assert unsq.shape == (1, *spec.shape)
        assert unsq.squeeze(0) == spec
        assert unsq.squeeze().shape == spec.shape
        assert unsq.is_in(unsq.rand())

    def test_indexing(self, case):
        _, spec = case
        first = spec[0]
        assert first.shape == spec.shape[1:]
        assert first.is_in(first.rand())
        assert spec[:2].shape == (2, *spec.shape[1:])
        assert spec[..., 1:3, :].shape[0] == 2 if spec.ndim > 1 else True
        assert len(spec.unbind(0)) == spec.shape[0]

    def test_reshape(self, case):
        _, spec = case
        reshaped = spec.reshape(2, 2, *spec.shape[1:])
        assert reshaped.shape == (2, 2, *spec.shape[1:])
        assert reshaped.is_in(reshaped.rand())

    def test_equality_and_clone(self, case):
        _, spec = case
        twin = spec.clone()
        assert twin == spec and twin is not spec
        assert spec != spec.expand(3, *spec.shape)
        assert spec != Composite()

    def test_to_device_and_dtype(self, case):
        _, spec = case
        assert spec.to("cpu") == spec
        assert spec.cpu().device == torch.device("cpu")
        assert spec.rand().device == torch.device("cpu")
        meta = spec.to("meta")
        assert meta.device == torch.device("meta") and meta.shape == spec.shape
        assert meta.zero().device.type == "meta" and meta.expand(2, *spec.shape).shape[0] == 2

    @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
    def test_cuda_roundtrip(self, case):
        _, spec = case
        gpu = spec.to("cuda")
        val = gpu.rand((2,))
        assert val.device.type == "cuda" and gpu.is_in(val) and gpu.is_in(gpu.project(val))
        assert gpu.cpu() == spec

    def test_pickle_roundtrip(self, case):
        _, spec = case
        assert pickle.loads(pickle.dumps(spec)) == spec

    def test_stack_identical(self, case):
        _, spec = case
        stacked = torch.stack([spec, spec.clone()], 0)
        assert stacked == spec.expand(2, *spec.shape)


def test_non_tensor_contract():
    spec = NonTensor(shape=(2,), example_data="hi")
    assert spec.rand().data == "hi" and spec.rand().batch_size == (2,)
    assert spec.zero((3,)).batch_size == (3, 2)
    assert spec.is_in(spec.rand())
    assert spec.expand(4, 2).shape == (4, 2)
    assert spec.clone() == spec
    assert spec != NonTensor(shape=(2,), example_data="other")
    assert spec.encode("x").data == "x"
    assert spec.to_numpy(spec.rand()) == "hi"


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(TENSOR_SPECS),
    idx=st.one_of(
        st.integers(-4, 3),
        st.slices(4).filter(lambda s: s.step is None or s.step > 0),
        st.tuples(st.just(Ellipsis), st.integers(0, 2)),
        st.lists(st.booleans(), min_size=4, max_size=4).map(torch.tensor),
    ),
)
def test_property_indexing_matches_tensor_indexing(name, idx):
    spec = SPECS[name]()
    if isinstance(idx, tuple) and spec._n_fixed:
        idx = (idx[1],)  # `...` would reach the fixed one-hot dim
    indexed = spec[idx]
    assert indexed.shape == spec.zero()[idx].shape
    assert indexed.is_in(indexed.rand())
    assert indexed.is_in(spec.rand()[idx]) == spec.is_in(spec.rand())


@pytest.mark.parametrize("name", ["bounded", "bounded_int", "one_hot"])
def test_rand_and_zero_trace_without_graph_breaks(name):
    spec = SPECS[name]()

    def sample():
        return spec.rand((2,)), spec.zero()

    rand, zero = torch.compile(sample, fullgraph=True, backend="eager")()
    assert spec.is_in(rand) and zero.shape == spec.shape
