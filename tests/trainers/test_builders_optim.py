"""The presets' Adam (``builders._adam``): the fused kernel on CPU, same update as the per-tensor loop."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from tdrl.trainers.builders import _adam


def _cfg(lr: float = 1e-2) -> SimpleNamespace:
    return SimpleNamespace(optim=SimpleNamespace(lr=lr, weight_decay=0.0))


def test_preset_adam_is_fused_on_cpu_and_steps_like_the_default():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref.load_state_dict(net.state_dict())
    fused = _adam(_cfg(), net.parameters())  # a generator, as the builders pass it
    assert fused.defaults["fused"] is True
    plain = torch.optim.Adam(ref.parameters(), lr=1e-2)
    x = torch.randn(16, 4)
    for _ in range(5):
        for model, opt in ((net, fused), (ref, plain)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    for a, b in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
