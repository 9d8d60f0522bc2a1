"""Going to Ray: remote collectors, a remote replay buffer, and the same run from the command

When one machine's envs cannot feed the learner, the collectors move into [Ray](https://docs.ray.io)
actors: first on this machine (a local `ray.init()`), then on every machine of a Ray cluster with nothing
changed but the address. This tutorial runs everything on a local Ray: two collector actors, weights pushed
from the learner to both, a replay buffer living in its own actor that the collectors fill directly, and
`tdrl train ... collector=ray`. It needs the `distributed` extra (`pip install 'tdrl[distributed]'`).
"""

# %%
# ## A policy whose actions show its weights
# As in the multi-process tutorial, the action is `weight * sum(observation)`: with the weight at 0
# every collected action is 0, and after a weight push it is not, so the effect of an update is visible in
# the data. Ray is started here once (`num_cpus=2`: this machine's two cores) and every tdrl object below
# joins it; without this call each one starts a local Ray from its `ray_init_config` (on a cluster:
# `{"address": "auto"}`) and stops it again at `shutdown()`.
import os
import subprocess
import sys
import tempfile

import ray
import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors.distributed import RayCollector
from tdrl.data import LazyTensorStorage, RayReplayBuffer, TensorDictReplayBuffer
from tdrl.envs import GymEnv

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
torch.manual_seed(0)
RAY_INIT = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
ray.init(**RAY_INIT)


def make_env():
    return GymEnv("Pendulum-v1")


def make_policy():
    linear = nn.Linear(3, 1, bias=False)
    nn.init.zeros_(linear.weight)
    return TensorDictModule(linear, in_keys=["observation"], out_keys=["action"])


policy = make_policy()

# %%
# ## Two collector actors, batches as they come
# `num_collectors=2` starts two actors, each building its own env and a copy of the policy. With
# `sync=False` the iterator yields each actor's batch as soon as it is ready (`frames_per_batch` frames
# from one actor); `sync=True` would wait for one batch from every actor and concatenate them.
# `track_policy_version=True` stamps every batch with the version of the weights that collected it.
collector = RayCollector(
    make_env, policy, num_collectors=2, frames_per_batch=100, total_frames=-1, sync=False,
    ray_init_config=RAY_INIT, remote_configs={"num_cpus": 1}, track_policy_version=True,
)
batches = iter(collector)
batch = next(batches)
print("batch", tuple(batch.shape), "| actions all zero:", bool((batch["action"] == 0).all()))
print("policy version of that batch:", int(batch["policy_version"].flatten()[0]))

# %%
# ## Pushing weights to every actor
# The learner changes its policy (here by hand; in training, `optimizer.step()`), then
# `update_policy_weights_()` puts the weights once into Ray's object store and every actor loads them
# before its next batch. Batches already in flight were collected with the old weights, so a few may come
# back before the new ones show; the policy version says which is which.
with torch.no_grad():
    policy.module.weight.fill_(0.5)
collector.update_policy_weights_()
for _ in range(6):
    batch = next(batches)
    version = int(batch["policy_version"].flatten()[0])
    expected = 0.5 * batch["observation"].sum(-1, keepdim=True)
    if torch.allclose(batch["action"], expected, atol=1e-6):
        break
print("a batch collected with the pushed weights:", torch.allclose(batch["action"], expected, atol=1e-6),
      "| its policy version:", version)
collector.shutdown()

# %%
# ## A replay buffer in its own actor
# `RayReplayBuffer` builds the buffer inside a Ray actor: with `replay_buffer=` the collector actors
# extend it themselves (the iterator then yields `None`: no batch travels through the learner), and the
# learner samples it with the usual `sample()`. This is how off-policy training scales out: collectors
# anywhere in the cluster, one buffer, one learner.
buffer = RayReplayBuffer(
    replay_buffer_cls=TensorDictReplayBuffer, storage=LazyTensorStorage(10_000), batch_size=64,
    ray_init_config=RAY_INIT,
)
collector = RayCollector(
    make_env, policy, num_collectors=2, frames_per_batch=100, total_frames=400 if TINY else 2_000,
    replay_buffer=buffer, ray_init_config=RAY_INIT, remote_configs={"num_cpus": 1},
)
for out in collector:
    assert out is None  # the data went straight into the remote buffer
sample = buffer.sample()
print("frames in the remote buffer:", len(buffer), "| a sample:", tuple(sample.shape))
collector.shutdown()
buffer.close()
ray.shutdown()

# %%
# ## The same training from the command
# `collector=ray` moves a `tdrl train` run's collection into Ray actors; the run folder, metrics,
# checkpoints and `tdrl resume` behave as for a local run. On a cluster add `ray.address=auto` (after
# `ray start --head` on one machine and `ray start --address=HEAD_IP:6379` on the others). A tiny budget here:
run_dir = tempfile.mkdtemp(prefix="tdrl-ray-")
frames = "2048" if TINY else "20480"
cmd = [sys.executable, "-m", "tdrl.trainers.cli", "train", "algo=ppo", "collector=ray",
       "collector.num_collectors=2", f"collector.total_frames={frames}", f"run_dir={run_dir}",
       "trainer.progress_bar=false", "eval.episodes=1", "logger.tensorboard=false"]
result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
assert result.returncode == 0, result.stderr[-2000:]
print("run folder holds:", sorted(p for p in os.listdir(run_dir) if not p.startswith(".")))
