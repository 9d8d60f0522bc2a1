"""SAC from parts

Soft actor-critic on Pendulum: a tanh-Gaussian actor, two Q networks, a replay buffer, `SACLoss` with its
automatic entropy temperature, and a `SoftUpdate` of the target Q networks, in an explicit loop.
"""

# %%
# ## Actor and Q networks
# The actor's MLP outputs a location and a scale (`NormalParamExtractor` splits them); `TanhNormal`
# squashes samples into the action bounds read from the spec. The Q network reads the observation and
# the action (`MLP` concatenates them) and writes `"state_action_value"`.
import os

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import ExplorationType, GymEnv, RewardSum, TransformedEnv, set_exploration_type
from tdrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import SACLoss, SoftUpdate

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
TOTAL_FRAMES, INIT_FRAMES = (400, 200) if TINY else (12_000, 1000)
torch.manual_seed(0)
torch.set_num_threads(1)

env = TransformedEnv(GymEnv("Pendulum-v1"), RewardSum())
env.set_seed(0)
n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]

actor_net = nn.Sequential(MLP(in_features=n_obs, out_features=2 * n_act, num_cells=[128, 128]),
                          NormalParamExtractor())
actor = ProbabilisticActor(
    TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
    in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=env.action_spec,
    distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
)
qvalue = ValueOperator(MLP(in_features=n_obs + n_act, out_features=1, num_cells=[128, 128]),
                       in_keys=["observation", "action"])

# %%
# ## Loss, target networks, buffer, collector
# `SACLoss` keeps two copies of the Q network (`num_qvalue_nets=2`) and their targets; `SoftUpdate`
# moves the targets towards the live weights after each optimiser step. The first `INIT_FRAMES` frames
# are collected with random actions.
loss_module = SACLoss(actor, qvalue, num_qvalue_nets=2, action_spec=env.action_spec)
loss_module.make_value_estimator(gamma=0.99)
target_update = SoftUpdate(loss_module, tau=0.005)
optimizer = torch.optim.Adam(loss_module.parameters(), lr=3e-4)
buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100_000), batch_size=128)
collector = Collector(env, actor, frames_per_batch=50, total_frames=TOTAL_FRAMES, init_random_frames=INIT_FRAMES)

# %%
# ## Training
# One gradient step per collected frame once the buffer holds the random warm-up data.
returns = []
for i, batch in enumerate(collector):
    buffer.extend(batch)
    returns.extend(batch["next", "episode_reward"][batch["next", "done"]].tolist())
    if len(buffer) < INIT_FRAMES:
        continue
    for _ in range(batch.numel()):
        losses = loss_module(buffer.sample())
        loss = losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_alpha"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        target_update.step()
    collector.update_policy_weights_()
    if i % 40 == 0:
        print(f"frames {collector.frames_per_batch * (i + 1):6d}  alpha {losses['alpha'].item():.3f}  "
              f"last episode return {returns[-1] if returns else float('nan'):8.1f}")
collector.shutdown()

# %%
# ## Evaluation
with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
    episode = env.rollout(200, actor)
print("deterministic episode return:", round(episode["next", "episode_reward"][-1].item(), 1))
