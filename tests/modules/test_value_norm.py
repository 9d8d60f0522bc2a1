"""Value normalisers: running statistics against direct computation, inverses, state_dict names, errors,
and their use as ``advantage_norm`` of the PPO family."""

from __future__ import annotations

import pytest
import torch

from tdrl.modules import PercentileValueNorm, PopArtValueNorm, RunningValueNorm, ValueNorm

from .record_value_norm_golden import SCENARIO

NORMS = [PopArtValueNorm, RunningValueNorm, PercentileValueNorm]


def _batches(n: int = 5, shape=(16, 3, 1)) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(*shape, generator=g) * (i + 1) * 3.0 + i for i in range(n)]


def test_running_norm_is_the_exact_mean_and_population_variance_of_all_batches() -> None:
    norm = RunningValueNorm()
    batches = _batches()
    for b in batches:
        norm.update(b)
    everything = torch.cat([b.reshape(-1) for b in batches])
    torch.testing.assert_close(norm.mean, everything.mean().reshape(1))
    torch.testing.assert_close(norm.scale(), everything.var(unbiased=False).sqrt().reshape(1))
    assert float(norm.count) == everything.numel()


def test_popart_norm_is_the_debiased_exponential_average() -> None:
    beta = 0.9
    norm = PopArtValueNorm(beta=beta)
    batches = _batches()
    for b in batches:
        norm.update(b)
    weights = torch.tensor([beta ** (len(batches) - 1 - i) * (1 - beta) for i in range(len(batches))])
    means = torch.stack([b.mean() for b in batches])
    squares = torch.stack([b.pow(2).mean() for b in batches])
    mean = (weights * means).sum() / weights.sum()
    var = (weights * squares).sum() / weights.sum() - mean**2
    torch.testing.assert_close(norm.scale(), var.sqrt().reshape(1))
    torch.testing.assert_close(norm.normalize(mean.reshape(1, 1)), torch.zeros(1, 1), atol=1e-5, rtol=0)


def test_percentile_norm_moves_towards_the_batch_quantiles() -> None:
    norm = PercentileValueNorm(rate=0.5, min_scale=1e-3)
    x = torch.arange(101.0).unsqueeze(-1)
    norm.update(x)
    torch.testing.assert_close(norm.low, torch.tensor([2.5]))
    torch.testing.assert_close(norm.high, torch.tensor([47.5]))
    torch.testing.assert_close(norm.scale(), torch.tensor([45.0]))
    assert PercentileValueNorm().scale().item() == 1.0  # min_scale bounds the divisor from below
    centred = PercentileValueNorm(rate=1.0, center=True)
    centred.update(x)
    torch.testing.assert_close(centred.normalize(torch.tensor([[50.0]])), torch.tensor([[0.5]]))


@pytest.mark.parametrize("cls", NORMS)
def test_denormalize_inverts_normalize_and_shapes_are_per_element(cls) -> None:
    norm = cls(shape=(2,), **({"rate": 1.0} if cls is PercentileValueNorm else {}))
    for b in _batches(shape=(32, 2)):
        norm.update(b)
    assert norm.scale().shape == (2,)
    x = torch.randn(7, 2)
    torch.testing.assert_close(norm.denormalize(norm.normalize(x)), x, atol=1e-4, rtol=1e-5)
    x.requires_grad_(True)
    norm.update(x)  # no gradient through the statistics
    assert not any(b.requires_grad for b in norm.buffers())


@pytest.mark.parametrize("cls", NORMS)
def test_a_wrong_trailing_shape_is_refused_with_both_shapes(cls) -> None:
    norm = cls(shape=1)
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(1,\)"):
        norm.update(torch.zeros(4, 3))


@pytest.mark.parametrize("cls", NORMS)
def test_state_dict_round_trip_keeps_the_statistics(cls) -> None:
    norm = cls()
    for b in _batches():
        norm.update(b)
    fresh = cls()
    fresh.load_state_dict(norm.state_dict())
    torch.testing.assert_close(fresh.scale(), norm.scale())


def test_buffer_names_are_torchrl_s() -> None:
    assert set(PopArtValueNorm().state_dict()) == {"running_mean", "running_mean_sq", "debiasing_term"}
    assert set(RunningValueNorm().state_dict()) == {"mean", "m2", "count"}
    assert set(PercentileValueNorm().state_dict()) == {"low", "high"}


def test_percentile_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="quantiles"):
        PercentileValueNorm(quantiles=(0.9, 0.1))
    with pytest.raises(ValueError, match="rate"):
        PercentileValueNorm(rate=2.0)
    with pytest.raises(ValueError, match="min_scale"):
        PercentileValueNorm(min_scale=0.0)


def test_value_norm_is_abstract() -> None:
    with pytest.raises(TypeError):
        ValueNorm()


def test_clip_ppo_divides_the_advantage_by_the_norm_scale() -> None:
    from tdrl.objectives import ClipPPOLoss

    from ..objectives._cases import actor, critic
    from ..objectives.test_golden_torchrl import _on_td

    torch.manual_seed(0)
    pi, v = actor(), critic()
    td = _on_td().rename_key_("obs", "observation")
    td["next"].rename_key_("obs", "observation")
    td["sample_log_prob"] = td["action_log_prob"]
    norm = RunningValueNorm()
    norm.update(torch.full((4, 1), 10.0))
    norm.update(torch.full((4, 1), -10.0))  # scale 10
    with_norm = ClipPPOLoss(pi, v, advantage_norm=norm, entropy_coeff=0.0)
    plain = ClipPPOLoss(pi, v, entropy_coeff=0.0)
    scaled = td.clone()
    scaled["advantage"] = td["advantage"] / 10.0
    torch.testing.assert_close(with_norm(td.clone())["loss_objective"], plain(scaled)["loss_objective"])


def test_matches_torchrl_golden() -> None:
    """Six batches through each normaliser, against TorchRL 0.14.1's outputs and state_dict
    (recorded by ``record_value_norm_golden.py``)."""
    from pathlib import Path

    golden = torch.load(Path(__file__).with_name("value_norm_torchrl_0_14_1.pt"))
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(32, 5, 2, generator=g) * (i + 1) + i for i in range(6)]
    x = torch.randn(7, 2, generator=g)
    for cls in NORMS:
        norm = cls(shape=2, **SCENARIO[cls.__name__])
        for b in batches:
            norm.update(b)
        ref = golden[cls.__name__]
        torch.testing.assert_close(norm.scale(), ref["scale"])
        torch.testing.assert_close(norm.normalize(x), ref["normalize"])
        torch.testing.assert_close(norm.denormalize(x), ref["denormalize"])
        assert norm.state_dict().keys() == ref["state_dict"].keys()
        for key, value in ref["state_dict"].items():
            torch.testing.assert_close(norm.state_dict()[key], value, msg=key)
