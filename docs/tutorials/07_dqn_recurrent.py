"""DQN with a recurrent policy

A Q network with an LSTM in the middle, trained by DQN on slices of trajectories. The env carries the
LSTM's hidden state from step to step (a `TensorDictPrimer` made by the module), `InitTracker` marks
episode starts so the state is reset there, and during training the LSTM runs over whole slices at once
(`set_recurrent_mode(True)`). This page shows the parts working together, not a solved task: with its
8,000-frame budget the greedy policy does only somewhat better than a random one (about 20 steps).
"""

# %%
# ## The env and the recurrent Q network
# The observation goes through an MLP, the LSTM and a linear head to Q values; `QValueModule` picks the
# greedy action. The primer adds `"recurrent_state_h"`/`"recurrent_state_c"` to the env's specs.
import os

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer
from tdrl.envs import (
    ExplorationType,
    GymEnv,
    InitTracker,
    RewardSum,
    StepCounter,
    TransformedEnv,
    set_exploration_type,
)
from tdrl.modules import MLP, EGreedyModule, LSTMModule, QValueModule, set_recurrent_mode
from tdrl.objectives import DQNLoss, SoftUpdate

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
TOTAL_FRAMES = 600 if TINY else 8000
torch.manual_seed(0)
torch.set_num_threads(1)

env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())
env.append_transform(StepCounter())
env.append_transform(RewardSum())
n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]

embed = TensorDictModule(MLP(in_features=n_obs, out_features=64, num_cells=[64]), ["observation"], ["embed"])
lstm = LSTMModule(input_size=64, hidden_size=64, in_key="embed", out_key="features")
head = TensorDictModule(nn.Linear(64, n_act), ["features"], ["action_value"])
qnet = TensorDictSequential(embed, lstm, head, QValueModule(spec=env.action_spec))
env.append_transform(lstm.make_tensordict_primer())
env.set_seed(0)
print(sorted(env.observation_spec.keys()))

# %%
# ## Exploration, loss and a slice buffer
# Epsilon-greedy exploration wraps the greedy policy for collection. The buffer stores single steps and
# samples slices of 16 consecutive steps of one trajectory.
explore = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.05, annealing_num_steps=TOTAL_FRAMES // 2)
policy = TensorDictSequential(qnet, explore)
loss_module = DQNLoss(qnet, action_space=env.action_spec, delay_value=True)
loss_module.make_value_estimator(gamma=0.99)
target_update = SoftUpdate(loss_module, eps=0.95)
optimizer = torch.optim.Adam(loss_module.parameters(), lr=1e-3)
buffer = TensorDictReplayBuffer(
    storage=LazyTensorStorage(20_000),
    sampler=SliceSampler(slice_len=16, traj_key=("collector", "traj_ids")),
    batch_size=256,
)
collector = Collector(env, policy, frames_per_batch=100, total_frames=TOTAL_FRAMES)

# %%
# ## Training
# In recurrent mode the LSTM reads the sampled `[slices, 16]` batch as sequences and resets its state
# where `"is_init"` is set.
for i, batch in enumerate(collector):
    buffer.extend(batch.reshape(-1))
    explore.step(batch.numel())
    if len(buffer) < 500:
        continue
    for _ in range(4):
        sample = buffer.sample().reshape(-1, 16)
        with set_recurrent_mode(True):
            loss = loss_module(sample)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        target_update.step()
    collector.update_policy_weights_()
    finished = batch["next", "episode_reward"][batch["next", "done"]]
    if i % 20 == 0:
        mean = finished.mean().item() if finished.numel() else float("nan")
        print(f"frames {100 * (i + 1):6d}  epsilon {explore.eps.item():.2f}  mean return {mean:6.1f}")
collector.shutdown()

# %%
# ## Evaluation
# Step by step, the hidden state travels in the tensordict from one step to the next.
with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
    episode = env.rollout(500, qnet)
print("greedy episode return:", episode["next", "episode_reward"][-1].item())
