"""(a) Environments: GymEnv, check_env_specs, rollout, step_mdp and spec manipulation."""

import torch

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs import GymEnv, step_mdp
from tdrl.envs.utils import check_env_specs

env = GymEnv("Pendulum-v1")
env.set_seed(0)
torch.manual_seed(0)
check_env_specs(env)

# specs
assert isinstance(env.observation_spec, Composite)
assert isinstance(env.action_spec, Bounded)
assert env.action_spec.shape == torch.Size([1])
assert env.observation_spec["observation"].shape == torch.Size([3])
assert "reward" in env.full_reward_spec.keys()
assert env.reward_spec.shape == torch.Size([1])
assert set(env.full_done_spec.keys()) >= {"done", "terminated", "truncated"}
assert env.batch_size == torch.Size([])
action = env.action_spec.rand()
assert env.action_spec.is_in(action)
assert (action.abs() <= 2.0).all()
spec = Composite(obs=Unbounded(shape=(3,)), shape=())
spec["act"] = Bounded(low=-1.0, high=1.0, shape=(2,))
z = spec.zero()
assert z["act"].shape == (2,) and z["obs"].shape == (3,)
exp = spec.expand(4)
assert exp.shape == (4,) and exp["act"].shape == (4, 2)

# manual loop
td = env.reset()
assert "observation" in td.keys()
for _ in range(5):
    td["action"] = env.action_spec.rand()
    td = env.step(td)
    assert ("next", "reward") in td.keys(True)
    assert ("next", "observation") in td.keys(True)
    td = step_mdp(td)
    assert "next" not in td.keys()
    assert "observation" in td.keys()

# rand_step and rollout
td = env.rand_step(env.reset())
assert td["next", "observation"].shape == (3,)
rollout = env.rollout(max_steps=10)
assert rollout.batch_size == torch.Size([10])
assert rollout["next", "reward"].shape == (10, 1)
assert rollout["next", "done"].shape == (10, 1)
assert rollout["action"].dtype == torch.float32
assert torch.isfinite(rollout["next", "observation"]).all()
# step_mdp on a stacked rollout: next obs becomes obs
stepped = step_mdp(rollout, keep_other=True)
assert (stepped["observation"] == rollout["next", "observation"]).all()

# discrete env
cp = GymEnv("CartPole-v1")
r = cp.rollout(5)
assert r["action"].shape == (5, 2)  # one-hot by default
print("OK envs_basics")
