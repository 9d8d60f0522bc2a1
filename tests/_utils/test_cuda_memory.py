"""cuda_memory_stats / reset_cuda_peak_stats / cuda_memory_profile: zeros without CUDA, GiB readings with it."""

from __future__ import annotations

import logging

import pytest
import torch

import tdrl
from tdrl._utils import cuda_memory

_GB = 1024**3


class _FakeCuda:
    """Stands in for torch.cuda's memory counters (this machine has no CUDA device)."""

    def __init__(self) -> None:
        self.allocated, self.reserved, self.peak, self.resets = 1 * _GB, 2 * _GB, 3 * _GB, []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d: self.allocated)
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d: self.reserved)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda d: self.peak)
        monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda d: self.peak)
        monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", self.resets.append)


def test_top_level_names() -> None:
    assert tdrl.cuda_memory_stats is cuda_memory.cuda_memory_stats
    assert tdrl.reset_cuda_peak_stats is cuda_memory.reset_cuda_peak_stats
    assert tdrl.cuda_memory_profile is cuda_memory.cuda_memory_profile


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_without_cuda_everything_is_zero() -> None:
    assert cuda_memory.cuda_memory_stats() == dict.fromkeys(
        ("allocated_gb", "reserved_gb", "max_allocated_gb", "max_reserved_gb"), 0.0)
    cuda_memory.reset_cuda_peak_stats()


def test_stats_in_gib_and_cpu_device_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeCuda()
    fake.install(monkeypatch)
    assert cuda_memory.cuda_memory_stats() == {"allocated_gb": 1.0, "reserved_gb": 2.0, "max_allocated_gb": 3.0,
                                               "max_reserved_gb": 3.0}
    assert cuda_memory.cuda_memory_stats("cpu")["allocated_gb"] == 0.0
    cuda_memory.reset_cuda_peak_stats(1)
    cuda_memory.reset_cuda_peak_stats("cpu")
    assert fake.resets == [torch.device("cuda", 1)]


def test_profile_records_delta_and_logs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    fake = _FakeCuda()
    fake.install(monkeypatch)
    with caplog.at_level(logging.INFO, logger=cuda_memory.logger.name):
        with cuda_memory.cuda_memory_profile("step", device="cuda:0") as prof:
            fake.allocated += _GB // 2
    assert fake.resets == [torch.device("cuda", 0)]
    assert prof.stats["allocated_gb"] == 1.5 and prof.delta == {"allocated_gb": 0.5, "reserved_gb": 0.0}
    assert "cuda_memory_profile[step]: alloc=1.500 GB (+0.500)" in caplog.text


def test_profile_as_decorator_without_peak_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeCuda()
    fake.install(monkeypatch)
    prof = cuda_memory.cuda_memory_profile("f", log=False, reset_peaks=False)

    @prof
    def grow() -> int:
        fake.reserved += _GB
        return 7

    assert grow() == 7
    assert fake.resets == [] and prof.delta["reserved_gb"] == 1.0
