"""Storage-specific behaviour: multi-dim layouts, memmap persistence, compression, errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from tensordict import TensorDict

import tdrl.data as data
from tdrl.data.replay_buffers.storages.compressed import tensor_to_bytes


@pytest.mark.parametrize("storage_cls", [data.LazyTensorStorage, data.LazyMemmapStorage])
def test_ndim2_env_time_layout(storage_cls):
    # Golden values checked against TorchRL 0.14.1: [env, time] batches go into a [time, env] storage.
    rb = data.TensorDictReplayBuffer(storage=storage_cls(12, ndim=2), batch_size=4)
    index = rb.extend(TensorDict(a=torch.arange(12).view(3, 4), batch_size=[3, 4]))
    assert index.shape == (12, 2)
    assert index[:4].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert len(rb) == 12 and rb._storage.shape == (4, 3) and rb._writer._cursor == 0
    rb.extend(TensorDict(a=100 + torch.arange(6).view(3, 2), batch_size=[3, 2]))
    assert rb._storage._storage["a"].tolist() == [[100, 102, 104], [101, 103, 105], [2, 6, 10], [3, 7, 11]]
    assert rb._writer._cursor == 2
    batch = rb.sample()
    t, env = batch["index"].unbind(-1)
    assert torch.equal(batch["a"], rb._storage._storage["a"][t, env])


def test_ndim2_plain_tensor_and_dim_extend():
    rb = data.ReplayBuffer(storage=data.LazyTensorStorage(12, ndim=2), batch_size=5)
    rb.extend(torch.arange(12).view(3, 4))
    assert len(rb) == 12
    assert set(rb.sample().tolist()) <= set(range(12))
    rb = data.ReplayBuffer(storage=data.LazyTensorStorage(12, ndim=2), batch_size=5, dim_extend=0)
    rb.extend(torch.arange(12).view(4, 3))
    assert rb._storage._storage.tolist() == torch.arange(12).view(4, 3).tolist()


def test_tensor_storage_preallocated():
    storage = data.TensorStorage(TensorDict(x=torch.zeros(6, 2), batch_size=[6]))
    assert len(storage) == 6 and storage.initialized
    with pytest.raises(ValueError, match="max_size"):
        data.TensorStorage(torch.zeros(6), max_size=5)
    rb = data.ReplayBuffer(storage=storage, batch_size=2)
    rb.extend(TensorDict(x=torch.ones(2, 2), batch_size=[2]))
    assert rb[0]["x"].tolist() == [1.0, 1.0]


def test_out_of_range_and_bad_input_errors():
    storage = data.LazyTensorStorage(10)
    with pytest.raises(RuntimeError, match="nothing was written"):
        storage.get(torch.tensor([0]))
    storage.set(torch.arange(3), TensorDict(x=torch.arange(3.0), batch_size=[3]))
    with pytest.raises(IndexError, match="out of range"):
        storage.get(torch.tensor([0, 3]))
    with pytest.raises(IndexError, match="out of range"):
        storage.get(5)
    assert storage.get(torch.tensor([-1]))["x"].tolist() == [2.0]
    with pytest.raises(TypeError, match="TensorDict"):
        storage.set(torch.arange(3), torch.zeros(3))
    with pytest.raises(ValueError, match="key 'x'"):
        storage.set(torch.arange(3), TensorDict(x=torch.zeros(3, 2), batch_size=[3]))
    with pytest.raises(IndexError):
        data.ListStorage(4).set(2, "hole")
    assert len(storage) == 3


def test_list_storage_lazy_rows_alias_and_mix():
    storage = data.ListStorage(10)
    storage.set(torch.arange(3), TensorDict(x=torch.arange(3.0), batch_size=[3]))
    storage.set(3, TensorDict(x=torch.tensor(9.0), batch_size=[]))
    assert storage.get([3, 0, 2]) is not None
    assert storage.get_stacked(torch.tensor([2, 3, 0]))["x"].tolist() == [2.0, 9.0, 0.0]
    assert storage.get_stacked(torch.tensor([2, 1]))["x"].tolist() == [2.0, 1.0]


def test_lazy_stack_storage_heterogeneous():
    rb = data.TensorDictReplayBuffer(storage=data.LazyStackStorage(10), batch_size=2)
    rb.add(TensorDict(obs=torch.zeros(3), batch_size=[]))
    rb.add(TensorDict(obs=torch.zeros(5), other=torch.ones(1), batch_size=[]))
    batch = rb[[0, 1]]
    assert type(batch).__name__ == "LazyStackedTensorDict"
    assert batch[1]["obs"].shape == (5,)


def test_compressed_roundtrip_and_ratio():
    storage = data.CompressedListStorage(10, compression_level=6)
    frames = torch.zeros(4, 4, 84, 84, dtype=torch.uint8)
    frames[:, :, :10] = 7
    storage.set(range(4), TensorDict(pixels=frames, ids=torch.arange(4), batch_size=[4]))
    assert storage.bytes() < frames.numel() // 20
    out = storage.get([3, 1])
    assert torch.equal(out[0]["pixels"], frames[3]) and out[1]["ids"] == 1
    state = storage.state_dict()
    other = data.CompressedListStorage(10)
    other.load_state_dict(state)
    assert torch.equal(other.get(2)["pixels"], frames[2])


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.bfloat16, torch.bool])
def test_tensor_to_bytes(dtype):
    t = (torch.arange(6).view(2, 3) % 2).to(dtype).t()  # non-contiguous on purpose
    raw = tensor_to_bytes(t)
    back = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).view(3, 2)
    assert torch.equal(back, t)


@pytest.mark.integration
def test_memmap_files_survive_process(tmp_path):
    scratch = tmp_path / "scratch"
    ckpt = tmp_path / "ckpt"
    rb = data.TensorDictReplayBuffer(storage=data.LazyMemmapStorage(10, scratch_dir=scratch), batch_size=2)
    rb.extend(TensorDict({"x": torch.arange(6.0), ("n", "y"): torch.arange(6)}, batch_size=[6]))
    rb.dumps(ckpt)
    del rb
    # Another process reopens both the scratch files and the checkpoint.
    reader = textwrap.dedent(
        f"""
        import torch
        from tensordict import TensorDict
        import tdrl.data as data
        raw = TensorDict.load_memmap({str(scratch)!r})
        assert raw["x"][:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], raw["x"]
        rb = data.TensorDictReplayBuffer(storage=data.LazyMemmapStorage(10), batch_size=2)
        rb.loads({str(ckpt)!r})
        assert len(rb) == 6 and rb._writer._cursor == 6
        assert rb[torch.arange(6)]["n", "y"].tolist() == list(range(6))
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", reader], check=True, timeout=240, capture_output=True, text=True)
    assert out.stdout.strip() == "ok"


