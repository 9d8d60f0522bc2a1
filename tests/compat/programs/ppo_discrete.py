"""Discrete PPO variants: OneHotCategorical actor, PPOLoss / ClipPPOLoss / KLPENPPOLoss, set_keys, GAE."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.envs import GymEnv, StepCounter, TransformedEnv
from tdrl.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from tdrl.objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss
from tdrl.objectives.value import GAE

torch.manual_seed(0)
env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
env.set_seed(0)
actor = ProbabilisticActor(
    TensorDictModule(
        MLP(in_features=4, out_features=2, num_cells=[16]), in_keys=["observation"], out_keys=["logits"]
    ),
    in_keys=["logits"],
    spec=env.action_spec,
    distribution_class=OneHotCategorical,
    return_log_prob=True,
)
critic = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[16]), in_keys=["observation"])
collector = Collector(env, actor, frames_per_batch=32, total_frames=32)
data = next(iter(collector))
collector.shutdown()
assert data["action"].shape == (32, 2)
log_prob_key = "sample_log_prob" if "sample_log_prob" in data.keys() else "action_log_prob"
assert data[log_prob_key].shape == (32,)

gae = GAE(gamma=0.99, lmbda=0.95, value_network=critic)
with torch.no_grad():
    gae(data)
for cls in (PPOLoss, ClipPPOLoss, KLPENPPOLoss):
    loss = cls(actor, critic, normalize_advantage=True)
    out = loss(data.clone())
    assert "loss_objective" in out.keys() and "loss_critic" in out.keys()
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    total.backward()
    assert torch.isfinite(total)
    if cls is KLPENPPOLoss:
        assert "kl" in out.keys()
    if cls is ClipPPOLoss:
        assert "clip_fraction" in out.keys()

# renamed advantage / value-target keys, through set_keys on both estimator and loss
gae.set_keys(advantage="my_adv", value_target="my_vt")
renamed = data.exclude("advantage", "value_target")
with torch.no_grad():
    gae(renamed)
assert "my_adv" in renamed.keys()
loss = ClipPPOLoss(actor, critic)
loss.set_keys(advantage="my_adv", value_target="my_vt")
out = loss(renamed)
assert torch.isfinite(out["loss_objective"])
print("OK ppo_discrete")
