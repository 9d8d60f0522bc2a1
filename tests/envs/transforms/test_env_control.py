"""BatchSizeTransform, AutoResetTransform/AutoResetEnv, VecGymEnvTransform, ConditionalPolicySwitch and
MultiAction: the transform contract where it applies, TorchRL 0.14.1 golden values, errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Composite, Unbounded
from tdrl.envs import (
    AutoResetEnv,
    AutoResetTransform,
    BatchSizeTransform,
    Compose,
    ConditionalPolicySwitch,
    EnvBase,
    MultiAction,
    PendulumEnv,
    StepCounter,
    TransformedEnv,
    VecGymEnvTransform,
)

from ._contract import TransformContract
from ._envs import VectorEnv


# ---------------------------------------------------------------------------------------- contract suite
class TestBatchSizeTransform(TransformContract):
    has_plain = True

    def make_transform(self):
        return BatchSizeTransform(reshape_fn=lambda data: data.unsqueeze(-1))

    def check(self, rollout, setting):
        lead = (1,) if setting == "single" else (2, 1)
        assert rollout.shape[:-1] == lead and rollout["next", "observation"].shape[-1] == 3

    def check_plain(self, data, out):
        assert out.batch_size == (*data.batch_size, 1)


class TestConditionalPolicySwitch(TransformContract):
    has_plain = False

    def make_transform(self):
        # On odd steps, a fixed policy plays a second step inside the same outer step.
        return ConditionalPolicySwitch(
            policy=lambda td: td.set("action", torch.full((*td.batch_size, 2), 0.5, dtype=torch.float64)),
            condition=lambda td: (td["t"] % 2 == 1).reshape(td.batch_size),
        )

    def check(self, rollout, setting):
        # The outer policy only sees even step counts (the switch plays every odd one), until the reset.
        t = rollout["t"][..., 0]
        assert (t % 2 == 0).all()


class TestVecGymEnvTransform(TransformContract):
    has_plain = False
    in_workers = True

    def make_transform(self):
        return VecGymEnvTransform()

    def check(self, rollout, setting):
        # VectorEnv writes no "final" entry: the last observation of each episode is lost (NaN).
        done = rollout["next", "done"][..., 0]
        obs = rollout["next", "observation"]
        assert obs[done].isnan().all() and not obs[~done].isnan().any()


# ---------------------------------------------------------------------------------------- BatchSizeTransform
class _Stateless(EnvBase):
    batch_locked = False

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded(3))
        self.reward_spec = Unbounded(1)
        self.action_spec = Unbounded(1)

    def _reset(self, tensordict, **kwargs):
        shape = tensordict.batch_size if tensordict is not None else torch.Size([])
        out = self.observation_spec.zero(shape)
        out.update(self.full_done_spec.zero(shape))
        return out

    def _step(self, tensordict):
        out = TensorDict(observation=tensordict["observation"] + tensordict["action"], batch_size=tensordict.batch_size)
        out.update(self.full_done_spec.zero(tensordict.batch_size))
        out.set("reward", tensordict["action"].clone())
        return out

    def _set_seed(self, seed):
        return None


def test_batch_size_expands_a_stateless_env():
    env = TransformedEnv(_Stateless(), BatchSizeTransform(batch_size=[5]))
    assert env.batch_size == (5,) and env.observation_spec["observation"].shape == (5, 3)
    rollout = env.rollout(4)
    assert rollout.shape == (5, 4)
    assert rollout["next", "observation"].shape == (5, 4, 3)


def test_batch_size_reset_func_and_errors():
    calls = []

    def reset_func(tensordict, tensordict_reset, env):
        calls.append(type(env).__name__)
        return env.observation_spec.zero().update(env.full_done_spec.zero())

    env = TransformedEnv(_Stateless(), BatchSizeTransform(batch_size=[2], reset_func=reset_func, env_kwarg=True))
    assert env.reset().batch_size == (2,) and calls == ["TransformedEnv"]
    with pytest.raises(ValueError, match="exactly one"):
        BatchSizeTransform()
    with pytest.raises(ValueError, match="exactly one"):
        BatchSizeTransform(batch_size=[2], reshape_fn=lambda x: x)
    with pytest.raises(TypeError, match="reshape_fn"):
        BatchSizeTransform(reshape_fn=3)


# ---------------------------------------------------------------------------------------- AutoResetTransform
class _SelfResetting(VectorEnv):
    """VectorEnv that starts its next episode inside the step that ends one (a Gym-style auto-reset)."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        if out["done"].any():
            fresh = super()._reset(None)
            out.update(fresh.exclude("done", "terminated", "truncated"))
        return out


def test_auto_reset_fills_and_hands_out_the_next_episode():
    env = AutoResetEnv(_SelfResetting(episode_len=3), AutoResetTransform())
    rollout = env.rollout(7, break_when_any_done=False)
    done = rollout["next", "done"][..., 0]
    assert done.tolist() == [False, False, True, False, False, True, False]
    assert rollout["next", "observation"][done].isnan().all()
    assert (rollout["next", "t"][done] == -1).all()  # the int fill
    # the step after a done starts from the first observation of the new episode (t == 0), without a reset
    assert rollout["t"][3].item() == 0 and rollout["t"][6].item() == 0


