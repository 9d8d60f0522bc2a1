"""The scenario of ``test_call_styles.py``, built from either library (``lib`` is ``"tdrl"`` or ``"torchrl"``)."""

from __future__ import annotations

import importlib
from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

N = 4


def _linear(n_in: int, n_out: int, phase: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    with torch.no_grad():
        layer.weight.copy_(
            torch.sin(torch.arange(n_in * n_out, dtype=torch.float32) + phase).reshape(n_out, n_in)
        )
        layer.bias.copy_(torch.cos(torch.arange(n_out, dtype=torch.float32) + phase) / 2)
    return layer


def networks(lib: str) -> tuple[Any, Any]:
    """A TanhNormal actor and a state-value critic with deterministic weights."""
    modules = importlib.import_module(f"{lib}.modules")
    actor = modules.ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(_linear(3, 4, 0.0), NormalParamExtractor()), ["observation"], ["loc", "scale"]
        ),
        in_keys=["loc", "scale"],
        distribution_class=modules.TanhNormal,
        return_log_prob=True,
    )
    critic = modules.ValueOperator(_linear(3, 1, 1.0), in_keys=["observation"])
    return actor, critic


def keyword_inputs() -> dict[str, torch.Tensor]:
    """The inputs of a keyword call, named as TorchRL's dispatch names them."""
    g = torch.Generator().manual_seed(1)
    return {
        "observation": torch.randn(N, 3, generator=g),
        "next_observation": torch.randn(N, 3, generator=g),
        "action": torch.rand(N, 2, generator=g) * 0.5,
        "action_log_prob": torch.randn(N, generator=g),
        "next_reward": torch.randn(N, 1, generator=g),
        "next_done": torch.zeros(N, 1, dtype=torch.bool),
        "next_terminated": torch.zeros(N, 1, dtype=torch.bool),
    }


# loss name -> constructor kwargs; every loss here runs with functional=False too.
LOSSES = {"PPOLoss": {"entropy_bonus": False}, "ClipPPOLoss": {"entropy_bonus": False}, "A2CLoss": {}}


def outputs(lib: str, name: str, functional: bool = True) -> list[float]:
    """The keyword call's outputs (in ``out_keys`` order) as floats."""
    objectives = importlib.import_module(f"{lib}.objectives")
    actor, critic = networks(lib)
    loss = getattr(objectives, name)(actor, critic, functional=functional, **LOSSES[name])
    kwargs = keyword_inputs()
    if name == "A2CLoss":
        kwargs.pop("action_log_prob")
    torch.manual_seed(0)
    return [float(x.detach()) for x in loss(**kwargs)]
