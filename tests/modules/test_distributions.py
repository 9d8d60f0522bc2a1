"""Tests for tdrl.modules.distributions against numeric references and TorchRL 0.14.1 golden numbers."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from tdrl.modules.distributions import (
    Delta,
    IndependentNormal,
    MaskedCategorical,
    MaskedOneHotCategorical,
    NormalParamExtractor,
    OneHotCategorical,
    ReparamGradientStrategy,
    TanhDelta,
    TanhNormal,
    TruncatedNormal,
)
from tdrl.modules.utils import biased_softplus, mappings
from tests.modules._golden import det, golden

LOC = det(3, 2, scale=2.0)
SCALE = det(3, 2, phase=1.0).abs() + 0.2
VALS = torch.tensor([[0.3, -0.999], [0.0, 0.5], [0.9999999, -1.0]])


def reference_tanh_normal_log_prob(loc, scale, y, low=-1.0, high=1.0):
    """log N(x) - log(1 - tanh(x)^2) - log(half), x = atanh(u), computed in float64 with log1p."""
    loc, scale, y = loc.double(), scale.double(), y.double()
    half, mid = (high - low) / 2, (high + low) / 2
    u = ((y - mid) / half).clamp(-1 + 1e-6, 1 - 1e-6)
    x = torch.atanh(u)
    log_det = torch.log1p(-(u**2)) + math.log(half)
    return (D.Normal(loc, scale).log_prob(x) - log_det).sum(-1)


class TestTanhNormal:
    def test_log_prob_matches_reference(self):
        y = torch.tensor([[0.3, -0.9], [0.0, 0.5], [0.99, -0.2]])
        torch.testing.assert_close(TanhNormal(LOC, SCALE).log_prob(y).double(),
                                   reference_tanh_normal_log_prob(LOC, SCALE, y), rtol=1e-5, atol=1e-4)
        y2 = y * 2.5 + 0.5
        lp = TanhNormal(LOC, SCALE, low=-2.0, high=3.0).log_prob(y2).double()
        torch.testing.assert_close(lp, reference_tanh_normal_log_prob(LOC, SCALE, y2, -2.0, 3.0), rtol=1e-5, atol=1e-4)

    def test_log_prob_matches_torchrl(self):
        torch.testing.assert_close(TanhNormal(LOC, SCALE).log_prob(VALS), golden("tanhnormal_default"))
        torch.testing.assert_close(TanhNormal(LOC, SCALE, event_dims=0).log_prob(VALS), golden("tanhnormal_event0"))
        dist = TanhNormal(LOC, SCALE, low=-2.0, high=3.0)
        torch.testing.assert_close(dist.log_prob(golden("tanhnormal_bounds_vals")), golden("tanhnormal_bounds"))
        torch.testing.assert_close(dist.deterministic_sample, golden("tanhnormal_bounds_det"))
        dist = TanhNormal(LOC, SCALE, low=0.0, high=2.0, tanh_loc=True)
        torch.testing.assert_close(dist.deterministic_sample, golden("tanhnormal_tanhloc_det"))
        torch.testing.assert_close(dist.log_prob(VALS + 1.0), golden("tanhnormal_tanhloc"))

    @pytest.mark.parametrize("safe_tanh", [True, False])
    def test_boundary_values_are_finite(self, safe_tanh):
        lp = TanhNormal(LOC, SCALE, safe_tanh=safe_tanh).log_prob(torch.tensor([[1.0, -1.0]] * 3))
        assert lp.isfinite().all()

    def test_saturated_sample_scored_exactly(self):
        # tanh(±20) rounds to ±1: the score must come from the pre-tanh draw, not from atanh(clamp(±1)).
        loc, scale = torch.tensor([20.0, -20.0]), torch.full((2,), 0.1)
        torch.manual_seed(3)
        x = (loc + torch.empty(2).normal_() * scale).double()
        ref = (D.Normal(loc.double(), scale.double()).log_prob(x) - 2 * (math.log(2) - x
               - torch.nn.functional.softplus(-2 * x))).sum()
        torch.manual_seed(3)
        dist = TanhNormal(loc, scale)
        sample = dist.rsample()
        assert (sample.abs() >= 1 - 1e-6).all()  # saturated (safe_tanh keeps it one step inside)
        torch.testing.assert_close(dist.log_prob(sample).double(), ref, rtol=1e-5, atol=1e-3)
        assert dist.log_prob(sample.clone()) < ref - 10  # a copy goes through the clamped inverse
        s2, lp2 = dist.rsample_and_log_prob((4,))
        assert s2.shape == (4, 2) and lp2.shape == (4,) and lp2.isfinite().all()

    def test_rsample_shapes_support_and_grad(self):
        loc = LOC.clone().requires_grad_()
        dist = TanhNormal(loc, SCALE, low=torch.tensor([-1.0, 0.0]), high=torch.tensor([2.0, 1.0]))
        sample = dist.rsample((5,))
        assert sample.shape == (5, 3, 2) and dist.log_prob(sample).shape == (5, 3)
        assert (sample[..., 0] >= -1).all() and (sample[..., 1] <= 1).all()
        sample.sum().backward()
        assert loc.grad is not None and loc.grad.abs().sum() > 0
        assert not dist.sample().requires_grad
        assert dist.batch_shape == (3,) and dist.event_shape == (2,)

    def test_scale_callable_and_errors(self):
        dist = TanhNormal(torch.zeros(2, 3), torch.ones_like)
        torch.testing.assert_close(dist.scale, torch.ones(2, 3))
        with pytest.raises(RuntimeError, match="high must be strictly greater"):
            TanhNormal(LOC, SCALE, low=1.0, high=-1.0)
        with pytest.raises(NotImplementedError):
            dist.entropy()  # no closed form: losses estimate it by sampling


class TestOtherContinuous:
    def test_truncated_normal_matches_torchrl(self):
        dist = TruncatedNormal(LOC, SCALE)
        y = torch.tensor([[0.3, -0.9], [0.0, 0.5], [0.99, -0.2]])
        torch.testing.assert_close(dist.log_prob(y), golden("trunc_logp"))
        torch.testing.assert_close(dist.mean, golden("trunc_mean"))
        torch.testing.assert_close(dist.entropy(), golden("trunc_entropy"))
        torch.testing.assert_close(dist.variance, golden("trunc_var"))
        assert dist.log_prob(torch.tensor([[1.5, 0.0]] * 3)).eq(-math.inf).all()
        sample = dist.rsample((100,))
        assert ((sample >= -1) & (sample <= 1)).all()

    def test_independent_normal(self):
        dist = IndependentNormal(LOC, SCALE)
        torch.testing.assert_close(dist.log_prob(VALS), D.Normal(LOC, SCALE).log_prob(VALS).sum(-1))
        torch.testing.assert_close(dist.mode, LOC)
        torch.testing.assert_close(IndependentNormal(LOC, SCALE, tanh_loc=True, upscale=1.0).mode, LOC.tanh())

    def test_delta_and_tanh_delta(self):
        dist = Delta(LOC)
        assert dist.log_prob(LOC).eq(math.inf).all() and dist.log_prob(LOC + 1).eq(-math.inf).all()
        assert dist.rsample((2,)).shape == (2, 3, 2)
        tdist = TanhDelta(LOC, low=0.0, high=2.0)
        torch.testing.assert_close(tdist.mode, golden("tanhdelta_mode"))
        assert tdist.log_prob(tdist.mode).eq(math.inf).all()
        torch.testing.assert_close(TanhDelta(LOC).sample(), LOC.tanh())
        with pytest.raises(ValueError, match="high must be strictly greater"):
            TanhDelta(LOC, low=1.0, high=1.0)


class TestNormalParamExtractor:
    def test_default_is_biased_softplus_one(self):
        x = det(4, 6, scale=3.0)
        loc, scale = NormalParamExtractor()(x)
        torch.testing.assert_close(loc, x[..., :3])
        torch.testing.assert_close(scale, golden("npe_scale"))
        _, scale0 = NormalParamExtractor()(torch.zeros(2))
        torch.testing.assert_close(scale0, torch.ones(1))  # mapping(0) == 1

    def test_other_mappings(self):
        x = det(4, 6, scale=3.0)
        _, scale = NormalParamExtractor(scale_mapping="biased_softplus_0.5_0.01", scale_lb=1e-3)(x)
        torch.testing.assert_close(scale, golden("npe_scale2"))
        _, scale = NormalParamExtractor(scale_mapping="exp")(x)
        torch.testing.assert_close(scale, golden("npe_exp"))
        assert (NormalParamExtractor(scale_lb=0.5)(torch.full((2,), -100.0))[1] >= 0.5).all()

    def test_mapping_formula(self):
        x = torch.linspace(-5, 5, 11)
        f = biased_softplus(1.0, min_val=0.01)
        bias = math.log(math.expm1(1.0 - 0.01))
        torch.testing.assert_close(f(x), torch.nn.functional.softplus(x + bias) + 0.01)
        assert callable(mappings("biased_softplus_1.0"))


class TestDiscrete:
    LOGITS = det(3, 4, scale=2.0)
    MASK = torch.tensor([[True, False, True, True], [True, True, True, True], [False, False, True, False]])

    def test_one_hot_categorical(self):
        dist = OneHotCategorical(logits=self.LOGITS)
        sample = dist.sample((50,))
        assert sample.shape == (50, 3, 4) and (sample.sum(-1) == 1).all()
        torch.testing.assert_close(dist.entropy(), golden("onehot_entropy"))
        torch.testing.assert_close(dist.log_prob(torch.eye(4)[[0, 1, 2]]),
                                   D.Categorical(logits=self.LOGITS).log_prob(torch.tensor([0, 1, 2])))
        assert (dist.mode.argmax(-1) == self.LOGITS.argmax(-1)).all()

    @pytest.mark.parametrize("grad_method", list(ReparamGradientStrategy))
    def test_one_hot_rsample_gradients(self, grad_method):
        logits = self.LOGITS.clone().requires_grad_()
        sample = OneHotCategorical(logits=logits, grad_method=grad_method).rsample()
        assert ((sample == 0) | (sample == 1)).all() and (sample.sum(-1) == 1).all()
        (sample * torch.arange(4.0)).sum().backward()
        assert logits.grad is not None and logits.grad.abs().sum() > 0

    @pytest.mark.parametrize("cls", [MaskedCategorical, MaskedOneHotCategorical])
    def test_masked_never_samples_masked_actions(self, cls):
        dist = cls(logits=torch.zeros(3, 4), mask=self.MASK)
        sample = dist.sample((500,))
        index = sample.argmax(-1) if cls is MaskedOneHotCategorical else sample
        allowed = self.MASK.expand(500, 3, 4).gather(-1, index.unsqueeze(-1))
        assert allowed.all()
        mode = dist.mode.argmax(-1) if cls is MaskedOneHotCategorical else dist.mode
        assert self.MASK.gather(-1, mode.unsqueeze(-1)).all()

    def test_masked_log_prob_and_entropy_match_torchrl(self):
        dist = MaskedCategorical(logits=self.LOGITS, mask=self.MASK)
        torch.testing.assert_close(dist.log_prob(torch.tensor([0, 3, 2])), golden("masked_logp"))
        torch.testing.assert_close(dist.entropy(), golden("masked_entropy"))
        assert dist.log_prob(torch.tensor([1, 0, 0]))[[0, 2]].eq(-math.inf).all()
        assert dist.log_prob(dist.sample((7,))).shape == (7, 3)

    def test_masked_probs_and_sparse_indices(self):
        probs = self.LOGITS.softmax(-1)
        dense = MaskedCategorical(probs=probs, mask=self.MASK)
        torch.testing.assert_close(dense.probs.sum(-1), torch.ones(3))
        indices = torch.tensor([[0, 2], [1, 3], [2, 3]])
        sparse = MaskedCategorical(logits=self.LOGITS, indices=indices)
        assert (sparse.sample((100,)).unsqueeze(-1) == indices).any(-1).all()
        assert sparse.log_prob(torch.tensor([1, 0, 0])).eq(-math.inf).all()
        with pytest.raises(ValueError, match="exactly one of `mask` or `indices`"):
            MaskedCategorical(logits=self.LOGITS)


def test_ordinal_logits_match_definition():
    from tdrl.modules import OneHotOrdinal, Ordinal

    scores = det(2, 5, scale=2.0)
    logsig = torch.nn.functional.logsigmoid
    ref = torch.stack([logsig(scores[..., : k + 1]).sum(-1) + logsig(-scores[..., k + 1 :]).sum(-1)
                       for k in range(5)], -1)
    torch.testing.assert_close(Ordinal(scores).logits, ref - ref.logsumexp(-1, keepdim=True))
    dist = OneHotOrdinal(scores)
    assert dist.sample((3,)).shape == (3, 2, 5)
    torch.testing.assert_close(dist.logits, Ordinal(scores).logits)


@pytest.mark.parametrize("loc,scale", [(-1.0, 0.5), (0.0, 0.3), (1.5, 0.7)])
def test_tanh_normal_density_integrates_to_one(loc, scale):
    low, high = -2.0, 3.0
    dist = TanhNormal(torch.tensor([loc], dtype=torch.float64), torch.tensor([scale], dtype=torch.float64),
                      low=low, high=high, event_dims=0)
    edges = torch.linspace(low, high, 200_001, dtype=torch.float64)
    mids = ((edges[1:] + edges[:-1]) / 2).unsqueeze(-1)
    mass = (dist.log_prob(mids).exp().squeeze(-1) * (edges[1:] - edges[:-1])).sum()
    assert mass.item() == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize("seed", range(5))
def test_tanh_normal_log_prob_random_parameters(seed):
    gen = torch.Generator().manual_seed(seed)
    loc = torch.randn(16, 3, generator=gen) * 3
    scale = torch.rand(16, 3, generator=gen) * 2 + 0.05
    y = torch.rand(16, 3, generator=gen) * 1.98 - 0.99
    torch.testing.assert_close(TanhNormal(loc, scale).log_prob(y).double(),
                               reference_tanh_normal_log_prob(loc, scale, y), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("loc,scale", [(0.3, 0.2), (-1.0, 0.5), (0.5, 1.2), (0.0, 2.0)])
def test_tanh_normal_mode_maximises_density(loc, scale):
    dist = TanhNormal(torch.tensor([loc], dtype=torch.float64), torch.tensor([scale], dtype=torch.float64),
                      low=-2.0, high=3.0, event_dims=0)
    grid = torch.linspace(-2.0, 3.0, 100_001, dtype=torch.float64)[1:-1].unsqueeze(-1)
    # The mode scores at least as high as the best grid point (ties between symmetric modes are fine).
    assert dist.log_prob(dist.mode.unsqueeze(-1)).item() >= dist.log_prob(grid).max().item() - 1e-6


def test_tanh_normals_with_the_same_bounds_share_their_squashing() -> None:
    """``same_squashing``: then KL(p || q) is the KL of the pre-tanh normals (what KLPEN uses, and what
    TorchRL's TransformedDistribution-based TanhNormal computes); other bounds or types do not qualify."""
    import torch.distributions as D

    from tdrl.modules.distributions import same_squashing

    g = torch.Generator().manual_seed(0)
    loc_p, loc_q = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    scale_p, scale_q = torch.rand(5, 3, generator=g) + 0.1, torch.rand(5, 3, generator=g) + 0.1
    p = TanhNormal(loc_p, scale_p, low=-2.0, high=2.0)
    q = TanhNormal(loc_q, scale_q, low=-2.0, high=2.0)
    assert same_squashing(p, q)
    expected = D.kl_divergence(D.Independent(D.Normal(loc_p, scale_p), 1), D.Independent(D.Normal(loc_q, scale_q), 1))
    torch.testing.assert_close(D.kl_divergence(p.base_dist, q.base_dist), expected)
    assert not same_squashing(p, TanhNormal(loc_q, scale_q, low=-1.0, high=1.0))
    assert not same_squashing(p, D.Independent(D.Normal(loc_q, scale_q), 1))


def test_tanh_delta_min_max_are_low_high() -> None:
    """TorchRL's multi-agent tutorials build ``TanhDelta`` with ``min``/``max`` through ``distribution_kwargs``."""
    param = torch.randn(4, 3)
    named = TanhDelta(param, min=-2.0, max=torch.full((3,), 3.0))
    plain = TanhDelta(param, low=-2.0, high=torch.full((3,), 3.0))
    torch.testing.assert_close(named.mode, plain.mode)
    assert bool((named.mode > -2.0).all() and (named.mode < 3.0).all())
    with pytest.raises(TypeError, match="low= or min="):
        TanhDelta(param, low=-3.0, min=-2.0)
