"""Objective benchmarks: value estimators (TorchRL's ``test_values`` and ``test_gae_speed`` workloads).

Same workload IDs and sizes as TorchRL's CPU suite, so ``--backend tdrl`` and ``--backend torchrl`` runs
can be compared with ``benchmarks/compare.py``.
"""

from __future__ import annotations

import pytest
import torch
from _backend import sub

F = sub("objectives.value.functional")


def _value_inputs(*, b: int = 300, t: int = 500, d: int = 1) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {
        "values": torch.randn(b, t, d),
        "next_values": torch.randn(b, t, d),
        "reward": torch.randn(b, t, d),
        "done": torch.zeros(b, t, d, dtype=torch.bool).bernoulli_(0.1),
    }


@pytest.mark.parametrize(
    "val_fn,has_lmbda,has_state_value",
    [
        ("generalized_advantage_estimate", True, True),
        ("vec_generalized_advantage_estimate", True, True),
        ("td0_return_estimate", False, False),
        ("td1_return_estimate", False, False),
        ("vec_td1_return_estimate", False, False),
        ("td_lambda_return_estimate", True, False),
        ("vec_td_lambda_return_estimate", True, False),
    ],
)
def test_values(benchmark, val_fn: str, has_lmbda: bool, has_state_value: bool) -> None:
    fn = getattr(F, val_fn)

    def setup():
        data = _value_inputs()
        kwargs = {
            "gamma": 0.95,
            "next_state_value": data["next_values"],
            "reward": data["reward"],
            "done": data["done"],
        }
        if has_lmbda:
            kwargs["lmbda"] = 0.95
        if has_state_value:
            kwargs["state_value"] = data["values"]
        return (), kwargs

    benchmark.pedantic(fn, setup=setup, iterations=1, rounds=50)


@pytest.mark.parametrize(
    "gae_fn,gamma_tensor,batches,timesteps",
    [
        ("generalized_advantage_estimate", False, 1, 512),
        ("vec_generalized_advantage_estimate", True, 1, 512),
        ("vec_generalized_advantage_estimate", False, 1, 512),
        ("vec_generalized_advantage_estimate", True, 32, 512),
        ("vec_generalized_advantage_estimate", False, 32, 512),
    ],
)
def test_gae_speed(benchmark, gae_fn: str, gamma_tensor: bool, batches: int, timesteps: int) -> None:
    fn = getattr(F, gae_fn)
    data = _value_inputs(b=batches, t=timesteps)
    gamma = torch.full((batches, timesteps, 1), 0.99) if gamma_tensor else 0.99
    benchmark(fn, gamma, 0.95, data["values"], data["next_values"], data["reward"], data["done"])
