"""dm_control through DMControlEnv: specs, check_env_specs, transforms and rollout."""

import torch

from tdrl.envs import CatTensors, DMControlEnv, DoubleToFloat, StepCounter, TransformedEnv
from tdrl.envs.utils import check_env_specs

env = DMControlEnv("cartpole", "balance")
env.set_seed(0)
assert set(env.observation_spec.keys()) == {"position", "velocity"}
assert env.action_spec.shape == (1,)
check_env_specs(env)
tenv = TransformedEnv(
    env,
    CatTensors(in_keys=["position", "velocity"], out_key="observation"),
)
tenv.append_transform(DoubleToFloat())
tenv.append_transform(StepCounter(max_steps=10))
check_env_specs(tenv)
r = tenv.rollout(20)
assert r.batch_size == (10,)
assert r["observation"].shape == (10, 5)
assert r["observation"].dtype == torch.float32
assert r["next", "reward"].dtype == torch.float32
assert torch.isfinite(r["next", "reward"]).all()
print("OK dmc_env")
