"""Tests for consistent dropout (mask reuse between rollout and update)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.modules import ConsistentDropout, ConsistentDropoutModule


def test_mask_is_scaled_and_reused():
    drop = ConsistentDropout(0.25)
    y, mask = drop(torch.ones(2000))
    kept = mask[mask != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 1 / 0.75))
    assert 0.2 < (mask == 0).float().mean() < 0.3
    torch.testing.assert_close(drop(torch.full((2000,), 2.0), mask=mask)[0], 2 * y)
    drop.eval()
    x = torch.randn(5)
    assert drop(x) is x
    with pytest.raises(ValueError, match="p must be in"):
        ConsistentDropout(1.0)


def test_module_keys_eval_and_primer():
    mod = ConsistentDropoutModule(0.5, in_keys="x", input_shape=(3,))
    mask_key = mod.in_keys[1]
    td = mod(TensorDict(x=torch.ones(4, 3), batch_size=[4]))
    assert mask_key in td.keys()
    replay = mod(TensorDict({"x": torch.ones(4, 3), mask_key: td[mask_key]}, batch_size=[4]))
    torch.testing.assert_close(replay["x"], td["x"])
    mod.eval()
    assert torch.equal(mod(TensorDict(x=torch.ones(4, 3), batch_size=[4]))["x"], torch.ones(4, 3))
    primer = mod.make_tensordict_primer()
    filled = primer._fill(mask_key, torch.Size([]))
    assert filled.shape == (3,) and set(filled.unique().tolist()) <= {0.0, 2.0}
    with pytest.raises(RuntimeError, match="input_shape"):
        ConsistentDropoutModule(0.5, in_keys="x").make_tensordict_primer()
    with pytest.raises(ValueError, match="two in_keys"):
        ConsistentDropoutModule(0.5, in_keys=["x", "m", "z"])
