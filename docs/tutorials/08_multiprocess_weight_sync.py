"""Multi-process collection and weight sync

Collecting in worker processes while the learner trains: `MultiSyncCollector` (every worker delivers a
slice of each batch), `MultiAsyncCollector` (whichever worker is ready first), and the two ways new weights
reach the workers: shared memory (a plain `policy=`: the workers read the learner's tensors) and a weight-sync
scheme that sends a copy through each worker's pipe (`MultiProcessWeightSyncScheme`, needed when the workers
build their own policy with `policy_factory`).
"""

# %%
# ## A policy whose actions show its weights
# A deterministic policy makes the effect of a weight update visible in the collected actions: the
# action is `weight * observation`, so with the weight at 0 every action is 0, and after the update it is
# not. Each worker process builds its own env from the function (a lambda works too: tdrl pickles it).
import os

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors import MultiAsyncCollector, MultiSyncCollector
from tdrl.envs import GymEnv
from tdrl.weight_update import MultiProcessWeightSyncScheme

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
torch.manual_seed(0)


def make_env():
    return GymEnv("Pendulum-v1")


def make_policy():
    linear = nn.Linear(3, 1, bias=False)
    nn.init.zeros_(linear.weight)
    return TensorDictModule(linear, in_keys=["observation"], out_keys=["action"])


policy = make_policy()

# %%
# ## Two workers, one synchronous batch
# `frames_per_batch=200` over 2 workers: each worker contributes 100 steps, stacked into a `[2, 100]`
# batch (one row per worker). The `("collector", "traj_ids")` entry numbers trajectories across workers.
collector = MultiSyncCollector(
    [make_env, make_env], policy, frames_per_batch=200, total_frames=-1, cat_results="stack"
)
batches = iter(collector)
batch = next(batches)
print("batch", tuple(batch.shape), "| actions all zero:", bool((batch["action"] == 0).all()))

# %%
# ## Shared-memory weights: the optimiser's step is seen at once
# The collector moved the policy's parameters to shared memory before starting the workers, so writing
# into them (as `optimizer.step()` does) changes what the workers compute; `update_policy_weights_()` is
# still the call to make after each step (it copies when a parameter tensor was *replaced*, and it is what a
# collector with another transport needs).
with torch.no_grad():
    policy.module.weight.fill_(0.5)
collector.update_policy_weights_()
batch = next(batches)
expected = (0.5 * batch["observation"]).sum(-1, keepdim=True)
print("after the update, action == 0.5 * sum(obs):", torch.allclose(batch["action"], expected, atol=1e-6))
collector.shutdown()

# %%
# ## Workers that build their own policy: a weight-sync scheme
# With `policy_factory` each worker constructs its policy in its own process (policies that cannot be
# pickled, or live on a worker's device). The learner keeps its own copy and pushes its weights:
# `MultiProcessWeightSyncScheme` sends them through each worker's pipe, applied before the worker's next
# batch. `MultiAsyncCollector` yields each worker's batch as soon as it is ready (`[100]` frames here);
# its workers run one batch ahead, so the batch after an update may still be an old one.
learner_policy = make_policy()
collector = MultiAsyncCollector(
    [make_env, make_env], policy_factory=make_policy, frames_per_batch=100, total_frames=-1,
    weight_sync_schemes={"policy": MultiProcessWeightSyncScheme()},
)
batches = iter(collector)
print("first async batch", tuple(next(batches).shape))
with torch.no_grad():
    learner_policy.module.weight.fill_(-1.0)
collector.update_policy_weights_(learner_policy)
seen_new = False
for _ in range(3 if TINY else 6):  # the batches already in flight were collected with the old weights
    batch = next(batches)
    seen_new = seen_new or torch.allclose(batch["action"], -batch["observation"].sum(-1, keepdim=True), atol=1e-6)
print("a later batch used the pushed weights:", seen_new)
collector.shutdown()
