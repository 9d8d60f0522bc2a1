"""Your first environment and rollout

Make an environment, look at its specs, step it by hand, roll out a policy and batch several copies.
"""

# %%
# ## An environment and its specs
# `GymEnv` wraps a gymnasium environment. Its specs say what every entry holds: shape, dtype, bounds.
import os

import torch

from tdrl.envs import GymEnv, ParallelEnv, SerialEnv, check_env_specs, step_mdp
from tdrl.modules import MLP, QValueActor

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
STEPS = 20 if TINY else 200

torch.manual_seed(0)
env = GymEnv("CartPole-v1")
env.set_seed(0)
print(env.observation_spec["observation"])
print(env.action_spec)
check_env_specs(env)  # a short rollout compared with the specs: silent when all is well

# %%
# ## Stepping by hand
# `reset()` returns a TensorDict with the first observation; `step()` reads `"action"` and writes the
# result under `"next"`; `step_mdp()` moves `"next"` to the root for the following step.
td = env.reset()
td = env.rand_action(td)
td = env.step(td)
print(td)
td = step_mdp(td)
print(sorted(td.keys()))

# %%
# ## A rollout with a policy
# A policy is any module that reads the observation and writes `"action"`. Here an untrained MLP scores
# the two actions and `QValueActor` picks the best one, written in the spec's one-hot format.
net = MLP(in_features=4, out_features=2, num_cells=[32])
policy = QValueActor(net, in_keys=["observation"], spec=env.action_spec)
data = env.rollout(STEPS, policy, break_when_any_done=False)
print(data.batch_size, "steps;", int(data["next", "done"].sum()), "episodes ended")
print("mean reward per step:", data["next", "reward"].mean().item())

# %%
# ## Several environments at once
# `SerialEnv` steps copies in this process, `ParallelEnv` in worker processes; both add a leading batch
# dimension. A rollout of a batched env has shape `[n_envs, T]`.
serial = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
serial.set_seed(0)
print(serial.rollout(5, break_when_any_done=False).batch_size)
serial.close()

parallel = ParallelEnv(2, lambda: GymEnv("CartPole-v1"))
parallel.set_seed(0)
batch = parallel.rollout(5, policy, break_when_any_done=False)
print(batch.batch_size, batch["next", "observation"].shape)
parallel.close()
env.close()
