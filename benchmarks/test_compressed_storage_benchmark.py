"""Tensor serialization speed, as TorchRL's ``test_compressed_storage_benchmark.py``.

The timed functions are backend-independent: they pick the fastest byte-stream path for compressed
storages (``CompressedListStorage`` uses ``t.numpy().tobytes()``).
"""

from __future__ import annotations

import io
import pickle

import pytest
import torch

try:
    from safetensors.torch import save as safetensors_save
except ImportError:  # the `llm` extra
    safetensors_save = None


def serialize_pickle(t: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    pickle.dump(t, buffer)
    return buffer.getvalue()


def serialize_torch_save(t: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    torch.save(t, buffer)
    return buffer.getvalue()


def serialize_untyped_storage(t: torch.Tensor) -> bytes:
    return bytes(t.untyped_storage())


def serialize_numpy(t: torch.Tensor) -> bytes:
    return t.numpy().tobytes()


def serialize_safetensors(t: torch.Tensor) -> bytes:
    if safetensors_save is None:
        pytest.skip("safetensors is not installed")
    return safetensors_save({"0": t})


class TestCompressedStorageBenchmark:
    @pytest.mark.benchmark(group="tensor_serialization_speed", min_time=0.1, max_time=0.5, min_rounds=5, disable_gc=True, warmup=False)
    @pytest.mark.parametrize(
        "serialization_method",
        ["pickle", "torch.save", "untyped_storage", "numpy", "safetensors"],
    )
    def test_tensor_to_bytestream_speed(self, benchmark, serialization_method: str):
        data = torch.zeros((1, 4, 84, 84), dtype=torch.uint8)  # one stacked Atari frame
        fn = {
            "pickle": serialize_pickle,
            "torch.save": serialize_torch_save,
            "untyped_storage": serialize_untyped_storage,
            "numpy": serialize_numpy,
            "safetensors": serialize_safetensors,
        }[serialization_method]
        assert len(fn(data)) >= data.numel()
        benchmark(fn, data)
