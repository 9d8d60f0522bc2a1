"""(b) Transforms on a GymEnv and batched envs."""

import torch

from tdrl.envs import (
    CatFrames,
    Compose,
    DoubleToFloat,
    GymEnv,
    ObservationNorm,
    ParallelEnv,
    RewardSum,
    SerialEnv,
    StepCounter,
    TransformedEnv,
)
from tdrl.envs.utils import check_env_specs

torch.manual_seed(0)
env = TransformedEnv(
    GymEnv("Pendulum-v1"),
    Compose(
        ObservationNorm(in_keys=["observation"]),
        DoubleToFloat(),
        StepCounter(max_steps=20),
        RewardSum(),
        CatFrames(N=4, dim=-1, in_keys=["observation"], out_keys=["observation_stack"]),
    ),
)
env.set_seed(0)
env.transform[0].init_stats(num_iter=50, reduce_dim=0, cat_dim=0)
loc = env.transform[0].loc
assert loc.shape == (3,)
check_env_specs(env)
assert env.observation_spec["observation_stack"].shape == (12,)
assert "step_count" in env.observation_spec.keys()
assert "episode_reward" in env.observation_spec.keys()
r = env.rollout(30)
assert r.batch_size == (20,), r.batch_size  # truncated by StepCounter
assert r["next", "truncated"][-1].all()
assert r["next", "step_count"][-1].item() == 20
assert r["next", "observation_stack"].shape == (20, 12)
assert torch.allclose(r["next", "episode_reward"][-1], r["next", "reward"].sum(0), atol=1e-4)
assert torch.isfinite(r["observation"]).all()
# transform append and indexing
env2 = TransformedEnv(GymEnv("CartPole-v1"))
env2.append_transform(StepCounter())
env2.append_transform(RewardSum())
assert len(env2.transform) == 2
r2 = env2.rollout(5)
assert r2["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4, 5]


def make_env():
    return TransformedEnv(GymEnv("CartPole-v1"), StepCounter())


serial = SerialEnv(2, make_env)
serial.set_seed(0)
check_env_specs(serial)
rs = serial.rollout(5, break_when_any_done=False)
assert rs.batch_size == (2, 5)
assert rs["next", "step_count"].shape == (2, 5, 1)
serial.close()

if __name__ == "__main__":
    par = ParallelEnv(2, make_env)
    par.set_seed(0)
    rp = par.rollout(5, break_when_any_done=False)
    assert rp.batch_size == (2, 5)
    assert rp["observation"].shape == (2, 5, 4)
    par.close()
print("OK transforms_batched")
