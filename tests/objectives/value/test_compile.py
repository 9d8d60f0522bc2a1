"""Every estimator family compiles with ``fullgraph=True`` (no graph break) and matches eager."""

from __future__ import annotations

import pytest
import torch
from _reference import ref_gae, ref_reward2go, ref_td_lambda, ref_vtrace
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.objectives.value import GAE
from tdrl.objectives.value import functional as F


def _data(shape=(2, 6, 1)):
    gen = torch.Generator().manual_seed(5)
    value, next_value, reward = (torch.randn(shape, generator=gen) for _ in range(3))
    done = torch.rand(shape, generator=gen) < 0.3
    terminated = done & (torch.rand(shape, generator=gen) < 0.5)
    return value, next_value, reward, done, terminated


def _compiled(fn, backend):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend=backend)


def test_gae_inductor():
    """The default backend once (vectorized GAE), against the reference and eager."""
    v, nv, r, d, term = _data()
    out = _compiled(F.vec_generalized_advantage_estimate, "inductor")(0.9, 0.8, v, nv, r, d, term)
    expected = ref_gae(0.9, 0.8, v.double(), nv.double(), r.double(), d, term)
    torch.testing.assert_close(out[0].double(), expected[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, F.vec_generalized_advantage_estimate(0.9, 0.8, v, nv, r, d, term))


@pytest.mark.parametrize("name", ["generalized_advantage_estimate", "td_lambda_return_estimate",
                                  "vec_td_lambda_return_estimate", "vec_td1_return_estimate", "td0_return_estimate",
                                  "vtrace_advantage_estimate", "reward2go"])  # fmt: skip
def test_families_compile(name):
    v, nv, r, d, term = _data()
    gamma = torch.full(v.shape, 0.9)  # per-step gamma, the tensor path
    args = {
        "generalized_advantage_estimate": (gamma, 0.8, v, nv, r, d, term),
        "td_lambda_return_estimate": (gamma, 0.8, nv, r, d, term),
        "vec_td_lambda_return_estimate": (gamma, 0.8, nv, r, d, term),
        "vec_td1_return_estimate": (gamma, nv, r, d, term),
        "td0_return_estimate": (gamma, nv, r, term),
        "vtrace_advantage_estimate": (gamma, 0.1 * r, 0.1 * v, v, nv, r, d, term),
        "reward2go": (r, d, gamma),
    }[name]
    fn = getattr(F, name)
    torch.testing.assert_close(_compiled(fn, "aot_eager")(*args), fn(*args))
    double = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    expected = {
        "generalized_advantage_estimate": lambda: ref_gae(*double),
        "td_lambda_return_estimate": lambda: ref_td_lambda(*double),
        "vec_td_lambda_return_estimate": lambda: ref_td_lambda(*double),
        "vec_td1_return_estimate": lambda: ref_td_lambda(double[0], 1.0, *double[1:]),
        "td0_return_estimate": lambda: double[2] + double[0] * torch.where(term, 0.0, double[1]),
        "vtrace_advantage_estimate": lambda: ref_vtrace(*double),
        "reward2go": lambda: ref_reward2go(*double),
    }[name]()
    out = fn(*args)
    torch.testing.assert_close(
        out, type(out)(e.float() for e in expected) if isinstance(out, tuple) else expected.float()
    )


@pytest.mark.parametrize("shifted", [False, True])
def test_gae_module_compiles(shifted):
    """The module forward (value-network call, tensordict reads and writes) has no graph break."""
    net = TensorDictModule(torch.nn.Linear(3, 1), ["obs"], ["state_value"])
    gen = torch.Generator().manual_seed(1)
    data = TensorDict(
        {"obs": torch.randn(2, 5, 3, generator=gen), "next": {"obs": torch.randn(2, 5, 3, generator=gen),
         "reward": torch.randn(2, 5, 1, generator=gen), "done": torch.rand(2, 5, 1, generator=gen) < 0.3}},
        [2, 5],
    )  # fmt: skip
    gae = GAE(gamma=0.9, lmbda=0.9, value_network=net, shifted=shifted)
    out = _compiled(gae, "eager")(data.clone())
    torch.testing.assert_close(out["advantage"], gae(data.clone())["advantage"])
