from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs import EnvBase, check_env_specs

from .mocks import CountingEnv


class _ArgsEnv(EnvBase):
    """Written the TorchRL way: __new__ forwards the constructor arguments."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, size, *, batch_size=()):
        super().__init__(batch_size=batch_size)
        self.size = size
        self.observation_spec = Unbounded((*self.batch_size, size))  # a bare leaf, wrapped as "observation"
        self.action_spec = Unbounded((*self.batch_size, 1))
        self.reward_spec = Unbounded((*self.batch_size, 1))

    def _reset(self, tensordict, **kwargs):
        return TensorDict({"observation": torch.zeros(*self.batch_size, self.size)}, self.batch_size)

    def _step(self, tensordict):
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return TensorDict({"observation": torch.ones(*self.batch_size, self.size),
                           "reward": tensordict["action"].sum(-1, keepdim=True), "done": done,
                           "terminated": done.clone()}, self.batch_size)

    def _set_seed(self, seed):
        pass


def test_new_accepts_constructor_arguments_and_bare_observation_spec():
    env = _ArgsEnv(3, batch_size=(2,))
    assert isinstance(env.observation_spec, Composite)
    assert env.observation_spec["observation"].shape == (2, 3)
    assert env.observation_spec.shape == (2,)
    env.check_env_specs()  # the method form
    check_env_specs(env)


def test_unbatched_spec_containers():
    env = CountingEnv(batch_size=(4,))
    assert env.input_spec_unbatched.shape == ()
    assert env.input_spec_unbatched["full_action_spec", "action"].shape == (1,)
    assert env.output_spec_unbatched["full_observation_spec", "obs"].shape == (1,)
    assert env.input_spec.shape == (4,)  # the batched containers are untouched


class _SpeclessEnv(EnvBase):
    """No specs declared: auto_specs_ fills them from a rollout."""

    auto_complete_done_specs = False

    def __init__(self):
        super().__init__(batch_size=(2,))
        self.t = 0

    def _reset(self, tensordict, **kwargs):
        self.t = 0
        done = torch.zeros(2, 1, dtype=torch.bool)
        return TensorDict({"observation": torch.zeros(2, 3), "hidden": torch.zeros(2, 5),
                           "done": done, "terminated": done.clone()}, [2])

    def _step(self, tensordict):
        self.t += 1
        done = torch.zeros(2, 1, dtype=torch.bool)
        return TensorDict({"observation": torch.full((2, 3), float(self.t)), "reward": torch.ones(2, 1),
                           "done": done, "terminated": done.clone()}, [2])

    def _set_seed(self, seed):
        pass


def _policy(td):
    return td.set("action", torch.ones(*td.batch_size, 2, dtype=torch.int64))


def test_auto_specs_from_a_rollout():
    env = _SpeclessEnv().auto_specs_(_policy)
    assert env.full_action_spec["action"].shape == (2, 2)
    assert env.full_action_spec["action"].dtype == torch.int64
    assert env.full_observation_spec["observation"].shape == (2, 3)
    assert env.full_reward_spec["reward"].shape == (2, 1)
    assert isinstance(env.full_done_spec["done"], Categorical)
    assert env.full_done_spec["done"].dtype == torch.bool
    # "hidden" is read back at each step but is no output: it is state; observation/done are not
    assert set(env.full_state_spec.keys()) == {"hidden"}
    data = env.rollout(3, _policy)
    assert data["next", "observation"].shape == (2, 3, 3)


def test_auto_specs_unaccounted_keys():
    class Extra(_SpeclessEnv):
        def _step(self, tensordict):
            return super()._step(tensordict).set("info", torch.zeros(2, 1))

    with pytest.raises(RuntimeError, match=r"\['info'\] are unaccounted"):
        Extra().auto_specs_(_policy)
    env = Extra().auto_specs_(_policy, observation_key=["observation", "info"])
    assert set(env.full_observation_spec.keys()) == {"observation", "info"}
