"""Tensor storages holding tensorclasses and pytrees (rb_tutorial's "Integration with tensorclass / PyTree").

Golden values were recorded with TorchRL 0.14.1 (same seeds, same calls) and are kept here as literals.
"""

from __future__ import annotations

import tempfile

import pytest
import torch
from tensordict import TensorDict, tensorclass
from torch.utils._pytree import tree_flatten, tree_map

from tdrl.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ReplayBuffer,
    TensorDictReplayBuffer,
    TensorStorage,
)


@tensorclass
class Frames:
    images: torch.Tensor
    labels: torch.Tensor


def _frames(n: int = 10) -> Frames:
    return Frames(images=torch.arange(n * 2).view(n, 2), labels=torch.arange(n), batch_size=[n])


def _tree(n: int | None = None) -> dict:
    lead = () if n is None else (n,)
    return {
        "a": torch.arange(3.0).expand(*lead, 3).clone(),
        "b": {"c": (torch.zeros(*lead, 2), [torch.ones(*lead, 1)])},
        30: -torch.ones(lead),
    }


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_tensorclass_extend_sample_golden(storage_cls):
    torch.manual_seed(0)
    rb = ReplayBuffer(storage=storage_cls(20), batch_size=4)
    assert rb.extend(_frames()).tolist() == list(range(10))
    sample = rb.sample()
    assert type(sample) is Frames and sample.batch_size == (4,)
    # TorchRL 0.14.1: torch.manual_seed(0); same buffer -> labels tensor([4, 9, 3, 0])
    assert sample.labels.tolist() == [4, 9, 3, 0]
    assert (sample.images == torch.stack([sample.labels * 2, sample.labels * 2 + 1], -1)).all()


def test_tensorclass_return_info_and_indexing():
    rb2 = ReplayBuffer(storage=LazyTensorStorage(20), batch_size=3)
    rb2.extend(_frames())
    sample, info = rb2.sample(return_info=True)
    assert type(sample) is Frames
    assert info["index"].tolist() == sample.labels.tolist()
    one = rb2[2]
    assert type(one) is Frames and one.batch_size == () and int(one.labels) == 2
    two = rb2[torch.tensor([1, 2])]
    assert type(two) is Frames and two.labels.tolist() == [1, 2]


def test_tensorclass_add_is_one_item():
    rb = ReplayBuffer(storage=LazyTensorStorage(20), batch_size=3)
    rb.add(_frames())
    assert len(rb) == 1
    sample = rb.sample()
    assert type(sample) is Frames and sample.batch_size == (3, 10)


def test_tensorclass_in_tensordict_replay_buffer_scratch_dir():
    # TorchRL 0.14.1 raises ValueError here (its own rb_tutorial does this); tdrl accepts it
    # (docs/differences.md).
    with tempfile.TemporaryDirectory() as tmp:
        rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(50, scratch_dir=tmp), batch_size=12)
        rb.extend(_frames(30))
        assert len(rb) == 30
        sample = rb.sample()
        assert type(sample) is Frames and sample.batch_size == (12,)
        assert (sample.images[:, 0] == sample.labels * 2).all()


def test_tensorclass_refuses_other_class():
    rb = ReplayBuffer(storage=LazyTensorStorage(20))
    rb.extend(_frames())
    with pytest.raises(TypeError, match="holds Frames items"):
        rb.storage.set(0, TensorDict(images=torch.zeros(2), labels=torch.zeros(()), batch_size=[]).to_dict())


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
def test_pytree_add_extend_sample_transform(storage_cls):
    def zero(x):
        return tree_map(lambda y: y * 0, x)

    rb = ReplayBuffer(storage=storage_cls(100), transform=zero)
    assert rb.add(_tree()) == 0
    sample = rb.sample(10)
    assert set(sample) == {"a", "b", 30}
    assert isinstance(sample["b"]["c"], tuple) and isinstance(sample["b"]["c"][1], list)
    assert sample["a"].shape == (10, 3) and sample["b"]["c"][1][0].shape == (10, 1) and sample[30].shape == (10,)
    tree_map(lambda x: None if (x == 0).all() else pytest.fail("transform not applied"), sample)
    # TorchRL 0.14.1: the extend after one add returns tensor([1, 2, 3, 4, 5]); len 6
    assert rb.extend(_tree(5)).tolist() == [1, 2, 3, 4, 5]
    assert len(rb) == 6
    item = rb.storage[3]
    assert item["a"].tolist() == [0.0, 1.0, 2.0] and item[30].shape == ()


