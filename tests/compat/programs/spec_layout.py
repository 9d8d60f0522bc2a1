"""Where transforms declare their keys: observation, state, reward, done and action specs."""

import torch

from tdrl.data import Unbounded
from tdrl.envs import (
    CatFrames,
    GymEnv,
    InitTracker,
    RenameTransform,
    RewardScaling,
    RewardSum,
    StepCounter,
    TensorDictPrimer,
    TransformedEnv,
)


def keys(spec):
    return {k if isinstance(k, str) else tuple(k) for k in spec.keys(True, True)}


base = GymEnv("Pendulum-v1")
assert keys(base.full_observation_spec) == {"observation"}
assert keys(base.full_state_spec) == set()
assert keys(base.full_done_spec) == {"done", "terminated", "truncated"}

env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(10))
assert "step_count" in keys(env.full_observation_spec)
assert "step_count" in keys(env.full_state_spec)
assert env.full_observation_spec["step_count"].dtype == torch.int64

env = TransformedEnv(GymEnv("Pendulum-v1"), InitTracker())
assert "is_init" in keys(env.full_observation_spec)
assert env.full_observation_spec["is_init"].dtype == torch.bool

env = TransformedEnv(GymEnv("Pendulum-v1"), TensorDictPrimer(h=Unbounded(shape=(3,))))
assert "h" in keys(env.full_observation_spec) and "h" in keys(env.full_state_spec)

env = TransformedEnv(GymEnv("Pendulum-v1"), CatFrames(N=3, dim=-1, in_keys=["observation"]))
assert env.full_observation_spec["observation"].shape == (9,)

env = TransformedEnv(GymEnv("Pendulum-v1"), RenameTransform(["observation"], ["obs"]))
assert keys(env.full_observation_spec) == {"obs"}

env = TransformedEnv(GymEnv("Pendulum-v1"), RewardScaling(0.0, 2.0))
assert keys(env.full_reward_spec) == {"reward"}

env = TransformedEnv(GymEnv("Pendulum-v1"), RewardSum())
assert "episode_reward" in keys(env.full_observation_spec)
assert env.full_observation_spec["episode_reward"].shape == (1,)
r = env.rollout(3)
assert r["next", "episode_reward"].shape == (3, 1)
# TorchRL's RewardSum also declares its running sum as env state
assert "episode_reward" in keys(env.full_state_spec), keys(env.full_state_spec)
print("OK spec_layout")
