"""(g) DQNLoss with a target network updated by SoftUpdate / HardUpdate."""

import torch
from tensordict.nn import TensorDictSequential

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import GymEnv, StepCounter, TransformedEnv
from tdrl.modules import MLP, EGreedyModule, QValueActor
from tdrl.objectives import DQNLoss, HardUpdate, SoftUpdate

torch.manual_seed(0)
env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
env.set_seed(0)
value_net = MLP(in_features=4, out_features=2, num_cells=[32, 32])
policy = QValueActor(value_net, in_keys=["observation"], spec=env.action_spec)
exploration = EGreedyModule(env.action_spec, annealing_num_steps=200, eps_init=0.5)
policy_explore = TensorDictSequential(policy, exploration)
collector = Collector(env, policy_explore, frames_per_batch=50, total_frames=150, init_random_frames=50)
rb = ReplayBuffer(storage=LazyTensorStorage(1000))
loss = DQNLoss(value_network=policy, action_space=env.action_spec, delay_value=True)
loss.make_value_estimator(gamma=0.99)
optim = torch.optim.Adam(loss.parameters(), lr=1e-3)
updater = SoftUpdate(loss, eps=0.95)
n_updates = 0
for data in collector:
    assert data.batch_size == (50,)
    rb.extend(data)
    exploration.step(data.numel())
    for _ in range(2):
        sample = rb.sample(32)
        loss_vals = loss(sample)
        assert loss_vals["loss"].shape == ()
        assert torch.isfinite(loss_vals["loss"])
        loss_vals["loss"].backward()
        optim.step()
        optim.zero_grad()
        updater.step()
        n_updates += 1
collector.shutdown()
assert n_updates == 6
assert len(rb) == 150
# target params differ from the online params after soft updates
online = dict(loss.value_network_params.flatten_keys().items())
target = dict(loss.target_value_network_params.flatten_keys().items())
assert online.keys() == target.keys()
assert any((online[k] != target[k]).any() for k in online)

hard = HardUpdate(loss, value_network_update_interval=2)
hard.step()
hard.step()
target = dict(loss.target_value_network_params.flatten_keys().items())
assert all(torch.equal(online[k].data, target[k].data) for k in online)
print("OK loss_dqn")
