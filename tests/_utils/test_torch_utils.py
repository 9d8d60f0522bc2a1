from __future__ import annotations

import pytest
import torch

import tdrl
from tdrl._utils import compile_with_warmup, get_available_device


def test_get_available_device_on_cpu_machine(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert get_available_device() == torch.device("cpu")
    assert get_available_device(return_str=True) == "cpu"


def test_get_available_device_prefers_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_available_device(return_str=True) == "cuda:0"
    assert get_available_device() == torch.device("cuda:0")


def test_compile_with_warmup_compiles_after_the_warmup_calls(monkeypatch):
    compiled_with = []

    def fake_compile(model, **kwargs):
        compiled_with.append(kwargs)
        return lambda *a, **k: ("compiled", model(*a, **k))

    monkeypatch.setattr(torch, "compile", fake_compile)
    fn = compile_with_warmup(lambda x: x + 1, warmup=2, mode="reduce-overhead")
    assert fn(1) == 2
    assert fn(1) == 2
    assert compiled_with == []
    assert fn(1) == ("compiled", 2)
    assert fn(1) == ("compiled", 2)
    assert compiled_with == [{"mode": "reduce-overhead"}]  # compiled once


def test_compile_with_warmup_as_decorator_and_real_compile():
    @compile_with_warmup(warmup=1, backend="eager")
    def f(x):
        return x * 3

    x = torch.arange(3.0)
    assert torch.equal(f(x), x * 3)
    assert torch.equal(f(x), x * 3)
    with pytest.raises(ValueError, match="warmup"):
        compile_with_warmup(f, warmup=-1)


def test_top_level_names_torchrl_programs_import():
    # ``from torchrl import torchrl_logger`` / ``from torchrl._utils import logger as torchrl_logger``
    assert tdrl.torchrl_logger is tdrl.logger is tdrl.tdrl_logger
    assert tdrl.compile_with_warmup is compile_with_warmup
    for name in ("implement_for", "set_auto_unwrap_transformed_env", "auto_unwrap_transformed_env", "timeit"):
        assert name in tdrl.__all__
