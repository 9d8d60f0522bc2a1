import multiprocessing as mp

import pytest
import torch

from tdrl._utils.processes import default_start_method


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="the platform has no fork")
def test_fork_unless_cuda_is_initialised(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert default_start_method() == "fork"
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert default_start_method() == "spawn"
