"""(g) SACLoss on replayed data with SoftUpdate."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import DoubleToFloat, GymEnv, TransformedEnv
from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import SACLoss, SoftUpdate

torch.manual_seed(0)
env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
env.set_seed(0)
actor = ProbabilisticActor(
    TensorDictModule(
        torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[32]), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    ),
    in_keys=["loc", "scale"],
    spec=env.action_spec,
    distribution_class=TanhNormal,
    distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
    return_log_prob=False,
)


class QNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = MLP(in_features=4, out_features=1, num_cells=[32])

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


qvalue = ValueOperator(QNet(), in_keys=["observation", "action"])
loss = SACLoss(actor_network=actor, qvalue_network=qvalue, num_qvalue_nets=2, loss_function="l2")
loss.make_value_estimator(gamma=0.99)
updater = SoftUpdate(loss, tau=0.005)
optim = torch.optim.Adam(loss.parameters(), lr=3e-4)
with torch.no_grad():
    data = env.rollout(60, actor, break_when_any_done=False)
rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=16)
rb.extend(data)
for _ in range(3):
    sample = rb.sample()
    out = loss(sample)
    assert {"loss_actor", "loss_qvalue", "loss_alpha"} <= set(out.keys())
    assert "alpha" in out.keys() and "entropy" in out.keys()
    total = out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]
    assert torch.isfinite(total)
    total.backward()
    optim.step()
    optim.zero_grad()
    updater.step()
assert out["loss_qvalue"].shape == ()
print("OK loss_sac")