def test_memmap_scratch_dir_not_reused_without_existsok(tmp_path):
    (tmp_path / "junk").write_text("x")
    storage = data.LazyMemmapStorage(4, scratch_dir=tmp_path)
    with pytest.raises(RuntimeError, match="existsok"):
        storage.set(torch.arange(2), torch.zeros(2))
    ok = data.LazyMemmapStorage(4, scratch_dir=tmp_path, existsok=True)
    ok.set(torch.arange(2), torch.ones(2, 3))
    assert ok.get(torch.tensor([1])).tolist() == [[1.0, 1.0, 1.0]]


def test_memmap_rejects_cuda_device():
    with pytest.raises(ValueError, match="CPU"):
        data.LazyMemmapStorage(4, device="cuda:0")


def test_list_storage_sample_across_several_batches():
    rb = data.TensorDictReplayBuffer(storage=data.ListStorage(100), batch_size=64)
    for k in range(5):
        rb.extend(TensorDict(ids=torch.arange(10 * k, 10 * k + 10), x=torch.full((10, 2), float(k)), batch_size=[10]))
    rb.add(TensorDict(ids=torch.tensor(50), x=torch.full((2,), 5.0), batch_size=[]))
    rb.extend(TensorDict(ids=torch.arange(51, 53), batch_size=[2]).set("x", torch.full((2, 2), 5.0)))
    for _ in range(3):
        batch = rb.sample()
        assert torch.equal(batch["ids"], batch["index"])
        assert torch.equal(batch["x"][:, 0].long(), batch["index"] // 10)
