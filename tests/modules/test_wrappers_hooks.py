"""TorchRL's older wrappers and hooks: Q-value hooks, ``MultiStepActorWrapper``, the ``*Wrapper`` exploration
classes, ``NormalParamWrapper`` and ``has_analytic_kl`` (golden values from TorchRL 0.14.1 where it runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential

from tdrl.data import Bounded, Categorical, OneHot
from tdrl.modules import (
    Actor,
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    DistributionalQValueHook,
    EGreedyModule,
    EGreedyWrapper,
    MultiStepActorWrapper,
    NormalParamWrapper,
    OrnsteinUhlenbeckProcessModule,
    OrnsteinUhlenbeckProcessWrapper,
    QValueHook,
)
from tdrl.modules.distributions import has_analytic_kl

sys.path.insert(0, str(Path(__file__).parent))
from _wrapper_scenarios import (  # noqa: E402
    KL_PAIRS,
    MULTISTEP_CASES,
    QVALUE_CASES,
    distributional_net,
    multistep_actor,
    multistep_inputs,
    qvalue_net,
)

GOLDEN = json.loads((Path(__file__).parent / "wrappers_torchrl_0_14_1.json").read_text())
X = torch.linspace(-1, 1, 12).reshape(3, 4)


@pytest.mark.parametrize("name", sorted(QVALUE_CASES))
def test_qvalue_hook_matches_torchrl(name):
    space, var_nums, n_out = QVALUE_CASES[name]
    net = qvalue_net(n_out)
    net.register_forward_hook(QValueHook(space, var_nums=var_nums))
    out = net(X)
    assert len(out) == 3
    for got, expected in zip(out, GOLDEN[f"qvalue_{name}"]):
        torch.testing.assert_close(got.to(torch.float32), torch.tensor(expected, dtype=torch.float32))


def test_qvalue_hook_inside_actor():
    net = qvalue_net(4)
    net.register_forward_hook(QValueHook("one_hot"))
    # Three out_keys: the hook returns three tensors (TorchRL's docstring example with two fails on 0.14.1 too).
    actor = Actor(net, spec=OneHot(4), out_keys=["action", "action_value", "chosen_action_value"])
    td = actor(TensorDict(observation=X, batch_size=[3]))
    torch.testing.assert_close(td["action"], torch.tensor(GOLDEN["qvalue_one_hot"][0]))
    assert td["action_value"].shape == (3, 4)


def test_qvalue_hook_rejects_spec():
    with pytest.raises(RuntimeError, match="by name"):
        QValueHook(OneHot(4))


def test_distributional_qvalue_hook_matches_torchrl():
    net = distributional_net()
    net.register_forward_hook(DistributionalQValueHook("one_hot", support=torch.tensor([-1.0, 0.0, 2.0])))
    action, log_probs = net(X)
    expected_action, expected_log_probs = GOLDEN["dist_qvalue_one_hot"]
    torch.testing.assert_close(action, torch.tensor(expected_action))
    torch.testing.assert_close(log_probs, torch.tensor(expected_log_probs))


def _run_multistep(kwargs):
    actor = MultiStepActorWrapper(
        TensorDictModule(multistep_actor(kwargs.get("n", 3)), ["observation"], [kwargs.get("out", "action")]),
        **kwargs["wrapper"],
    )
    td, seq = None, []
    for obs, is_init in multistep_inputs():
        td = (
            TensorDict(observation=obs, is_init=is_init, batch_size=[3])
            if td is None
            else td.exclude("action")
        )
        td.set("observation", obs)
        td.set("is_init", is_init)
        td = actor(td)
        seq.append((td["action"], td["counter"]))
    return actor, td, seq


@pytest.mark.parametrize("name", sorted(MULTISTEP_CASES))
def test_multistep_matches_torchrl(name):
    _, _, seq = _run_multistep(MULTISTEP_CASES[name])
    for (action, counter), (expected_action, expected_counter) in zip(seq, GOLDEN[f"multistep_{name}"]):
        torch.testing.assert_close(action, torch.tensor(expected_action))
        torch.testing.assert_close(counter, torch.tensor(expected_counter, dtype=counter.dtype))


def test_multistep_keys():
    actor, td, _ = _run_multistep(MULTISTEP_CASES["chunk_key"])
    assert actor.action_keys == ["action"] and actor.chunk_keys == ["action_chunk"]
    assert actor.cache_keys == ["action_chunk"] and "action_orig" not in td.keys()
    actor, td, _ = _run_multistep(MULTISTEP_CASES["open_loop"])
    assert actor.cache_keys == ["action_orig"] and td["action_orig"].shape == (3, 3, 2)
    assert actor.in_keys == ["observation", "is_init"]
    assert actor.out_keys == ["action", "action_orig", "counter"]


def test_multistep_errors():
    base = TensorDictModule(multistep_actor(3), ["observation"], ["action"])
    with pytest.raises(ValueError, match="replan_interval"):
        MultiStepActorWrapper(base, n_steps=3, replan_interval=4)
    with pytest.raises(KeyError, match="is_init"):
        MultiStepActorWrapper(base, n_steps=3)(TensorDict(observation=torch.zeros(2, 2), batch_size=[2]))
    wrong = MultiStepActorWrapper(base, n_steps=4)
    td = TensorDict(observation=torch.zeros(2, 2), is_init=torch.ones(2, 1, dtype=torch.bool), batch_size=[2])
    with pytest.raises(RuntimeError, match="n_steps=4"):
        wrong(td)
    partial = TensorDict(
        observation=torch.zeros(2, 2), is_init=torch.tensor([[True], [False]]), batch_size=[2]
    )
    with pytest.raises(RuntimeError, match="partial"):
        MultiStepActorWrapper(base, n_steps=3)(partial)


def _policy():
    torch.manual_seed(0)
    return TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action"])


def test_exploration_wrappers_equal_policy_then_module():
    spec = Bounded(-1.0, 1.0, (2,))
    td = TensorDict(observation=torch.randn(6, 3), is_init=torch.ones(6, 1, dtype=torch.bool), batch_size=[6])
    pairs = [
        (
            AdditiveGaussianWrapper(_policy(), sigma_init=0.5, spec=spec),
            AdditiveGaussianModule(spec, sigma_init=0.5, safe=True),
        ),
        (OrnsteinUhlenbeckProcessWrapper(_policy(), spec=spec), OrnsteinUhlenbeckProcessModule(spec)),
    ]
    for wrapper, module in pairs:
        reference = TensorDictSequential(_policy(), module)
        torch.manual_seed(1)
        got = wrapper(td.clone())
        torch.manual_seed(1)
        expected = reference(td.clone())
        torch.testing.assert_close(got["action"], expected["action"])
        assert not torch.allclose(got["action"], _policy()(td.clone())["action"])


def test_egreedy_wrapper_anneals_and_takes_policy_spec():
    policy = Actor(TensorDictModule(lambda o: o.argmax(-1), ["observation"], ["action"]), spec=Categorical(3))
    wrapper = EGreedyWrapper(policy, eps_init=1.0, eps_end=0.0, annealing_num_steps=10)
    assert wrapper.spec["action"] == Categorical(3)
    wrapper.step(5)
    torch.testing.assert_close(wrapper.eps, torch.tensor(0.5))
    wrapper.step(10)
    greedy = TensorDict(observation=torch.randn(20, 3), batch_size=[20])
    torch.testing.assert_close(wrapper(greedy.clone())["action"], greedy["observation"].argmax(-1))
    module = EGreedyModule(Categorical(3), 1.0, 0.0, 10)
    module.step(5)
    torch.testing.assert_close(module.eps, torch.tensor(0.5))


def test_exploration_wrapper_needs_a_spec():
    with pytest.raises(RuntimeError, match="no action spec"):
        EGreedyWrapper(TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action"]))


@pytest.mark.parametrize("mapping", ["biased_softplus_1.0", "exp", "relu"])
def test_normal_param_wrapper_is_operator_then_extractor(mapping):
    net = qvalue_net(6)
    loc, scale = NormalParamWrapper(net, scale_mapping=mapping, scale_lb=0.01)(X)
    expected = NormalParamExtractor(scale_mapping=mapping, scale_lb=0.01)(net(X))
    torch.testing.assert_close(loc, expected[0])
    torch.testing.assert_close(scale, expected[1])
    assert bool((scale >= 0.01).all())


def test_normal_param_wrapper_odd_output():
    with pytest.raises(ValueError, match="even"):
        NormalParamWrapper(qvalue_net(5))(X)


def test_has_analytic_kl_matches_torchrl():
    assert [has_analytic_kl(p(), q()) for p, q in KL_PAIRS] == GOLDEN["has_analytic_kl"]


def test_torchrl_import_paths():
    from tdrl.modules.distributions.continuous import NormalParamWrapper as N
    from tdrl.modules.tensordict_module.actors import DistributionalQValueHook as D
    from tdrl.modules.tensordict_module.actors import MultiStepActorWrapper as M
    from tdrl.modules.tensordict_module.actors import QValueHook as Q
    from tdrl.modules.tensordict_module.exploration import EGreedyWrapper as E

    assert (N, D, M, Q, E) == (
        NormalParamWrapper,
        DistributionalQValueHook,
        MultiStepActorWrapper,
        QValueHook,
        EGreedyWrapper,
    )


@pytest.mark.parametrize("batched", [False, True])
def test_multistep_in_env_rollout(batched):
    from tdrl.envs import GymEnv, InitTracker, SerialEnv, TransformedEnv

    base = GymEnv("Pendulum-v1") if not batched else SerialEnv(2, lambda: GymEnv("Pendulum-v1"))
    env = TransformedEnv(base, InitTracker())
    chunk = TensorDictModule(
        lambda o: torch.zeros(*o.shape[:-1], 4, 1) + torch.arange(4.0).view(4, 1) / 10,
        ["observation"],
        ["action"],
    )
    rollout = env.rollout(6, MultiStepActorWrapper(chunk, n_steps=4))
    expected = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.0, 0.1]).expand(*env.batch_size, 6)
    torch.testing.assert_close(rollout["action"].squeeze(-1), expected)
    env.close()
