"""Get-started-with-losses style: Actor + exploration noise + DDPGLoss, ValueEstimators, SoftUpdate."""

import torch
from tensordict.nn import TensorDictSequential

from tdrl.data import LazyMemmapStorage, ReplayBuffer
from tdrl.envs import GymEnv, StepCounter, TransformedEnv
from tdrl.modules import MLP, Actor, AdditiveGaussianModule, OrnsteinUhlenbeckProcessModule, ValueOperator
from tdrl.objectives import DDPGLoss, SoftUpdate, ValueEstimators

torch.manual_seed(0)
env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=50))
env.set_seed(0)
actor = Actor(MLP(in_features=3, out_features=1, num_cells=[32]), in_keys=["observation"])
assert actor.out_keys == ["action"]


class QNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = MLP(in_features=4, out_features=1, num_cells=[32])

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


value = ValueOperator(QNet(), in_keys=["observation", "action"])
noise = AdditiveGaussianModule(spec=env.action_spec, annealing_num_steps=100)
policy = TensorDictSequential(actor, noise)
r = env.rollout(20, policy)
assert r["action"].shape == (20, 1)
assert (r["action"].abs() <= 2.0).all()
noise.step(10)
ou = OrnsteinUhlenbeckProcessModule(spec=env.action_spec)
policy_ou = TensorDictSequential(actor, ou)
r_ou = env.rollout(10, policy_ou)
assert r_ou["action"].shape == (10, 1)

loss = DDPGLoss(actor_network=actor, value_network=value, delay_actor=True, delay_value=True)
loss.make_value_estimator(ValueEstimators.TD0, gamma=0.99)
updater = SoftUpdate(loss, eps=0.99)
optim = torch.optim.Adam(loss.parameters(), lr=1e-3)
rb = ReplayBuffer(storage=LazyMemmapStorage(max_size=1000))
indices = rb.extend(r)
assert len(indices) == 20
for _ in range(3):
    sample = rb.sample(batch_size=8)
    assert sample.batch_size == (8,)
    out = loss(sample)
    assert {"loss_actor", "loss_value"} <= set(out.keys())
    (out["loss_actor"] + out["loss_value"]).backward()
    optim.step()
    optim.zero_grad()
    updater.step()
assert torch.isfinite(out["loss_value"])
assert {"pred_value", "target_value"} <= set(out.keys())
print("OK ddpg_getting_started")
