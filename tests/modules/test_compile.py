"""torch.compile (fullgraph) and vmap smoke tests for the modules the loss benchmarks use."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import (
    InteractionType,
    NormalParamExtractor,
    TensorDictModule,
    TensorDictSequential,
    set_interaction_type,
)

from tdrl.modules import MLP, ProbabilisticActor, QValueActor, TanhNormal


def benchmark_actor(**dist_kwargs) -> ProbabilisticActor:
    common = TensorDictModule(MLP(in_features=8, out_features=16, depth=1, num_cells=16), ["obs"], ["hidden"])
    head = TensorDictModule(torch.nn.Sequential(MLP(in_features=16, out_features=8, num_cells=[16]),
                                                NormalParamExtractor()), ["hidden"], ["loc", "scale"])
    return ProbabilisticActor(TensorDictSequential(common, head),
                              in_keys=["loc", "scale"], distribution_class=TanhNormal,
                              distribution_kwargs=dist_kwargs, return_log_prob=True)


def test_actor_and_log_prob_compile_fullgraph():
    torch._dynamo.reset()
    actor = benchmark_actor(low=-2.0, high=2.0)
    td = TensorDict(obs=torch.randn(4, 8), batch_size=[4])

    def sample_and_score(td):
        with set_interaction_type(InteractionType.RANDOM):
            out = actor(td.copy())
        return out["action"], out["action_log_prob"], actor.get_dist(td.copy()).log_prob(out["action"])

    action, lp, lp_again = torch.compile(sample_and_score, fullgraph=True)(td)
    assert action.shape == (4, 4) and lp.shape == (4,)
    torch.testing.assert_close(lp, lp_again, rtol=1e-4, atol=1e-4)

    def deterministic(td):
        return actor(td.copy())["action"]

    torch.testing.assert_close(torch.compile(deterministic, fullgraph=True)(td), deterministic(td))


def test_mlp_and_qvalue_actor_compile_fullgraph():
    torch._dynamo.reset()
    actor = QValueActor(MLP(in_features=8, out_features=4, num_cells=[16]), in_keys=["obs"], action_space="one-hot")
    td = TensorDict(obs=torch.randn(4, 8), batch_size=[4])
    compiled = torch.compile(lambda td: actor(td.copy())["chosen_action_value"], fullgraph=True)
    torch.testing.assert_close(compiled(td), actor(td.copy())["chosen_action_value"])


def test_vmap_over_stacked_parameters_and_tanh_normal():
    mlp = MLP(in_features=3, out_features=1, num_cells=[8])
    params = TensorDict.from_module(mlp)
    stacked = torch.stack([params, params.apply(lambda p: p + 1.0)])
    x = torch.randn(5, 3)

    def call(p):
        with p.to_module(mlp):
            return mlp(x)

    out = torch.vmap(call)(stacked)
    assert out.shape == (2, 5, 1)
    torch.testing.assert_close(out[0], mlp(x))
    loc, scale, y = torch.randn(2, 5, 3), torch.rand(2, 5, 3) + 0.1, torch.rand(2, 5, 3) * 1.8 - 0.9
    batched = torch.vmap(lambda a, b, c: TanhNormal(a, b).log_prob(c))(loc, scale, y)
    torch.testing.assert_close(batched, TanhNormal(loc, scale).log_prob(y))


def test_python_based_lstm_compiles_in_recurrent_mode():
    from tdrl.modules import LSTMModule, set_recurrent_mode

    torch._dynamo.reset()
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="feat", python_based=True)
    is_init = torch.zeros(2, 4, 1, dtype=torch.bool)
    is_init[:, 0] = True
    is_init[1, 2] = True
    td = TensorDict(obs=torch.randn(2, 4, 3), is_init=is_init, batch_size=[2, 4])

    def run(td):
        with set_recurrent_mode(True):
            return lstm(td.copy())["feat"]

    torch.testing.assert_close(torch.compile(run, fullgraph=True)(td), run(td))


def test_safe_actor_with_exploration_noise_compiles():
    from tensordict.nn import TensorDictSequential as Seq

    from tdrl.data import Bounded
    from tdrl.modules import Actor, AdditiveGaussianModule

    torch._dynamo.reset()
    spec = Bounded(-1.0, 1.0, (2,))
    policy = Seq(Actor(torch.nn.Linear(3, 2), spec=spec, safe=True), AdditiveGaussianModule(spec))
    td = TensorDict(observation=torch.randn(4, 3) * 10, batch_size=[4])

    def act(td):
        with set_interaction_type(InteractionType.RANDOM):
            return policy(td.copy())["action"]

    assert torch.compile(act, fullgraph=True)(td).abs().max() <= 1
