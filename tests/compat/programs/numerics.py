"""Same seed, same numbers: value estimators and losses on fixed data, against values printed by TorchRL 0.14.1.

The expected numbers below were produced by running this same program on TorchRL 0.14.1 (torch 2.13, CPU).
Networks are built in the same order after ``torch.manual_seed``, so both libraries start from identical
weights; the data comes from a seeded generator. (SAC/TD3 are left out: both libraries re-initialise their
Q-network copies randomly, in a different order, so their numbers differ by design, not by semantics.)
"""

import math

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.data import Bounded, OneHot
from tdrl.modules import (
    MLP,
    Actor,
    NormalParamExtractor,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)
from tdrl.objectives import A2CLoss, ClipPPOLoss, DDPGLoss, DQNLoss
from tdrl.objectives.value import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator

B, T = 2, 7
spec = Bounded(-1.0, 1.0, shape=(1,))


def close(got, want, name):
    got = float(torch.as_tensor(got).detach())
    assert math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-4), f"{name}: tdrl/torchrl {got} != {want}"


def make_data():
    g = torch.Generator().manual_seed(1)
    done = torch.zeros(B, T, 1, dtype=torch.bool)
    done[0, 3] = True
    trunc = torch.zeros(B, T, 1, dtype=torch.bool)
    trunc[1, 5] = True
    return TensorDict(
        {
            "observation": torch.randn(B, T, 3, generator=g),
            "action": torch.rand(B, T, 1, generator=g) * 1.8 - 0.9,
            "action_log_prob": torch.randn(B, T, generator=g) - 1,
            "sample_log_prob": torch.randn(B, T, generator=g) - 1,
            "next": {
                "observation": torch.randn(B, T, 3, generator=g),
                "reward": torch.randn(B, T, 1, generator=g),
                "done": done | trunc,
                "terminated": done,
                "truncated": trunc,
            },
        },
        [B, T],
    )


torch.manual_seed(0)
actor = ProbabilisticActor(
    TensorDictModule(
        torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[8]), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    ),
    in_keys=["loc", "scale"],
    spec=spec,
    distribution_class=TanhNormal,
    return_log_prob=True,
)
critic = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"])

# value estimators: done at [0, 3] (terminated), truncation at [1, 5]
expected = {
    "gae": (-4.52128, 13.92876),
    "td0": (-2.90559, 13.17953),
    "td1": (-10.40827, 22.28739),
    "tdl": (-7.31927, 17.33462),
}
estimators = {
    "gae": GAE(gamma=0.9, lmbda=0.8, value_network=critic),
    "td0": TD0Estimator(gamma=0.9, value_network=critic),
    "td1": TD1Estimator(gamma=0.9, value_network=critic),
    "tdl": TDLambdaEstimator(gamma=0.9, lmbda=0.8, value_network=critic),
}
for name, est in estimators.items():
    with torch.no_grad():
        out = est(make_data())
    close(out["advantage"].sum(), expected[name][0], f"{name} advantage")
    close(out["value_target"].abs().sum(), expected[name][1], f"{name} value_target")

with torch.no_grad():
    data = GAE(gamma=0.9, lmbda=0.8, value_network=critic)(make_data())
expected = {
    "clip": {
        "loss_critic": 0.61905,
        "loss_objective": 0.47356,
        "clip_fraction": 0.71429,
        "kl_approx": 0.03762,
    },
    "a2c": {"loss_critic": 0.61905, "loss_objective": -0.36076},
}
for name, loss in [("clip", ClipPPOLoss(actor, critic, entropy_coeff=0.01)), ("a2c", A2CLoss(actor, critic))]:
    torch.manual_seed(3)
    out = loss(data.clone())
    for key, want in expected[name].items():
        close(out[key], want, f"{name} {key}")


class QNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = MLP(in_features=4, out_features=1, num_cells=[8])

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


torch.manual_seed(5)
qvalue = ValueOperator(QNet(), in_keys=["observation", "action"])
det_actor = Actor(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["observation"])
flat = make_data().exclude("action_log_prob", "sample_log_prob").reshape(-1)
loss = DDPGLoss(det_actor, qvalue)
loss.make_value_estimator(gamma=0.9)
torch.manual_seed(7)
out = loss(flat.clone())
for key, want in {"loss_actor": -0.14649, "loss_value": 1.59754, "target_value_max": 2.6061}.items():
    close(out[key], want, f"ddpg {key}")

torch.manual_seed(9)
qactor = QValueActor(
    MLP(in_features=3, out_features=2, num_cells=[8]), in_keys=["observation"], spec=OneHot(2)
)
dq = flat.clone()
dq["action"] = torch.nn.functional.one_hot((dq["observation"][:, 0] > 0).long(), 2)
loss = DQNLoss(qactor, action_space="one-hot", delay_value=True)
loss.make_value_estimator(gamma=0.9)
close(loss(dq)["loss"], 1.42372, "dqn loss")
print("OK numerics")
