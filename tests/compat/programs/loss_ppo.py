"""(g) ClipPPOLoss + GAE on collected data, with an optimizer step."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.envs import DoubleToFloat, GymEnv, TransformedEnv
from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import ClipPPOLoss
from tdrl.objectives.value import GAE

torch.manual_seed(0)
env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
env.set_seed(0)
actor_net = torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[32]), NormalParamExtractor())
actor = ProbabilisticActor(
    TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
    spec=env.action_spec,
    in_keys=["loc", "scale"],
    distribution_class=TanhNormal,
    distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
    return_log_prob=True,
)
critic = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[32]), in_keys=["observation"])
collector = Collector(env, actor, frames_per_batch=64, total_frames=64)
data = next(iter(collector))
collector.shutdown()
assert data.batch_size == (64,)

advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
loss_module = ClipPPOLoss(
    actor_network=actor,
    critic_network=critic,
    clip_epsilon=0.2,
    entropy_bonus=True,
    entropy_coeff=1e-4,
    critic_coeff=1.0,
    loss_critic_type="smooth_l1",
)
optim = torch.optim.Adam(loss_module.parameters(), lr=3e-4)
with torch.no_grad():
    advantage(data)
assert "advantage" in data.keys() and "value_target" in data.keys()
before = [p.detach().clone() for p in loss_module.parameters()]
loss_vals = loss_module(data)
assert {"loss_objective", "loss_critic", "loss_entropy"} <= set(loss_vals.keys())
total = loss_vals["loss_objective"] + loss_vals["loss_critic"] + loss_vals["loss_entropy"]
assert total.shape == ()
assert torch.isfinite(total)
total.backward()
torch.nn.utils.clip_grad_norm_(loss_module.parameters(), 1.0)
optim.step()
optim.zero_grad()
changed = any((b != p).any() for b, p in zip(before, loss_module.parameters()))
assert changed
# the estimator can be built by the loss itself
loss2 = ClipPPOLoss(actor, critic)
loss2.make_value_estimator(gamma=0.9, lmbda=0.9)
out = loss2(data.exclude("advantage", "value_target"))
assert torch.isfinite(out["loss_objective"])
print("OK loss_ppo")