def test_auto_reset_no_replace_and_container_check():
    env = AutoResetEnv(_SelfResetting(episode_len=2), AutoResetTransform(replace=False))
    rollout = env.rollout(4, break_when_any_done=False)
    assert not rollout["next", "observation"].isnan().any()
    plain = TransformedEnv(_SelfResetting(episode_len=2), AutoResetTransform())
    with pytest.raises(RuntimeError, match="AutoResetEnv"):
        plain.reset()
    with pytest.raises(ValueError, match="fill_float"):
        AutoResetTransform(fill_float="zero")
    with pytest.raises(RuntimeError, match="inserted"):
        env.insert_transform(0, StepCounter())


# ---------------------------------------------------------------------------------------- VecGymEnvTransform
class _WithFinal(_SelfResetting):
    """Reports the true last observation in a "final" sub-tensordict, like TorchRL's gym terminal_obs_reader."""

    def __init__(self, **kwargs):
        super().__init__(batch_size=(2,), **kwargs)
        self.observation_spec["final"] = Composite(observation=Unbounded((2, 3)), shape=(2,))

    def _step(self, tensordict):
        before = super(_SelfResetting, self)._step(tensordict)
        final = TensorDict(observation=before["observation"].clone(), batch_size=self.batch_size)
        out = before
        if out["done"].any():
            fresh = super(_SelfResetting, self)._reset(None)
            mask = out["done"][..., 0]
            out["observation"][mask] = fresh["observation"][mask]
        out.set("final", final)
        return out

    def _reset(self, tensordict=None, **kwargs):
        out = super()._reset(tensordict, **kwargs)
        out.set("final", TensorDict(observation=out["observation"].clone(), batch_size=self.batch_size))
        return out


def test_vec_gym_env_restores_final_and_reset_observations():
    env = TransformedEnv(_WithFinal(episode_len=2), VecGymEnvTransform())
    assert "final" not in env.observation_spec.keys()
    rollout = env.rollout(4, break_when_any_done=False)
    assert "final" not in rollout["next"].keys()
    assert not rollout["next", "observation"].isnan().any()
    with pytest.raises(RuntimeError, match="plain data"):
        VecGymEnvTransform()(TensorDict())


# ---------------------------------------------------------------------------------------- ConditionalPolicySwitch
def test_conditional_policy_switch_golden_step_counts():
    # TorchRL 0.14.1: StepCounter / switch (odd total count) / StepCounter("main") over PendulumEnv.
    switch = ConditionalPolicySwitch(
        policy=lambda td: td.set("action", torch.zeros(1)), condition=lambda td: td["step_count"] % 2 == 1
    )
    env = TransformedEnv(PendulumEnv(), Compose(StepCounter(), switch, StepCounter(step_count_key="main")))
    rollout = env.rollout(4)
    assert rollout["step_count"].squeeze(-1).tolist() == [0, 2, 4, 6]
    assert rollout["main"].squeeze(-1).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="condition"):
        ConditionalPolicySwitch(policy=lambda td: td, condition=3)
    bad = TransformedEnv(PendulumEnv(), ConditionalPolicySwitch(policy=lambda td: td, condition=lambda td: "yes"))
    with pytest.raises(TypeError, match="bool"):
        bad.reset()


# ---------------------------------------------------------------------------------------- MultiAction
def test_multi_action_golden_rewards():
    # TorchRL 0.14.1, PendulumEnv seeded 0, chunk [[0.5], [1.0], [-1.0]] (values recorded from its run).
    env = TransformedEnv(PendulumEnv(), MultiAction())
    assert env.full_reward_spec["reward"].shape == (-1, 1) and env.full_action_spec["action"].shape == (-1, 1)
    env.set_seed(0)
    td = env.reset().set("action", torch.tensor([[0.5], [1.0], [-1.0]]))
    out = env.step(td)
    torch.testing.assert_close(out["next", "reward"], torch.tensor([[-0.029580], [-0.036298], [-0.058915]]),
                               atol=1e-5, rtol=0)
    torch.testing.assert_close(out["next", "th"], torch.tensor(0.075147), atol=1e-5, rtol=0)


def test_multi_action_stacked_observations_golden():
    env = TransformedEnv(PendulumEnv(), MultiAction(stack_rewards=False, stack_observations=True))
    assert env.full_reward_spec["reward"].shape == (1,) and env.full_observation_spec["th"].shape == (-1,)
    env.set_seed(0)
    out = env.step(env.reset().set("action", torch.tensor([[0.5], [1.0]])))
    torch.testing.assert_close(out["next", "reward"], torch.tensor([-0.036298]), atol=1e-5, rtol=0)
    torch.testing.assert_close(out["next", "th"], torch.tensor([0.006170, 0.043591]), atol=1e-5, rtol=0)


def test_multi_action_stops_after_done_and_errors():
    # Unbatched, done inside the chunk: TorchRL 0.14.1 raises (a stack of incongruent batch sizes); here the
    # remaining actions are skipped and, as TorchRL documents, the stack holds the executed steps' rewards
    # and one zero slot for the skipped rest.
    env = TransformedEnv(VectorEnv(episode_len=2), MultiAction())
    out = env.step(env.reset().set("action", torch.zeros(4, 2, dtype=torch.float64)))
    assert out["next", "reward"].shape == (3, 1)
    assert out["next", "done"].item() and out["next", "t"].item() == 2
    assert (out["next", "reward"][2] == 0).all()
    with pytest.raises(KeyError, match="no action entry"):
        env.step(env.reset())
    with pytest.raises(ValueError, match="dim"):
        MultiAction(dim=0)
    assert MultiAction.from_vla().out_keys_inv == [("vla_action", "chunk")]
