"""PPO from parts

Proximal policy optimisation on CartPole, assembled by hand from tdrl's parts and trained with an explicit
loop: a collector, an actor and a critic, GAE, a clipped PPO loss and a replay buffer used as a
minibatch iterator. (`tdrl train` and `PPOTrainer` wire the same parts from a config.)
"""

# %%
# ## Environment, actor and critic
# The actor writes logits, `ProbabilisticActor` samples a one-hot action from them and stores its
# log-probability (`return_log_prob=True`), which the PPO ratio needs.
import os

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from tdrl.envs import ExplorationType, GymEnv, RewardSum, TransformedEnv, set_exploration_type
from tdrl.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from tdrl.objectives import ClipPPOLoss
from tdrl.objectives.value import GAE

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
FRAMES_PER_BATCH, TOTAL_FRAMES = (256, 512) if TINY else (1024, 40_960)
EPOCHS, MINIBATCH = 5, 256
torch.manual_seed(0)
torch.set_num_threads(1)  # tiny networks: threads cost more than they bring


def make_env():
    return TransformedEnv(GymEnv("CartPole-v1", num_envs=4), RewardSum())


env = make_env()
env.set_seed(0)
n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]
logits = TensorDictModule(
    MLP(in_features=n_obs, out_features=n_act, num_cells=[64, 64], activation_class=nn.Tanh),
    in_keys=["observation"], out_keys=["logits"],
)
actor = ProbabilisticActor(
    logits, in_keys=["logits"], distribution_class=OneHotCategorical, spec=env.action_spec, return_log_prob=True
)
critic = ValueOperator(MLP(in_features=n_obs, out_features=1, num_cells=[64, 64], activation_class=nn.Tanh),
                       in_keys=["observation"])

# %%
# ## Loss, advantage and data pipeline
# `GAE` writes `"advantage"` and `"value_target"` over the time dimension of each collected batch; the
# loss reads them with the stored log-probabilities. The buffer is refilled with every batch and
# iterated in minibatches, without replacement.
advantage = GAE(gamma=0.98, lmbda=0.8, value_network=critic)
loss_module = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.0, normalize_advantage=True)
optimizer = torch.optim.Adam(loss_module.parameters(), lr=1e-3)
collector = Collector(env, actor, frames_per_batch=FRAMES_PER_BATCH, total_frames=TOTAL_FRAMES)
buffer = ReplayBuffer(storage=LazyTensorStorage(FRAMES_PER_BATCH), sampler=SamplerWithoutReplacement(),
                      batch_size=MINIBATCH)

# %%
# ## The training loop
# Each batch has layout `[n_envs, T]` (GAE runs along `T`); it is flattened into the buffer.
for i, batch in enumerate(collector):
    for _ in range(EPOCHS):
        with torch.no_grad():
            advantage(batch)
        buffer.extend(batch.reshape(-1))
        for minibatch in buffer:
            losses = loss_module(minibatch)
            loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
            optimizer.step()
    collector.update_policy_weights_()
    finished = batch["next", "episode_reward"][batch["next", "done"]]
    if i % 5 == 0 and finished.numel():
        print(f"batch {i:3d}: mean return of finished episodes {finished.mean():6.1f}")
collector.shutdown()

# %%
# ## Evaluation
# `set_exploration_type(DETERMINISTIC)` makes the actor take the most likely action.
eval_env = TransformedEnv(GymEnv("CartPole-v1"), RewardSum())
eval_env.set_seed(123)
with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
    episode = eval_env.rollout(500, actor)
print("deterministic episode return:", episode["next", "episode_reward"][-1].item())
