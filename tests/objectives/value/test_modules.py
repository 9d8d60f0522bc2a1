"""The value-estimator modules: keys, value-network calls, shifted layout, flags, TorchRL golden values."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
)

from tdrl.objectives.value import (
    GAE,
    MultiAgentGAE,
    TD0Estimate,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    VTrace,
)
from tdrl.objectives.value import functional as F

B, T, D = 3, 9, 4


def _net(obs_dim: int = D) -> TensorDictModule:
    torch.manual_seed(3)
    return TensorDictModule(torch.nn.Linear(obs_dim, 1), ["obs"], ["state_value"])


def _data(*, truncations: bool = True, batch=(B, T)) -> TensorDict:
    gen = torch.Generator().manual_seed(11)
    done = torch.rand(*batch, 1, generator=gen) < 0.25
    terminated = done & (torch.rand(*batch, 1, generator=gen) < 0.5) if truncations else done.clone()
    # a rollout: obs[t + 1] is next_obs[t], except after a done (the env was reset)
    next_obs = torch.randn(*batch, D, generator=gen)
    reset_obs = torch.randn(*batch, D, generator=gen)
    obs = torch.cat([torch.randn(*batch[:-1], 1, D, generator=gen), next_obs[..., :-1, :]], -2)
    obs = torch.where(torch.cat([torch.zeros_like(done[..., :1, :]), done[..., :-1, :]], -2), reset_obs, obs)
    return TensorDict(
        {
            "obs": obs,
            "next": {
                "obs": next_obs,
                "reward": torch.randn(*batch, 1, generator=gen),
                "done": done,
                "terminated": terminated,
            },
        },
        list(batch),
    )


def _values(net, data):
    with torch.no_grad():
        return net(data.clone())["state_value"], net(data["next"].clone())["state_value"]


ESTIMATORS = {
    "gae": lambda net, **kw: GAE(gamma=0.9, lmbda=0.8, value_network=net, **kw),
    "td0": lambda net, **kw: TD0Estimator(gamma=0.9, value_network=net, **kw),
    "td1": lambda net, **kw: TD1Estimator(gamma=0.9, value_network=net, **kw),
    "td_lambda": lambda net, **kw: TDLambdaEstimator(gamma=0.9, lmbda=0.8, value_network=net, **kw),
}


def _expected(kind, data, value, next_value):
    nxt = data["next"]
    r, d, term = nxt["reward"], nxt["done"], nxt["terminated"]
    if kind == "gae":
        return F.generalized_advantage_estimate(0.9, 0.8, value, next_value, r, d, term)
    if kind == "td0":
        target = F.td0_return_estimate(0.9, next_value, r, term)
    elif kind == "td1":
        target = F.td1_return_estimate(0.9, next_value, r, d, term)
    else:
        target = F.td_lambda_return_estimate(0.9, 0.8, next_value, r, d, term)
    return target - value, target


@pytest.mark.parametrize("kind", list(ESTIMATORS))
def test_matches_functional_and_writes_keys(kind):
    net, data = _net(), _data()
    value, next_value = _values(net, data)
    out = ESTIMATORS[kind](net)(data)
    adv, target = _expected(kind, data, value, next_value)
    torch.testing.assert_close(out["advantage"], adv)
    torch.testing.assert_close(out["value_target"], target)
    torch.testing.assert_close(out["state_value"], value)
    torch.testing.assert_close(out["next", "state_value"], next_value)
    torch.testing.assert_close(ESTIMATORS[kind](net).value_estimate(_data()), target)


@pytest.mark.parametrize("kind", ["gae", "td_lambda"])
def test_vectorized_flag_same_values(kind):
    net = _net()
    vec = ESTIMATORS[kind](net, vectorized=True)(_data())
    loop = ESTIMATORS[kind](net, vectorized=False)(_data())
    torch.testing.assert_close(vec["advantage"], loop["advantage"])


@pytest.mark.parametrize("kind", list(ESTIMATORS))
def test_shifted_equals_two_calls(kind):
    """Without internal truncations (or with budget for them) one shifted call gives the same values."""
    net = _net()
    ref = ESTIMATORS[kind](net)(_data())
    out = ESTIMATORS[kind](net, shifted=True, shifted_budget=T)(_data())
    assert out["shifted_valid"].all()
    for key in ("advantage", "value_target", "state_value"):
        torch.testing.assert_close(out[key], ref[key])
    # after a termination the next slot holds the reset state (its value is masked out anyway)
    live = ~_data()["next", "terminated"]
    torch.testing.assert_close(out["next", "state_value"][live], ref["next", "state_value"][live])
    plain = ESTIMATORS[kind](net, shifted=True)(_data(truncations=False))
    torch.testing.assert_close(
        plain["advantage"], ESTIMATORS[kind](net)(_data(truncations=False))["advantage"]
    )


# Golden values from TorchRL 0.14.1 (script run once in its venv): one trajectory of 6 steps with a
# truncation at t=1 and a termination at t=3, linear value net, gamma=0.9, lmbda=0.8.
_GOLDEN_ADV = [-0.7858, -0.3928, -1.3307, -0.2181, 2.2077, 1.1986]
_GOLDEN_TARGET = [-0.9358, -0.0072, 0.0193, 0.2, 1.0577, 0.7482]
_GOLDEN_SHIFTED_1 = (
    [-0.7858, -0.3928, -1.3307, -0.2181, 1.3447, 0.0],
    [-0.9358, -0.0072, 0.0193, 0.2, 0.1947, 0.0],
)


def _golden_case():
    lin = torch.nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.5, -0.25]]))
        lin.bias.fill_(0.1)
    steps = torch.arange(7.0)
    obs = torch.stack([torch.sin(steps), torch.cos(steps)], -1)
    root, nobs = obs[:-1].clone(), obs[1:].clone()
    root[2] = torch.tensor([2.0, -1.0])  # reset observation after the truncation
    root[4] = torch.tensor([-1.0, 3.0])  # reset observation after the termination
    done = torch.tensor([0, 1, 0, 1, 0, 0], dtype=torch.bool).view(1, 6, 1)
    term = torch.tensor([0, 0, 0, 1, 0, 0], dtype=torch.bool).view(1, 6, 1)
    data = TensorDict(
        {
            "obs": root[None],
            "next": {"obs": nobs[None], "reward": torch.linspace(-1, 1, 6).view(1, 6, 1), "done": done,
                     "terminated": term},
        },
        [1, 6],
    )  # fmt: skip
    return TensorDictModule(lin, ["obs"], ["state_value"]), data


@pytest.mark.parametrize("cls", [GAE, TDLambdaEstimator])
@pytest.mark.parametrize("shifted,budget", [(False, 1), (True, 1), (True, 2)])
def test_torchrl_golden(cls, shifted, budget):
    net, data = _golden_case()
    out = cls(gamma=0.9, lmbda=0.8, value_network=net, shifted=shifted, shifted_budget=budget)(data)
    adv, target = _GOLDEN_SHIFTED_1 if (shifted and budget == 1) else (_GOLDEN_ADV, _GOLDEN_TARGET)
    torch.testing.assert_close(out["advantage"].flatten(), torch.tensor(adv), atol=1e-4, rtol=0)
    torch.testing.assert_close(out["value_target"].flatten(), torch.tensor(target), atol=1e-4, rtol=0)
    if shifted:
        # with one spare slot the truncation's next state pushes the last sample out
        assert out["shifted_valid"].flatten().tolist() == [True] * 5 + [budget > 1]


def test_set_keys_and_errors():
    net = TensorDictModule(torch.nn.Linear(D, 1), ["obs"], ["v"])
    data = _data()
    data.rename_key_(("next", "reward"), ("next", "r"))
    gae = GAE(gamma=0.9, lmbda=0.8, value_network=net)
    gae.set_keys(advantage="adv", value_target="tgt", value="v", reward="r")
    out = gae(data)
    assert {"adv", "tgt", "v"} <= set(out.keys())
    assert gae.in_keys[:2] == ["obs", ("next", "r")]
    assert gae.out_keys == ["adv", "tgt"]
    with pytest.raises(KeyError, match="accepted"):
        gae.set_keys(advantages="x")
    with pytest.raises(KeyError, match="not written by the value network"):
        gae.set_keys(value="other")
    with pytest.raises(ValueError, match="cannot be None"):
        gae.set_keys(advantage=None)
    with pytest.raises(RuntimeError, match="set_keys"):
        GAE(gamma=0.9, lmbda=0.8, value_network=net, advantage_key="adv")


def test_no_value_network_reads_values():
    net, data = _net(), _data()
    value, next_value = _values(net, data)
    data["state_value"], data["next", "state_value"] = value, next_value
    out = GAE(gamma=0.9, lmbda=0.8, value_network=None)(data)
    torch.testing.assert_close(out["advantage"], _expected("gae", data, value, next_value)[0])
    del data["next", "state_value"]
    with pytest.raises(KeyError, match="state_value"):
        GAE(gamma=0.9, lmbda=0.8, value_network=None)(data)


def test_skip_existing():
    calls = []
    linear = torch.nn.Linear(D, 1)

    def value_fn(obs):
        calls.append(obs.shape)
        return linear(obs)

    net = TensorDictModule(value_fn, ["obs"], ["state_value"])
    data = _data()
    data["state_value"] = torch.zeros(B, T, 1)
    data["next", "state_value"] = torch.zeros(B, T, 1)
    out = TD0Estimator(gamma=0.9, value_network=net, skip_existing=True)(data)
    assert not calls
    torch.testing.assert_close(out["state_value"], torch.zeros(B, T, 1))
    TD0Estimator(gamma=0.9, value_network=net, skip_existing=False)(data)
    assert calls


def test_differentiable_flag():
    net = _net()
    for differentiable in (True, False):
        data = _data()
        data["next", "reward"].requires_grad_(True)
        out = GAE(gamma=0.9, lmbda=0.8, value_network=net, differentiable=differentiable)(data)
        assert out["advantage"].requires_grad is differentiable
        if differentiable:
            out["advantage"].sum().backward()
            assert data["next", "reward"].grad is not None
            assert all(p.grad is None for p in net.parameters())  # the value net is held out


def test_time_dim_and_named_time():
    net = _net()
    ref = GAE(gamma=0.9, lmbda=0.8, value_network=net)(_data())
    transposed = _data().transpose(0, 1)
    out = GAE(gamma=0.9, lmbda=0.8, value_network=net, time_dim=0)(transposed)
    torch.testing.assert_close(out["advantage"].transpose(0, 1), ref["advantage"])
    named = _data().transpose(0, 1)
    named.names = ["time", None]
    out = GAE(gamma=0.9, lmbda=0.8, value_network=net)(named)
    torch.testing.assert_close(out["advantage"].transpose(0, 1), ref["advantage"])
    out = GAE(gamma=0.9, lmbda=0.8, value_network=net)(_data().transpose(0, 1), time_dim=0)
    torch.testing.assert_close(out["advantage"].transpose(0, 1), ref["advantage"])


def test_multi_dim_batch():
    net = _net()
    data = _data(batch=(2, 3, T))
    out = GAE(gamma=0.9, lmbda=0.8, value_network=net)(data.clone())
    flat = GAE(gamma=0.9, lmbda=0.8, value_network=net)(data.reshape(6, T))
    torch.testing.assert_close(out["advantage"].reshape(6, T, 1), flat["advantage"])


def test_average_gae_and_rewards():
    net = _net()
    adv = GAE(gamma=0.9, lmbda=0.8, value_network=net, average_gae=True)(_data())["advantage"]
    torch.testing.assert_close(adv.mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
    torch.testing.assert_close(adv.std(), torch.tensor(1.0), atol=1e-4, rtol=0)
    data = _data()
    data["group"] = torch.arange(B).unsqueeze(-1).expand(B, T) % 2
    adv = GAE(gamma=0.9, lmbda=0.8, value_network=net, average_gae=True, group_key="group")(data)["advantage"]
    torch.testing.assert_close(adv[1].mean(), torch.tensor(0.0), atol=1e-5, rtol=0)
    data = _data()
    TD0Estimator(gamma=0.9, value_network=net, average_rewards=True)(data)
    torch.testing.assert_close(data["next", "reward"].mean(), torch.tensor(0.0), atol=1e-5, rtol=0)


def test_steps_to_next_obs():
    net, data = _net(), _data()
    data["steps_to_next_obs"] = torch.full((B, T, 1), 2)
    value, next_value = _values(net, data)
    out = TD0Estimator(gamma=0.9, value_network=net)(data)
    nxt = data["next"]
    torch.testing.assert_close(
        out["value_target"], F.td0_return_estimate(0.81, next_value, nxt["reward"], nxt["terminated"])
    )


def test_value_chunks_same_values():
    net = _net()
    ref = GAE(gamma=0.9, lmbda=0.8, value_network=net)(_data())
    for kwargs in ({"value_chunk_size": 2}, {"num_chunks": 2, "value_chunk_dim": 1}):
        out = GAE(gamma=0.9, lmbda=0.8, value_network=net, **kwargs)(_data())
        torch.testing.assert_close(out["advantage"], ref["advantage"])
    with pytest.raises(ValueError, match="cannot both"):
        GAE(gamma=0.9, lmbda=0.8, value_network=net, value_chunk_size=2, num_chunks=2)


def test_functional_params():
    net, data = _net(), _data()
    params = TensorDict.from_module(net).apply(lambda p: p * 2)
    out = TD0Estimator(gamma=0.9, value_network=net)(data, params=params)
    with params.to_module(net):
        expected = _values(net, _data())
    torch.testing.assert_close(out["state_value"], expected[0])


def test_vtrace():
    torch.manual_seed(0)
    actor = ProbabilisticTensorDictSequential(
        TensorDictModule(
            torch.nn.Sequential(torch.nn.Linear(D, 4), NormalParamExtractor()), ["obs"], ["loc", "scale"]
        ),
        ProbabilisticTensorDictModule(
            ["loc", "scale"], ["action"], distribution_class=torch.distributions.Normal
        ),
    )
    net, data = _net(), _data()
    data["action"] = torch.randn(B, T, 2)
    data["action_log_prob"] = torch.randn(B, T, 2).sum(-1, keepdim=True) * 0.1
    est = VTrace(gamma=0.9, actor_network=actor, value_network=net, rho_thresh=1.5, c_thresh=0.9)
    est.set_keys(sample_log_prob="action_log_prob")
    out = est(data.clone())
    value, next_value = _values(net, data)
    with torch.no_grad():
        log_pi = actor.get_dist(data.clone()).log_prob(data["action"]).sum(-1, keepdim=True)
    nxt = data["next"]
    expected = F.vtrace_advantage_estimate(
        0.9, log_pi, data["action_log_prob"], value, next_value, nxt["reward"], nxt["done"], nxt["terminated"],
        rho_thresh=1.5, c_thresh=0.9,
    )  # fmt: skip
    torch.testing.assert_close(out["advantage"], expected[0])
    torch.testing.assert_close(out["value_target"], expected[1])
    assert "action_log_prob" in est.in_keys


def test_vtrace_missing_behaviour_log_prob_names_the_key():
    actor = ProbabilisticTensorDictSequential(
        TensorDictModule(
            torch.nn.Sequential(torch.nn.Linear(D, 4), NormalParamExtractor()), ["obs"], ["loc", "scale"]
        ),
        ProbabilisticTensorDictModule(["loc", "scale"], ["action"], distribution_class=torch.distributions.Normal),
    )
    data = _data()
    data["action"] = torch.randn(B, T, 2)
    with pytest.raises(KeyError, match="behaviour log-probabilities at 'action_log_prob'"):
        VTrace(gamma=0.9, actor_network=actor, value_network=_net())(data)


def test_deprecated_alias_and_base():
    with pytest.warns(UserWarning, match="deprecated"):
        est = TD0Estimate(gamma=0.9, value_network=_net())
    assert isinstance(est, TD0Estimator) and isinstance(est, ValueEstimatorBase)
    with pytest.raises(RuntimeError, match="time dimension"):
        TD0Estimator(gamma=0.9, value_network=_net())(TensorDict({}, []))


def test_multi_agent_gae_broadcasts_team_signals():
    n_agents = 3
    data = _data()
    values = torch.randn(B, T, n_agents, 1)
    data["state_value"], data["next", "state_value"] = values, values.roll(-1, 1)
    out = MultiAgentGAE(gamma=0.9, lmbda=0.8, value_network=None)(data.clone())
    per_agent = data.clone()
    for key in ("reward", "done", "terminated"):
        per_agent["next", key] = per_agent["next", key].unsqueeze(-2).expand(B, T, n_agents, 1).clone()
    ref = GAE(gamma=0.9, lmbda=0.8, value_network=None)(per_agent)
    torch.testing.assert_close(out["advantage"], ref["advantage"])
    adv = MultiAgentGAE(gamma=0.9, lmbda=0.8, value_network=None, average_gae=True)(data.clone())["advantage"]
    torch.testing.assert_close(adv.mean((0, 1, 3)), torch.zeros(n_agents), atol=1e-5, rtol=0)
    torch.testing.assert_close(adv.std((0, 1, 3)), torch.ones(n_agents), atol=1e-4, rtol=0)
    data["next", "reward"] = torch.zeros(B, T)
    with pytest.raises(ValueError, match="one fewer"):
        MultiAgentGAE(gamma=0.9, lmbda=0.8, value_network=None)(data)


def test_for_loss_picks_the_critic():
    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.critic_network = _net()
            self.actor_network = _net()

    loss = Loss()
    est = GAE.for_loss(loss, gamma=0.9, lmbda=0.9)
    assert est.value_network is loss.critic_network
    vtrace = VTrace.for_loss(loss, gamma=0.9)
    assert vtrace.actor_network is loss.actor_network and vtrace.value_network is loss.critic_network
