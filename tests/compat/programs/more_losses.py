"""A2CLoss, ReinforceLoss, DiscreteSACLoss and TD3Loss on tiny batches, with target updaters."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.envs import DoubleToFloat, GymEnv, TransformedEnv
from tdrl.modules import (
    MLP,
    Actor,
    NormalParamExtractor,
    OneHotCategorical,
    ProbabilisticActor,
    TanhNormal,
    ValueOperator,
)
from tdrl.objectives import A2CLoss, DiscreteSACLoss, ReinforceLoss, SoftUpdate, TD3Loss

torch.manual_seed(0)
env = TransformedEnv(GymEnv("Pendulum-v1"), DoubleToFloat())
env.set_seed(0)
actor = ProbabilisticActor(
    TensorDictModule(
        torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[16]), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    ),
    in_keys=["loc", "scale"],
    spec=env.action_spec,
    distribution_class=TanhNormal,
    return_log_prob=True,
)
critic = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[16]), in_keys=["observation"])
with torch.no_grad():
    data = env.rollout(16, actor, break_when_any_done=False)

for cls in (A2CLoss, ReinforceLoss):
    loss = cls(actor, critic)
    loss.make_value_estimator(gamma=0.9)
    out = loss(data.clone())
    if cls is A2CLoss:
        assert {"loss_objective", "loss_critic"} <= set(out.keys())
    else:
        assert {"loss_actor", "loss_value"} <= set(out.keys())
    sum(v for k, v in out.items() if k.startswith("loss_")).backward()
    assert all(torch.isfinite(v).all() for v in out.values())

# TD3
det_actor = Actor(MLP(in_features=3, out_features=1, num_cells=[16]), in_keys=["observation"])


class QNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = MLP(in_features=4, out_features=1, num_cells=[16])

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


td3 = TD3Loss(
    det_actor, ValueOperator(QNet(), in_keys=["observation", "action"]), action_spec=env.action_spec
)
td3.make_value_estimator(gamma=0.99)
upd = SoftUpdate(td3, tau=0.01)
out = td3(data.clone())
assert {"loss_actor", "loss_qvalue"} <= set(out.keys())
(out["loss_actor"] + out["loss_qvalue"]).backward()
upd.step()

# discrete SAC on CartPole
cp = GymEnv("CartPole-v1")
cp.set_seed(0)
dactor = ProbabilisticActor(
    TensorDictModule(
        MLP(in_features=4, out_features=2, num_cells=[16]), in_keys=["observation"], out_keys=["logits"]
    ),
    in_keys=["logits"],
    spec=cp.action_spec,
    distribution_class=OneHotCategorical,
    return_log_prob=False,
)
dq = TensorDictModule(
    MLP(in_features=4, out_features=2, num_cells=[16]), in_keys=["observation"], out_keys=["action_value"]
)
with torch.no_grad():
    ddata = cp.rollout(12, dactor, break_when_any_done=False)
dsac = DiscreteSACLoss(dactor, dq, action_space=cp.action_spec, num_actions=2)
dsac.make_value_estimator(gamma=0.99)
out = dsac(ddata)
assert {"loss_actor", "loss_qvalue", "loss_alpha"} <= set(out.keys())
(out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
assert all(torch.isfinite(v).all() for v in out.values())
print("OK more_losses")
