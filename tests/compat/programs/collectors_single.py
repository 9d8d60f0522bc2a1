"""(h) Single-process Collector: iteration, update_policy_weights_, batched envs, random policy."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.envs import GymEnv, SerialEnv, StepCounter, TransformedEnv

torch.manual_seed(0)


def make_env():
    return TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=15))


policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
collector = Collector(make_env, policy, frames_per_batch=20, total_frames=60)
collector.set_seed(0)
batches = []
for data in collector:
    assert data.batch_size == (20,)
    assert "collector" in data.keys()
    assert data["collector", "traj_ids"].shape == (20,)
    assert ("next", "reward") in data.keys(True)
    batches.append(data)
    with torch.no_grad():
        policy.module.weight.add_(1.0)
    collector.update_policy_weights_()
assert len(batches) == 3
# StepCounter truncation yields distinct trajectory ids
assert batches[0]["collector", "traj_ids"].unique().numel() == 2
collector.shutdown()

# Collector (new name) with a batched env: [n_envs, frames_per_batch // n_envs]
env = SerialEnv(2, make_env)
collector = Collector(env, policy, frames_per_batch=20, total_frames=40, split_trajs=False)
n = 0
for data in collector:
    assert data.batch_size == (2, 10)
    assert data["action"].shape == (2, 10, 1)
    n += data.numel()
assert n == 40
collector.shutdown()

# no policy: random actions from the spec; state_dict available
collector = Collector(make_env(), None, frames_per_batch=10, total_frames=-1)
it = iter(collector)
d = next(it)
assert d.batch_size == (10,)
assert (d["action"].abs() <= 2.0).all()
sd = collector.state_dict()
assert isinstance(sd, dict)
collector.shutdown()
print("OK collectors_single")
