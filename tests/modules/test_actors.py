"""Tests for the TensorDict modules: safe wrappers, actors, value operators, Q-value selection, TanhModule."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, NormalParamExtractor, TensorDictModule, set_interaction_type
from torch import nn

from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
)
from tdrl.modules import (
    MLP,
    Actor,
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    DistributionalQValueActor,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    SafeModule,
    SafeProbabilisticModule,
    SafeSequential,
    TanhDelta,
    TanhModule,
    TanhNormal,
    ValueOperator,
)


def obs_td(batch=(5,), n_obs=3) -> TensorDict:
    return TensorDict(observation=torch.randn(*batch, n_obs), batch_size=batch)


def tanh_normal_actor(**kwargs) -> ProbabilisticActor:
    net = TensorDictModule(nn.Sequential(MLP(in_features=3, out_features=4, num_cells=[16]), NormalParamExtractor()),
                           in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal, **kwargs)


class TestSafeModule:
    def test_spec_keys_and_projection(self):
        mod = SafeModule(nn.Linear(3, 2), ["observation"], ["action"], spec=Bounded(-1.0, 1.0, (2,)), safe=True)
        assert list(mod.spec.keys()) == ["action"]
        td = TensorDict(observation=torch.full((4, 3), 100.0), batch_size=[4])
        assert mod(td)["action"].abs().max() <= 1
        loose = SafeModule(nn.Linear(3, 2), ["observation"], ["action"], spec=Bounded(-1.0, 1.0, (2,)))
        assert loose(td.clone())["action"].abs().max() > 1

    def test_bad_specs(self):
        with pytest.raises(RuntimeError, match="one leaf spec for several out_keys"):
            SafeModule(nn.Linear(3, 2), ["observation"], ["a", "b"], spec=Unbounded(2))
        with pytest.raises(RuntimeError, match="not out_keys"):
            SafeModule(nn.Linear(3, 2), ["observation"], ["a"], spec=Composite(b=Unbounded(2)))
        with pytest.raises(RuntimeError, match="needs a spec"):
            SafeModule(nn.Linear(3, 2), ["observation"], ["a"], safe=True)
        with pytest.raises(TypeError, match="TensorSpec"):
            SafeModule(nn.Linear(3, 2), ["observation"], ["a"], spec="bounded")

    def test_random_and_sequential_spec(self):
        mod = Actor(nn.Linear(3, 2), spec=Bounded(-1.0, 1.0, (2,)))
        td = mod.random(obs_td())
        assert td["action"].shape == (5, 2) and td["action"].abs().max() <= 1
        seq = SafeSequential(SafeModule(nn.Linear(3, 4), ["observation"], ["hidden"]), mod)
        assert set(seq.spec.keys()) == {"hidden", "action"} and seq.spec["hidden"] is None


class TestActors:
    def test_actor_defaults(self):
        actor = Actor(nn.Linear(3, 2), spec=Unbounded(2))
        assert actor.in_keys == ["observation"] and actor.out_keys == ["action"]
        assert isinstance(actor.spec, Composite) and actor.spec["action"] is not None
        td = actor(obs_td())
        assert td["action"].shape == (5, 2)
        assert actor.get_dist(obs_td()).log_prob(actor(obs_td())["action"]).shape == (5,)

    def test_probabilistic_actor_keys_and_log_prob(self):
        actor = tanh_normal_actor(return_log_prob=True, spec=Bounded(-1.0, 1.0, (2,)))
        assert actor.out_keys == ["loc", "scale", "action", "action_log_prob"]
        assert set(actor.spec.keys()) == {"loc", "scale", "action", "action_log_prob"}
        with set_interaction_type(InteractionType.RANDOM):
            td = actor(obs_td())
        dist = actor.get_dist(td)
        torch.testing.assert_close(td["action_log_prob"], dist.log_prob(td["action"]), rtol=1e-4, atol=1e-4)
        assert td["action_log_prob"].shape == (5,)

    def test_probabilistic_actor_interaction_types(self):
        actor = tanh_normal_actor()
        td = obs_td()
        default = actor(td.clone())["action"]  # DETERMINISTIC by default: tanh(loc)
        torch.testing.assert_close(default, actor(td.clone())["loc"].tanh())
        with set_interaction_type(InteractionType.RANDOM):
            random = actor(td.clone())["action"]
        assert not torch.allclose(random, default)
        det_actor = tanh_normal_actor(default_interaction_type=InteractionType.RANDOM)
        with set_interaction_type(InteractionType.DETERMINISTIC):
            out = det_actor(td.clone())
        torch.testing.assert_close(out["action"], out["loc"].tanh())

    def test_probabilistic_actor_custom_log_prob_key_and_tanh_delta(self):
        actor = tanh_normal_actor(return_log_prob=True, log_prob_key="sample_log_prob")
        with set_interaction_type(InteractionType.RANDOM):
            assert "sample_log_prob" in actor(obs_td()).keys()
        net = TensorDictModule(nn.Linear(3, 2), ["observation"], ["param"])
        actor = ProbabilisticActor(net, in_keys=["param"], distribution_class=TanhDelta,
                                   distribution_kwargs={"low": -2.0, "high": 2.0})
        assert actor(obs_td())["action"].abs().max() <= 2

    def test_value_operators(self):
        value = ValueOperator(nn.Linear(3, 1))
        assert value.out_keys == ["state_value"] and value(obs_td())["state_value"].shape == (5, 1)
        q = ValueOperator(MLP(in_features=5, out_features=1, num_cells=[8]), in_keys=["observation", "action"])
        assert q.out_keys == ["state_action_value"]
        td = obs_td().set("action", torch.zeros(5, 2))
        assert q(td)["state_action_value"].shape == (5, 1)

    def test_actor_value_and_critic_operators(self):
        common = SafeModule(nn.Linear(3, 4), ["observation"], ["hidden"])
        policy = Actor(nn.Linear(4, 2), in_keys=["hidden"])
        value = ValueOperator(nn.Linear(4, 1), in_keys=["hidden"])
        op = ActorValueOperator(common, policy, value)
        td = op(obs_td())
        assert {"hidden", "action", "state_value"} <= set(td.keys())
        assert op.get_policy_head() is policy and op.get_value_head() is value
        assert "state_value" not in op.get_policy_operator()(obs_td()).keys()
        critic = ValueOperator(MLP(in_features=6, out_features=1, num_cells=[8]), in_keys=["hidden", "action"])
        ac = ActorCriticOperator(common, policy, critic)
        assert ac.get_critic_operator()(obs_td())["state_action_value"].shape == (5, 1)
        with pytest.raises(RuntimeError, match="get_critic_operator"):
            ac.get_value_operator()
        with pytest.raises(RuntimeError, match="state_action_value"):
            ActorCriticOperator(common, policy, value)
        wrapper = ActorCriticWrapper(Actor(nn.Linear(3, 2)), ValueOperator(nn.Linear(3, 1)))
        assert {"action", "state_value"} <= set(wrapper(obs_td()).keys())


class TestQValue:
    VALUES = torch.tensor([[1.0, 3.0, 2.0, 0.0], [4.0, -1.0, 0.0, 5.0]])

    @pytest.mark.parametrize(
        "action_space,expected_action,expected_chosen",
        [
            ("one-hot", [[0, 1, 0, 0], [0, 0, 0, 1]], [[3.0], [5.0]]),
            ("categorical", [1, 3], [[3.0], [5.0]]),
            ("binary", [[1, 1, 1, 0], [1, 0, 0, 1]], [[6.0], [9.0]]),
        ],
    )
    def test_action_spaces(self, action_space, expected_action, expected_chosen):
        td = QValueModule(action_space=action_space)(TensorDict(action_value=self.VALUES, batch_size=[2]))
        assert td["action"].tolist() == expected_action
        torch.testing.assert_close(td["chosen_action_value"], torch.tensor(expected_chosen))
        assert td["action_value"] is not None

    def test_multi_action_spaces_from_spec(self):
        td = QValueModule(spec=MultiOneHot([2, 2]))(TensorDict(action_value=self.VALUES, batch_size=[2]))
        assert td["action"].tolist() == [[0, 1, 1, 0], [1, 0, 0, 1]]
        torch.testing.assert_close(td["chosen_action_value"], torch.tensor([[5.0], [9.0]]))
        td = QValueModule(spec=MultiCategorical([2, 2]))(TensorDict(action_value=self.VALUES, batch_size=[2]))
        assert td["action"].tolist() == [[1, 0], [0, 1]]
        torch.testing.assert_close(td["chosen_action_value"], torch.tensor([[5.0], [9.0]]))

    def test_action_mask(self):
        mask = torch.tensor([[True, False, True, True], [True, True, True, False]])
        mod = QValueModule(action_space="categorical", action_mask_key="action_mask")
        td = mod(TensorDict(action_value=self.VALUES, action_mask=mask, batch_size=[2]))
        assert td["action"].tolist() == [2, 0]

    @pytest.mark.parametrize("spec", [OneHot(4), Categorical(4), Binary(4)])
    def test_qvalue_actor_with_spec(self, spec):
        actor = QValueActor(MLP(in_features=3, out_features=4, num_cells=[8]), in_keys=["observation"], spec=spec)
        td = actor(obs_td())
        assert td["action"].shape == (5, *spec.shape)
        assert spec.is_in(td["action"][0].to(spec.dtype))
        assert td["action_value"].shape == (5, 4) and td["chosen_action_value"].shape == (5, 1)

    def test_qvalue_actor_errors(self):
        with pytest.raises(ValueError, match="cannot be inferred"):
            QValueActor(nn.Linear(3, 4))
        with pytest.raises(ValueError, match="does not match"):
            QValueActor(nn.Linear(3, 4), action_space="one-hot", spec=Categorical(4))
        with pytest.raises(ValueError, match="Unknown action_space"):
            QValueActor(nn.Linear(3, 4), action_space="ternary")
        with pytest.raises(KeyError, match="not among the module's out_keys"):
            QValueActor(TensorDictModule(nn.Linear(3, 4), ["observation"], ["q"]), action_space="one-hot")
        actor = QValueActor(nn.Linear(3, 4), spec=Categorical(4, shape=(2,)))
        with pytest.raises(RuntimeError, match="strict_shape"):
            actor(obs_td())
        auto = QValueActor(nn.Linear(3, 4), spec=Categorical(4, shape=(1,)), strict_shape="auto")
        assert auto(obs_td())["action"].shape == (5, 1)

    def test_distributional_actor(self):
        net = nn.Sequential(nn.Linear(3, 5 * 4), nn.Unflatten(-1, (5, 4)))
        actor = DistributionalQValueActor(net, support=torch.linspace(-1, 1, 5), action_space="one-hot")
        td = actor(obs_td())
        assert td["action"].shape == (5, 4) and (td["action"].sum(-1) == 1).all()
        torch.testing.assert_close(td["action_value"].exp().sum(-2), torch.ones(5, 4))
        expected = (td["action_value"].exp() * torch.linspace(-1, 1, 5)[:, None]).sum(-2).argmax(-1)
        assert (td["action"].argmax(-1) == expected).all()


class TestTanhModule:
    def test_bounds_from_spec_and_args(self):
        mod = TanhModule(["x"], ["action"], spec=Bounded(torch.tensor([0.0, -2.0]), torch.tensor([1.0, 2.0]), (2,)))
        out = mod(TensorDict(x=torch.tensor([[0.0, 0.0], [50.0, -50.0]]), batch_size=[2]))["action"]
        torch.testing.assert_close(out, torch.tensor([[0.5, 0.0], [1.0, -2.0]]))
        mod = TanhModule(["x"])
        torch.testing.assert_close(mod(TensorDict(x=torch.ones(3), batch_size=[3]))["x"], torch.ones(3).tanh())

    def test_errors(self):
        with pytest.raises(ValueError, match="differ in length"):
            TanhModule(["a", "b"], ["c"])
        with pytest.raises(ValueError, match="differs from the spec"):
            TanhModule(["x"], spec=Bounded(-1.0, 1.0, (2,)), low=-2.0)
        with pytest.raises(ValueError, match="high < low"):
            TanhModule(["x"], low=1.0, high=0.0)


def test_safe_probabilistic_module_spec_projection():
    mod = SafeProbabilisticModule(["loc", "scale"], ["action"], spec=Bounded(-0.5, 0.5, (2,)), safe=True,
                                  distribution_class=torch.distributions.Normal, return_log_prob=True)
    td = TensorDict(loc=torch.full((3, 2), 3.0), scale=torch.ones(3, 2), batch_size=[3])
    with set_interaction_type(InteractionType.RANDOM):
        out = mod(td)
    assert out["action"].abs().max() <= 0.5 and "action_log_prob" in out.keys()


def test_ensure_tensordict_compatible():
    from tdrl.modules.tensordict_module.common import ensure_tensordict_compatible

    wrapped = ensure_tensordict_compatible(nn.Linear(3, 4), in_keys=["observation"], wrapper_type=QValueActor,
                                           action_space="one-hot")
    assert isinstance(wrapped, QValueActor) and wrapped(obs_td())["action"].shape == (5, 4)
    module = TensorDictModule(nn.Linear(3, 4), ["observation"], ["y"])
    assert ensure_tensordict_compatible(module, in_keys=["observation"]) is module
    with pytest.raises(TypeError, match="do not match"):
        ensure_tensordict_compatible(module, in_keys=["obs"])
