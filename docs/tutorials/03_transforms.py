"""Transforms

A `TransformedEnv` runs transforms on what goes in and out of an env: they rename, normalise, stack or
count entries and update the specs to match, so policies and checks see the transformed env.
"""

# %%
# ## A stack of transforms
import os

import torch

from tdrl.envs import (
    CatFrames,
    Compose,
    DoubleToFloat,
    GymEnv,
    ObservationNorm,
    RewardSum,
    StepCounter,
    TransformedEnv,
    check_env_specs,
)

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
torch.manual_seed(0)

env = TransformedEnv(
    GymEnv("Pendulum-v1"),
    Compose(
        DoubleToFloat(),                                    # float64 entries -> float32
        ObservationNorm(in_keys=["observation"], standard_normal=True),  # (obs - loc) / scale
        CatFrames(N=4, dim=-1, in_keys=["observation"]),   # the last 4 observations, concatenated
        StepCounter(max_steps=50),                          # "step_count" and truncation after 50 steps
        RewardSum(),                                        # "episode_reward": the return so far
    ),
)
print(env.transform)

# %%
# ## Statistics and specs
# `ObservationNorm.init_stats` estimates `loc` and `scale` (with `standard_normal=True`: the mean and
# standard deviation of each feature) from random steps. The observation spec now says 12 features
# (4 frames of 3); `check_env_specs` confirms the data agrees.
env.set_seed(0)
env.transform[1].init_stats(num_iter=20 if TINY else 1000, reduce_dim=0, cat_dim=0)
print("loc", env.transform[1].loc, "scale", env.transform[1].scale)
print(env.observation_spec["observation"].shape)
env.set_seed(0)
check_env_specs(env)

# %%
# ## What a rollout holds now
data = env.rollout(60, break_when_any_done=True)
print(data.batch_size)  # stopped by the 50-step limit
print("step_count at the end:", data["next", "step_count"][-1].item())
print("truncated at the end:", data["next", "truncated"][-1].item())
print("episode return:", data["next", "episode_reward"][-1].item())
newest = data["observation"][..., -3:]  # the newest of the 4 stacked frames
print("normalised observation: mean", newest.mean(0), "std", newest.std(0))

# %%
# ## Appending, inserting and reading transforms
# Transforms can be added after the env is built; `env.transform` is a `Compose` that can be indexed.
base = TransformedEnv(GymEnv("CartPole-v1"))
base.append_transform(StepCounter())
base.append_transform(RewardSum())
print([type(t).__name__ for t in base.transform])
print(sorted(base.observation_spec.keys()))
env.close()
base.close()
