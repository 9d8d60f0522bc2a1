"""Golden tests: every functional estimator against the step-by-step references in ``_reference.py``."""

from __future__ import annotations

import pytest
import torch
from _reference import ref_gae, ref_reward2go, ref_td_lambda, ref_vtrace
from hypothesis import given, settings
from hypothesis import strategies as st

from tdrl.objectives.value import functional as F

SHAPES = [(3, 11, 1), (2, 3, 9, 1), (4, 8, 2), (1, 1, 1), (2, 33, 1)]


def _data(shape, *, p_done=0.25, p_term=0.5, dtype=torch.float64):
    gen = torch.Generator().manual_seed(hash(shape) % 2**31)
    value, next_value, reward = (torch.randn(shape, generator=gen, dtype=dtype) for _ in range(3))
    done = torch.rand(shape, generator=gen) < p_done
    # terminated is a subset of done: the other done steps are truncations
    terminated = done & (torch.rand(shape, generator=gen) < p_term)
    return value, next_value, reward, done, terminated


def _coef(kind, base, shape, dtype=torch.float64):
    if kind == "float":
        return base
    if kind == "scalar_tensor":
        return torch.tensor(base, dtype=dtype)
    gen = torch.Generator().manual_seed(7)
    return base * (0.8 + 0.2 * torch.rand(shape, generator=gen, dtype=dtype))


def _move(x, time_dim):
    return x.movedim(-2, time_dim) if isinstance(x, torch.Tensor) and x.ndim else x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "scalar_tensor", "tensor"])
@pytest.mark.parametrize("lmbda", [0.0, 0.9, 1.0, "tensor"])
@pytest.mark.parametrize("with_terminated", [True, False])
def test_gae(shape, gamma_kind, lmbda, with_terminated):
    value, next_value, reward, done, terminated = _data(shape)
    terminated = terminated if with_terminated else None
    gamma = _coef(gamma_kind, 0.97, shape)
    lmbda = _coef("tensor", 0.9, shape) if lmbda == "tensor" else lmbda
    expected = ref_gae(gamma, lmbda, value, next_value, reward, done, terminated)
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, target = fn(gamma, lmbda, value, next_value, reward, done, terminated)
        torch.testing.assert_close(adv, expected[0])
        torch.testing.assert_close(target, expected[1])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "scalar_tensor", "tensor"])
@pytest.mark.parametrize("lmbda", [0.0, 0.5, 1.0, "tensor"])
@pytest.mark.parametrize("with_terminated", [True, False])
def test_td_lambda(shape, gamma_kind, lmbda, with_terminated):
    value, next_value, reward, done, terminated = _data(shape)
    terminated = terminated if with_terminated else None
    gamma = _coef(gamma_kind, 0.97, shape)
    lmbda = _coef("tensor", 0.9, shape) if lmbda == "tensor" else lmbda
    expected = ref_td_lambda(gamma, lmbda, next_value, reward, done, terminated)
    for fn in (F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate):
        torch.testing.assert_close(fn(gamma, lmbda, next_value, reward, done, terminated), expected)
    for fn in (F.td_lambda_advantage_estimate, F.vec_td_lambda_advantage_estimate):
        out = fn(gamma, lmbda, value, next_value, reward, done, terminated)
        torch.testing.assert_close(out, expected - value)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "scalar_tensor", "tensor"])
@pytest.mark.parametrize("with_terminated", [True, False])
def test_td1(shape, gamma_kind, with_terminated):
    value, next_value, reward, done, terminated = _data(shape)
    terminated = terminated if with_terminated else None
    gamma = _coef(gamma_kind, 0.97, shape)
    expected = ref_td_lambda(gamma, 1.0, next_value, reward, done, terminated)
    for fn in (F.td1_return_estimate, F.vec_td1_return_estimate):
        torch.testing.assert_close(fn(gamma, next_value, reward, done, terminated), expected)
    for fn in (F.td1_advantage_estimate, F.vec_td1_advantage_estimate):
        torch.testing.assert_close(fn(gamma, value, next_value, reward, done, terminated), expected - value)


@pytest.mark.parametrize("shape", [(3, 7, 1), (2, 2, 6, 2)])
@pytest.mark.parametrize("lmbda", [0.0, 0.6, 1.0, "tensor"])
def test_td_lambda_non_rolling(shape, lmbda):
    value, next_value, reward, done, terminated = _data(shape)
    gamma = _coef("tensor", 0.95, shape)
    lmbda = _coef("tensor", 0.9, shape) if lmbda == "tensor" else lmbda
    expected = ref_td_lambda(gamma, lmbda, next_value, reward, done, terminated, rolling=False)
    for fn in (F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate):
        out = fn(gamma, lmbda, next_value, reward, done, terminated, rolling_gamma=False)
        torch.testing.assert_close(out, expected)
    if isinstance(lmbda, float) and lmbda == 1.0:
        for fn in (F.td1_return_estimate, F.vec_td1_return_estimate):
            torch.testing.assert_close(fn(gamma, next_value, reward, done, terminated, False), expected)


