"""EnvBase semantics: reset/step/rollout shapes, done handling, partial resets, errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.data import Bounded, Categorical, Composite, Unbounded
from tdrl.envs import EnvBase

from .mocks import CountingEnv


def test_specs_and_keys():
    env = CountingEnv(batch_size=[2])
    assert env.action_keys == ["action"]
    assert env.reward_keys == ["reward"]
    assert env.done_keys == ["done", "terminated", "truncated"]
    assert env.reset_keys == ["_reset"]
    assert env.action_key == "action" and env.reward_key == "reward"
    assert isinstance(env.action_spec, Bounded) and env.action_spec.shape == (2, 1)
    assert isinstance(env.reward_spec, Unbounded)
    assert isinstance(env.done_spec, Composite)
    assert set(env.output_spec.keys()) == {"full_observation_spec", "full_reward_spec", "full_done_spec"}
    assert set(env.input_spec.keys()) == {"full_action_spec", "full_state_spec"}
    assert set(env.specs.keys()) == {"output_spec", "input_spec"}
    assert env.full_action_spec_unbatched["action"].shape == (1,)


def test_done_spec_completion():
    class OnlyDone(CountingEnv):
        def __init__(self):
            super().__init__()
            self.done_spec = Categorical(2, (1,), dtype=torch.bool)

    env = OnlyDone()
    assert env.done_keys == ["done", "terminated"]


def test_spec_setter_checks_batch():
    env = CountingEnv(batch_size=[2])
    with pytest.raises(ValueError, match=r"must start with the env batch size \(2,\)"):
        env.action_spec = Bounded(-1.0, 1.0, shape=(1,))


def test_reset_step_shapes():
    env = CountingEnv(batch_size=[3])
    td = env.reset()
    assert td.batch_size == (3,)
    assert set(td.keys()) == {"obs", "done", "terminated", "truncated"}
    td = env.step(env.rand_action(td))
    assert td["next", "obs"].shape == (3, 1)
    assert td["next", "reward"].shape == (3, 1)
    assert (td["next", "obs"] == 1).all()


def test_step_without_action_names_the_key():
    env = CountingEnv()
    with pytest.raises(KeyError, match=r"no action entry 'action'.*shape \(1,\)"):
        env.step(env.reset())


def test_step_wrong_action_shape():
    env = CountingEnv(batch_size=[2])
    td = env.reset()
    td["action"] = torch.zeros(2, 3)
    with pytest.raises(ValueError, match=r"action 'action' has shape \(2, 3\), expected \(2, 1\)"):
        env.step(td)


def test_wrong_batch_size():
    env = CountingEnv(batch_size=[2])
    with pytest.raises(RuntimeError, match="batch_size"):
        env.step(TensorDict({"action": torch.zeros(3, 1)}, [3]))


def test_rollout_break_when_any_done():
    env = CountingEnv(batch_size=[2], max_steps=torch.tensor([3, 5]))
    data = env.rollout(10)
    assert data.batch_size == (2, 3)
    assert data.names == [None, "time"]
    assert data["next", "done"][0, -1].item()


def test_rollout_break_when_all_done():
    env = CountingEnv(batch_size=[2], max_steps=torch.tensor([3, 5]))
    data = env.rollout(10, break_when_all_done=True)
    assert data.batch_size == (2, 5)
    # The finished sub-env repeats its last transition after it is done.
    assert (data["next", "obs"][0, 2:] == 3).all()
    assert data["next", "obs"][1].squeeze(-1).tolist() == [1, 2, 3, 4, 5]


def test_both_breaks_is_an_error():
    with pytest.raises(TypeError):
        CountingEnv().rollout(3, break_when_any_done=True, break_when_all_done=True)


def test_rollout_nonstop_auto_resets_done_sub_envs_only():
    env = CountingEnv(batch_size=[2], max_steps=torch.tensor([2, 4]))
    data = env.rollout(6, break_when_any_done=False)
    assert data.batch_size == (2, 6)
    # sub-env 0: 1,2 | reset | 1,2 | reset | 1,2 ; sub-env 1: 1..4 | reset | 1,2
    assert data["next", "obs"][0].squeeze(-1).tolist() == [1, 2, 1, 2, 1, 2]
    assert data["next", "obs"][1].squeeze(-1).tolist() == [1, 2, 3, 4, 1, 2]
    # the root obs is the reset obs (0) after a done, the previous next obs otherwise
    assert data["obs"][0].squeeze(-1).tolist() == [0, 1, 0, 1, 0, 1]
    assert data["obs"][1].squeeze(-1).tolist() == [0, 1, 2, 3, 0, 1]
    assert not data["done"].any()  # root done is the post-reset flag


def test_partial_reset_keeps_other_sub_envs():
    env = CountingEnv(batch_size=[3], max_steps=10)
    td = env.reset()
    for _ in range(2):
        td = env.step_mdp(env.step(env.rand_action(td)))
    td["_reset"] = torch.tensor([[True], [False], [True]])
    out = env.reset(td)
    assert out["obs"].squeeze(-1).tolist() == [0, 2, 0]
    assert "_reset" not in out.keys()
    assert env.count.squeeze(-1).tolist() == [0, 2, 0]


def test_done_after_reset_is_an_error():
    class BadReset(CountingEnv):
        def _reset(self, tensordict, **kwargs):
            out = super()._reset(tensordict)
            out["done"] = torch.ones(*self.batch_size, 1, dtype=torch.bool)
            return out

    with pytest.raises(RuntimeError, match="'done' is True after reset"):
        BadReset().reset()
    BadReset(allow_done_after_reset=True).reset()


def test_rollout_with_policy_and_callback():
    env = CountingEnv(max_steps=100)
    policy = TensorDictModule(lambda obs: torch.full_like(obs, 0.5), in_keys=["obs"], out_keys=["action"])
    seen = []
    data = env.rollout(4, policy, callback=lambda e, td: seen.append(td))
    assert (data["action"] == 0.5).all()
    assert (data["next", "reward"] == 0.5).all()
    assert len(seen) == 3


def test_rollout_with_plain_module_policy():
    env = CountingEnv(max_steps=100)
    data = env.rollout(3, torch.nn.Linear(1, 1))
    assert data["action"].shape == (3, 1)


def test_rollout_auto_reset_false_needs_tensordict():
    env = CountingEnv(max_steps=100)
    with pytest.raises(RuntimeError, match="tensordict="):
        env.rollout(3, auto_reset=False)
    td = env.reset()
    data = env.rollout(3, auto_reset=False, tensordict=td)
    assert data["next", "obs"].squeeze(-1).tolist() == [1, 2, 3]


def test_rollout_set_truncated_and_actions():
    env = CountingEnv(max_steps=100)
    data = env.rollout(3, set_truncated=True)
    assert data["next", "truncated"].squeeze(-1).tolist() == [False, False, True]
    assert data["next", "done"][-1].item()
    data = env.rollout(10, actions=[torch.ones(1) * a for a in (0.1, 0.2)])
    assert data.batch_size == (2,)


def test_step_and_maybe_reset():
    env = CountingEnv(max_steps=2)
    td = env.reset()
    _, td = env.step_and_maybe_reset(env.rand_action(td))
    assert td["obs"].item() == 1
    data, td = env.step_and_maybe_reset(env.rand_action(td))
    assert data["next", "done"].item()
    assert td["obs"].item() == 0 and not td["done"].item()


def test_set_seed_returns_next_seed():
    env = CountingEnv()
    assert env.set_seed(3) != 3
    assert env.seed == 3
    assert env.set_seed(3, static_seed=True) == 3


def test_fake_tensordict_matches_rollout():
    env = CountingEnv(batch_size=[2])
    fake = env.fake_tensordict()
    data = env.rollout(1)[..., 0]
    assert set(fake.keys(True, True)) == set(data.keys(True, True))
    for key in fake.keys(True, True):
        assert fake[key].shape == data[key].shape and fake[key].dtype == data[key].dtype


def test_close_and_del():
    env = CountingEnv()
    assert not env.is_closed
    env.close()
    assert env.is_closed
    del env


def test_run_type_checks():
    class WrongDtype(CountingEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            out["obs"] = out["obs"].double()
            return out

    env = WrongDtype(run_type_checks=True)
    with pytest.raises(TypeError, match="obs"):
        env.rand_step(env.reset())


def test_reward_reshaped_to_spec():
    class FlatReward(CountingEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            out["reward"] = out["reward"].reshape(self.batch_size)
            return out

    env = FlatReward(batch_size=[2])
    assert env.rand_step(env.reset())["next", "reward"].shape == (2, 1)


def test_base_methods_must_be_implemented():
    class Empty(EnvBase):
        pass

    env = Empty()
    with pytest.raises(TypeError, match="must implement _reset"):
        env.reset()


def test_empty_cache_after_in_place_spec_edit():
    env = CountingEnv()
    assert env.observation_keys == ["obs"]
    env.full_observation_spec["extra"] = Unbounded((1,))
    assert "extra" not in env.observation_keys
    env.empty_cache()
    assert "extra" in env.observation_keys


def test_rollout_wraps_unannotated_module_and_trusts_td_functions():
    class Half(torch.nn.Module):
        def forward(self, x):
            return torch.full_like(x, 0.5)

    env = CountingEnv(max_steps=100)
    assert (env.rollout(2, Half())["action"] == 0.5).all()

    def td_policy(td):
        td["action"] = torch.full((1,), -0.5)
        return td

    assert (env.rollout(2, td_policy)["action"] == -0.5).all()


def test_append_transform_on_a_base_env_returns_a_transformed_env():
    from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv

    env = PendulumEnv().append_transform(StepCounter(max_steps=3))
    assert isinstance(env, TransformedEnv)
    assert env.rollout(5)["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3]
    env = PendulumEnv().append_transform(lambda td: td)  # a plain callable is accepted
    assert isinstance(env, TransformedEnv)
