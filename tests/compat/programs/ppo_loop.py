"""(i) A tiny PPO training loop in the style of TorchRL's PPO tutorial."""

from collections import defaultdict

import torch
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor

from tdrl.collectors import Collector
from tdrl.data.replay_buffers import ReplayBuffer
from tdrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from tdrl.data.replay_buffers.storages import LazyTensorStorage
from tdrl.envs import Compose, DoubleToFloat, ObservationNorm, StepCounter, TransformedEnv
from tdrl.envs.libs.gym import GymEnv
from tdrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type
from tdrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import ClipPPOLoss
from tdrl.objectives.value import GAE

torch.manual_seed(0)
num_cells = 32
lr = 3e-4
max_grad_norm = 1.0
frames_per_batch = 100
total_frames = 300
sub_batch_size = 25
num_epochs = 2
clip_epsilon = 0.2
gamma = 0.99
lmbda = 0.95
entropy_eps = 1e-4

base_env = GymEnv("Pendulum-v1")
env = TransformedEnv(
    base_env,
    Compose(
        ObservationNorm(in_keys=["observation"]),
        DoubleToFloat(),
        StepCounter(),
    ),
)
env.transform[0].init_stats(num_iter=50, reduce_dim=0, cat_dim=0)
env.set_seed(0)
check_env_specs(env)

actor_net = torch.nn.Sequential(
    torch.nn.LazyLinear(num_cells),
    torch.nn.Tanh(),
    torch.nn.LazyLinear(num_cells),
    torch.nn.Tanh(),
    torch.nn.LazyLinear(2 * env.action_spec.shape[-1]),
    NormalParamExtractor(),
)
policy_module = TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"])
policy_module = ProbabilisticActor(
    module=policy_module,
    spec=env.action_spec,
    in_keys=["loc", "scale"],
    distribution_class=TanhNormal,
    distribution_kwargs={
        "low": env.action_spec.space.low,
        "high": env.action_spec.space.high,
    },
    return_log_prob=True,
)
value_net = torch.nn.Sequential(
    torch.nn.LazyLinear(num_cells),
    torch.nn.Tanh(),
    torch.nn.LazyLinear(1),
)
value_module = ValueOperator(module=value_net, in_keys=["observation"])
policy_module(env.reset())
value_module(env.reset())

collector = Collector(
    env,
    policy_module,
    frames_per_batch=frames_per_batch,
    total_frames=total_frames,
    split_trajs=False,
    device="cpu",
)
replay_buffer = ReplayBuffer(
    storage=LazyTensorStorage(max_size=frames_per_batch),
    sampler=SamplerWithoutReplacement(),
)
advantage_module = GAE(gamma=gamma, lmbda=lmbda, value_network=value_module, average_gae=True)
loss_module = ClipPPOLoss(
    actor_network=policy_module,
    critic_network=value_module,
    clip_epsilon=clip_epsilon,
    entropy_bonus=bool(entropy_eps),
    entropy_coeff=entropy_eps,
    critic_coeff=1.0,
    loss_critic_type="smooth_l1",
)
optim = torch.optim.Adam(loss_module.parameters(), lr)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optim, total_frames // frames_per_batch, 0.0)

logs = defaultdict(list)
n_steps = 0
for i, tensordict_data in enumerate(collector):
    for _ in range(num_epochs):
        advantage_module(tensordict_data)
        data_view = tensordict_data.reshape(-1)
        replay_buffer.extend(data_view.cpu())
        for _ in range(frames_per_batch // sub_batch_size):
            subdata = replay_buffer.sample(sub_batch_size)
            loss_vals = loss_module(subdata.to("cpu"))
            loss_value = loss_vals["loss_objective"] + loss_vals["loss_critic"] + loss_vals["loss_entropy"]
            loss_value.backward()
            torch.nn.utils.clip_grad_norm_(loss_module.parameters(), max_grad_norm)
            optim.step()
            optim.zero_grad()
            n_steps += 1
            assert torch.isfinite(loss_value)
    logs["reward"].append(tensordict_data["next", "reward"].mean().item())
    logs["step_count"].append(tensordict_data["step_count"].max().item())
    logs["lr"].append(optim.param_groups[0]["lr"])
    if i % 2 == 0:
        with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
            eval_rollout = env.rollout(50, policy_module)
            logs["eval reward"].append(eval_rollout["next", "reward"].mean().item())
            assert eval_rollout.batch_size == (50,)
    scheduler.step()
collector.shutdown()
assert n_steps == (total_frames // frames_per_batch) * num_epochs * (frames_per_batch // sub_batch_size)
assert len(logs["reward"]) == 3
assert all(torch.isfinite(torch.tensor(v)).all() for v in logs.values())
assert logs["lr"][0] == lr
print("OK ppo_loop")
