"""Scenarios shared by ``test_wrappers_hooks.py`` and the TorchRL recording script (no library imports)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import distributions as D
from torch import nn

# name -> (action_space, var_nums, network outputs)
QVALUE_CASES = {
    "one_hot": ("one_hot", None, 4),
    "categorical": ("categorical", None, 4),
    "mult_one_hot": ("mult_one_hot", [2, 3], 5),
}

# name -> wrapper kwargs; "n": chunk length the actor outputs, "out": the actor's out key.
MULTISTEP_CASES = {
    "open_loop": {"wrapper": {"n_steps": 3}},
    "replan_2": {"wrapper": {"n_steps": 3, "replan_interval": 2}},
    "cycle": {"wrapper": {}, "n": 2},
    "chunk_key": {"wrapper": {"n_steps": 3}, "out": "action_chunk"},
    "keep_dim": {"wrapper": {"n_steps": 3, "keep_dim": True}},
}


def qvalue_net(n_out: int) -> nn.Linear:
    """A linear layer with deterministic weights."""
    net = nn.Linear(4, n_out)
    with torch.no_grad():
        net.weight.copy_(torch.sin(torch.arange(4 * n_out, dtype=torch.float32) * 1.3).reshape(n_out, 4))
        net.bias.copy_(torch.cos(torch.arange(n_out, dtype=torch.float32)))
    return net


class _Distributional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = qvalue_net(12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).view(-1, 3, 4).log_softmax(-2)


def distributional_net() -> nn.Module:
    """3 atoms x 4 actions of log-probabilities."""
    return _Distributional()


def multistep_actor(n: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Chunk of ``n`` actions ``obs * 10 + t`` with shape ``[batch, n, 2]``."""

    def actor(obs: torch.Tensor) -> torch.Tensor:
        t = torch.arange(n, dtype=obs.dtype).view(n, 1)
        return obs.unsqueeze(-2) * 10 + t

    return actor


def multistep_inputs() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Seven steps for a batch of 3: all reset at step 0, element 1 resets again at step 2, element 2 at 4."""
    resets = {0: [0, 1, 2], 2: [1], 4: [2]}
    steps = []
    for t in range(7):
        obs = (torch.arange(6, dtype=torch.float32).reshape(3, 2) + 100 * t) / 100
        is_init = torch.zeros(3, 1, dtype=torch.bool)
        is_init[resets.get(t, []), 0] = True
        steps.append((obs, is_init))
    return steps


def _n(loc: float = 0.0) -> D.Normal:
    return D.Normal(torch.full((2,), loc), torch.ones(2))


KL_PAIRS = [
    (_n, _n),
    (_n, lambda: D.Cauchy(torch.zeros(2), torch.ones(2))),
    (lambda: D.Independent(_n(), 1), lambda: D.Independent(_n(1.0), 1)),
    (lambda: D.Independent(_n(), 1), lambda: _n()),
    (lambda: D.Categorical(logits=torch.zeros(3)), lambda: D.Categorical(logits=torch.ones(3))),
    (
        lambda: D.TransformedDistribution(_n(), [D.transforms.TanhTransform()]),
        lambda: D.TransformedDistribution(_n(1.0), [D.transforms.TanhTransform()]),
    ),
    (
        lambda: D.TransformedDistribution(_n(), [D.transforms.TanhTransform()]),
        lambda: D.TransformedDistribution(_n(), [D.transforms.ExpTransform()]),
    ),
    (lambda: D.Beta(torch.ones(2), torch.ones(2)), lambda: D.Beta(torch.ones(2) * 2, torch.ones(2))),
]
