"""Spec behaviours a TorchRL 0.14.1 program relies on (each checked against TorchRL in the anchor venv)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Binary, Bounded, Categorical, Composite, MultiCategorical, Unbounded


def test_composite_project_is_in_place():
    spec = Composite(obs=Bounded(-1, 1, shape=(2,)), nested=Composite(x=Bounded(0, 1, shape=(1,))))
    td = TensorDict({"obs": torch.tensor([3.0, -3.0]), ("nested", "x"): torch.tensor([5.0])})
    out = spec.project(td)
    assert out is td
    assert td["obs"].tolist() == [1.0, -1.0] and td["nested", "x"].tolist() == [1.0]


@pytest.mark.parametrize("key", ["shape", "device", "dtype", "space"])
def test_reserved_composite_keys_raise_attribute_error(key):
    with pytest.raises(AttributeError, match=rf"Composite\[{key}\] cannot be set"):
        Composite(a=Unbounded(3))[key] = Unbounded(3)
    with pytest.raises(AttributeError, match="cannot be set"):  # nested too, as in TorchRL
        Composite()["sub", key] = Unbounded(1)


def test_torch_functions_on_specs():
    bounded = Bounded(-1, 1, shape=(4, 3))
    picked = torch.index_select(bounded, 0, torch.tensor([0, 2]))
    assert picked.shape == (2, 3) and isinstance(picked, Bounded)
    spec = Composite(a=Unbounded((4, 3)), shape=(4,))
    assert torch.index_select(spec, 0, torch.tensor([1])).shape == (1,)
    assert torch.unsqueeze(spec, 0).shape == (1, 4)
    assert torch.squeeze(torch.unsqueeze(spec, 0), 0).shape == (4,)
    assert torch.index_select(Categorical(3, shape=(5,)), -1, torch.tensor([0, 4])).shape == (2,)


def test_memoize_encode_caches_and_erases():
    spec = Composite(obs=Unbounded(3), sub=Composite(x=Unbounded(1)))
    spec.memoize_encode()
    first = spec.encode({"obs": [1.0, 2.0, 3.0], "sub": {"x": [4.0]}})
    assert first["obs"].tolist() == [1.0, 2.0, 3.0] and first["sub", "x"].tolist() == [4.0]
    assert len(spec._encode_plans) == 1 and len(spec["sub"]._encode_plans) == 1
    spec.erase_memoize_cache()
    assert not spec._encode_plans
    spec.memoize_encode(False)
    assert spec.encode({"obs": [0.0, 0.0, 1.0]})["obs"].tolist() == [0.0, 0.0, 1.0]


def test_multicategorical_scalar_nvec_samples_without_singleton():
    spec = MultiCategorical(5)
    assert spec.shape == (1,)
    assert spec.rand().shape == () and spec.rand((3,)).shape == (3,)
    assert spec.is_in(spec.rand()) and spec.is_in(torch.tensor([2]))
    assert MultiCategorical([5], remove_singleton=False).rand().shape == (1,)
    assert MultiCategorical(5, shape=(2, 1)).rand().shape == (2, 1)


def test_dim_names_survive_clone_and_to():
    spec = Composite(a=Unbounded((3, 2)), shape=(3,), names=["time"])
    assert spec.names == ["time"]
    assert spec.clone().names == ["time"]
    assert spec.to(torch.float64).names == ["time"]
    assert spec[0:2].names == ["time"]  # same number of batch dims
    assert spec.unbind(0)[0].names == []
    with pytest.raises(ValueError, match="dim names"):
        Composite(shape=(3,), names=["a", "b"])


def test_binary_final_dim_cannot_be_indexed():
    spec = Binary(n=4, shape=(2, 4))
    assert spec[0].shape == (4,) and spec[0:1].shape == (1, 4) and spec[...].shape == (2, 4)
    with pytest.raises(IndexError, match="final dim"):
        spec[:, 0]
    with pytest.raises(IndexError, match="final dim"):
        spec[0, 0]