def test_tuple_extend_and_slices_golden():
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    assert rb.extend((torch.arange(4), torch.arange(8).view(4, 2))).tolist() == [0, 1, 2, 3]
    got = rb[1:3]
    # TorchRL 0.14.1: (tensor([1, 2]), tensor([[2, 3], [4, 5]]))
    assert isinstance(got, tuple) and got[0].tolist() == [1, 2] and got[1].tolist() == [[2, 3], [4, 5]]


def test_pytree_mismatches_name_what_is_expected():
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend((torch.arange(4), torch.arange(8).view(4, 2)))
    with pytest.raises(ValueError, match="structured as"):
        rb.extend((torch.arange(4),))
    with pytest.raises(TypeError, match="dtype torch.float32"):
        rb.extend((torch.arange(4.0), torch.arange(8).view(4, 2)))
    with pytest.raises(ValueError, match="batch dims"):
        LazyTensorStorage(10).set(slice(0, 3), (torch.zeros(3), torch.zeros(2)))
    with pytest.raises(TypeError, match="leaf 1 is a str"):
        LazyTensorStorage(10).set(0, (torch.zeros(3), "x"))


def test_tensor_storage_from_dict():
    storage = TensorStorage({"x": torch.zeros(5, 2), "y": [torch.arange(5)]})
    assert len(storage) == 5
    got = storage.get([0, 3])
    assert isinstance(got, dict) and got["x"].shape == (2, 2) and got["y"][0].tolist() == [0, 3]


@pytest.mark.parametrize("data", [_frames(), _tree(4)], ids=["tensorclass", "pytree"])
def test_state_dict_round_trip(data):
    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    rb.extend(data)
    fresh = ReplayBuffer(storage=LazyTensorStorage(10))
    fresh.load_state_dict(rb.state_dict())
    assert len(fresh) == len(rb)
    a, b = rb[torch.tensor([0, 2])], fresh[torch.tensor([0, 2])]
    assert type(a) is type(b)
    if isinstance(a, Frames):
        a, b = a.to_dict(), b.to_dict()
    same = tree_map(torch.equal, a, b)
    assert all(leaf is True for leaf in tree_flatten(same)[0])


@pytest.mark.parametrize("storage_cls", [LazyTensorStorage, LazyMemmapStorage])
@pytest.mark.parametrize("data", [_frames(), _tree(4)], ids=["tensorclass", "pytree"])
def test_dumps_loads_round_trip(storage_cls, data, tmp_path):
    rb = ReplayBuffer(storage=storage_cls(10))
    rb.extend(data)
    rb.dumps(tmp_path / "ckpt")
    fresh = ReplayBuffer(storage=storage_cls(10))
    fresh.loads(tmp_path / "ckpt")
    a, b = rb[torch.tensor([1, 3])], fresh[torch.tensor([1, 3])]
    assert type(a) is type(b) and len(fresh) == len(rb)
    if isinstance(a, Frames):
        a, b = a.to_dict(), b.to_dict()
    assert all(leaf is True for leaf in tree_flatten(tree_map(torch.equal, a, b))[0])


def test_loading_a_tensorclass_never_imports_its_module():
    from tdrl.data.replay_buffers.storages._trees import TreeCodec

    with pytest.raises(ValueError, match="import the module 'not_imported_mod'"):
        TreeCodec.from_state({"cls": "not_imported_mod:Frames"}, "LazyTensorStorage")
    assert TreeCodec.from_state({"cls": f"{__name__}:Frames"}, "LazyTensorStorage").cls is Frames
    with pytest.raises(ValueError, match="neither 'cls' nor 'spec'"):
        TreeCodec.from_state({}, "LazyTensorStorage")