@pytest.mark.parametrize("fn", [F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate])
def test_non_rolling_needs_per_step_gamma(fn):
    _, next_value, reward, done, _ = _data((2, 5, 1))
    with pytest.raises(RuntimeError, match="rolling_gamma=False"):
        fn(0.9, 0.9, next_value, reward, done, rolling_gamma=False)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "tensor"])
def test_td0(shape, gamma_kind):
    value, next_value, reward, done, terminated = _data(shape)
    gamma = _coef(gamma_kind, 0.9, shape)
    expected = reward + gamma * torch.where(terminated, 0.0, next_value)
    torch.testing.assert_close(F.td0_return_estimate(gamma, next_value, reward, terminated), expected)
    torch.testing.assert_close(F.td0_return_estimate(gamma, next_value, reward, done=terminated), expected)
    out = F.td0_advantage_estimate(gamma, value, next_value, reward, done, terminated)
    torch.testing.assert_close(out, expected - value)
    # terminated defaults to done
    out = F.td0_advantage_estimate(gamma, value, next_value, reward, terminated)
    torch.testing.assert_close(out, expected - value)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "tensor"])
@pytest.mark.parametrize("thresholds", [(1.0, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize("with_terminated", [True, False])
def test_vtrace(shape, gamma_kind, thresholds, with_terminated):
    value, next_value, reward, done, terminated = _data(shape)
    terminated = terminated if with_terminated else None
    gamma = _coef(gamma_kind, 0.9, shape)
    log_pi, log_mu = (
        0.5 * torch.randn(shape, dtype=torch.float64),
        0.5 * torch.randn(shape, dtype=torch.float64),
    )
    rho, c = thresholds
    expected = ref_vtrace(gamma, log_pi, log_mu, value, next_value, reward, done, terminated, rho, c)
    out = F.vtrace_advantage_estimate(
        gamma, log_pi, log_mu, value, next_value, reward, done, terminated, rho_thresh=rho, c_thresh=c
    )
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma_kind", ["float", "tensor"])
def test_reward2go(shape, gamma_kind):
    _, _, reward, done, _ = _data(shape)
    gamma = _coef(gamma_kind, 0.9, shape)
    torch.testing.assert_close(F.reward2go(reward, done, gamma), ref_reward2go(reward, done, gamma))


@pytest.mark.parametrize("time_dim", [0, 1, -1, -3])
def test_time_dim(time_dim):
    """Same values whichever dimension holds time (inputs permuted accordingly)."""
    shape = (3, 10, 2)
    value, next_value, reward, done, terminated = _data(shape)
    gamma = _coef("tensor", 0.97, shape)
    args = [_move(x, time_dim) for x in (gamma, value, next_value, reward, done, terminated)]
    g, v, nv, r, d, term = args
    adv, target = ref_gae(gamma, 0.9, value, next_value, reward, done, terminated)
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        out = fn(g, 0.9, v, nv, r, d, term, time_dim=time_dim)
        torch.testing.assert_close(out[0], _move(adv, time_dim))
        torch.testing.assert_close(out[1], _move(target, time_dim))
    ret = ref_td_lambda(gamma, 0.9, next_value, reward, done, terminated)
    for fn in (F.td_lambda_return_estimate, F.vec_td_lambda_return_estimate):
        torch.testing.assert_close(fn(g, 0.9, nv, r, d, term, time_dim=time_dim), _move(ret, time_dim))
    ret1 = ref_td_lambda(gamma, 1.0, next_value, reward, done, terminated)
    for fn in (F.td1_return_estimate, F.vec_td1_return_estimate):
        torch.testing.assert_close(fn(g, nv, r, d, term, time_dim=time_dim), _move(ret1, time_dim))
    vt = ref_vtrace(gamma, reward, value, value, next_value, reward, done, terminated)
    out = F.vtrace_advantage_estimate(g, r, v, v, nv, r, d, term, time_dim=time_dim)
    torch.testing.assert_close(out, tuple(_move(x, time_dim) for x in vt))
    torch.testing.assert_close(
        F.reward2go(r, d, g, time_dim=time_dim), _move(ref_reward2go(reward, done, gamma), time_dim)
    )


def test_two_dim_batch_time_last():
    """A ``[B, T]`` batch without feature dimension, time last."""
    value, next_value, reward, done, terminated = _data((4, 12))
    exp = ref_gae(0.9, 0.8, *(x.unsqueeze(-1) for x in (value, next_value, reward, done, terminated)))
    for fn in (F.generalized_advantage_estimate, F.vec_generalized_advantage_estimate):
        adv, _ = fn(0.9, 0.8, value, next_value, reward, done, terminated, time_dim=-1)
        torch.testing.assert_close(adv, exp[0].squeeze(-1))


def test_long_horizon_float32_is_stable():
    """Long trajectories with tiny discounts: products underflow to 0, results stay finite and exact."""
    value, next_value, reward, done, terminated = _data((4, 1000, 1), p_done=0.001, dtype=torch.float32)
    for gamma, lmbda in [(0.99, 0.95), (0.3, 0.2), (1.0, 1.0)]:
        exp = ref_gae(
            gamma,
            lmbda,
            *(
                x.double() if x.is_floating_point() else x
                for x in (value, next_value, reward, done, terminated)
            ),
        )
        adv, _ = F.vec_generalized_advantage_estimate(
            gamma, lmbda, value, next_value, reward, done, terminated
        )
        assert torch.isfinite(adv).all()
        torch.testing.assert_close(adv.double(), exp[0], rtol=1e-4, atol=1e-3)


def test_benchmark_sizes_vec_equals_loop():
    """The benchmark workload ([300, 500, 1], float32, terminated defaulting to done)."""
    value, next_value, reward, done, _ = _data((300, 500, 1), p_done=0.1, dtype=torch.float32)
    loop = F.generalized_advantage_estimate(0.95, 0.95, value, next_value, reward, done)
    vec = F.vec_generalized_advantage_estimate(0.95, 0.95, value, next_value, reward, done)
    torch.testing.assert_close(vec, loop, rtol=1e-5, atol=1e-5)
    loop = F.td_lambda_return_estimate(0.95, 0.95, next_value, reward, done)
    vec = F.vec_td_lambda_return_estimate(0.95, 0.95, next_value, reward, done)
    torch.testing.assert_close(vec, loop, rtol=1e-5, atol=1e-5)


def test_errors_name_the_arguments():
    value, next_value, reward, done, terminated = _data((2, 5, 1))
    with pytest.raises(RuntimeError, match=r"reward=\(2, 4, 1\)"):
        F.vec_generalized_advantage_estimate(0.9, 0.9, value, next_value, reward[:, :4], done)
    with pytest.raises(TypeError, match="done must be a torch.bool tensor"):
        F.generalized_advantage_estimate(0.9, 0.9, value, next_value, reward, done.float())
    with pytest.raises(TypeError, match="terminated must be a torch.bool"):
        F.td_lambda_return_estimate(0.9, 0.9, next_value, reward, done, terminated.long())
    with pytest.raises(ValueError, match="time_dim=3"):
        F.vec_td1_return_estimate(0.9, next_value, reward, done, time_dim=3)
    with pytest.raises(ValueError, match=r"gamma must be a scalar or broadcastable.*\(3,\)"):
        F.vec_td_lambda_return_estimate(torch.ones(3), 0.9, next_value, reward, done)
    with pytest.raises(TypeError, match="lmbda must be a number or a tensor"):
        F.td_lambda_return_estimate(0.9, "0.9", next_value, reward, done)
    with pytest.raises(TypeError, match="pass `terminated`"):
        F.td0_return_estimate(0.9, next_value, reward)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    num_steps=st.integers(1, 70),
    p_done=st.floats(0.0, 1.0),
    gamma=st.floats(0.0, 1.0),
    lmbda=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_vectorized_equals_loop_property(batch, num_steps, p_done, gamma, lmbda, seed):
    shape = (*batch, num_steps, 1)
    gen = torch.Generator().manual_seed(seed)
    value, next_value, reward = (torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(3))
    done = torch.rand(shape, generator=gen) < p_done
    terminated = done & (torch.rand(shape, generator=gen) < 0.5)
    loop = F.generalized_advantage_estimate(gamma, lmbda, value, next_value, reward, done, terminated)
    vec = F.vec_generalized_advantage_estimate(gamma, lmbda, value, next_value, reward, done, terminated)
    torch.testing.assert_close(vec, loop)
    loop = F.td_lambda_return_estimate(gamma, lmbda, next_value, reward, done, terminated)
    vec = F.vec_td_lambda_return_estimate(gamma, lmbda, next_value, reward, done, terminated)
    torch.testing.assert_close(vec, loop)
    torch.testing.assert_close(vec, ref_td_lambda(gamma, lmbda, next_value, reward, done, terminated))
