"""More modules: ConvNet, dueling nets, MaskedCategorical, interaction types, TanhNormal modes, clip_value."""

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule

from tdrl.data import Bounded
from tdrl.envs.utils import ExplorationType, set_exploration_type
from tdrl.modules import (
    MLP,
    ConvNet,
    DuelingCnnDQNet,
    MaskedCategorical,
    NormalParamExtractor,
    ProbabilisticActor,
    TanhNormal,
    ValueOperator,
)
from tdrl.objectives import ClipPPOLoss

torch.manual_seed(0)
cnn = ConvNet(num_cells=[8, 8], kernel_sizes=3, strides=1)
y = cnn(torch.randn(2, 3, 16, 16))
assert y.ndim == 2 and y.shape[0] == 2
duel = DuelingCnnDQNet(
    out_features=4,
    cnn_kwargs={"num_cells": [8], "kernel_sizes": 3, "strides": 1},
    mlp_kwargs={"num_cells": [16]},
)
assert duel(torch.randn(2, 3, 16, 16)).shape == (2, 4)

logits = torch.randn(5, 4)
mask = torch.tensor([[True, False, True, False]] * 5)
dist = MaskedCategorical(logits=logits, mask=mask)
s = dist.sample()
assert mask.gather(-1, s.unsqueeze(-1)).all()
assert dist.log_prob(s).shape == (5,)

spec = Bounded(-1.0, 1.0, shape=(2,))
actor = ProbabilisticActor(
    TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(3, 4), NormalParamExtractor()),
        in_keys=["obs"],
        out_keys=["loc", "scale"],
    ),
    in_keys=["loc", "scale"],
    spec=spec,
    distribution_class=TanhNormal,
    default_interaction_type=InteractionType.RANDOM,
    return_log_prob=True,
)
td = TensorDict({"obs": torch.randn(6, 3)}, [6])
a_rand = actor(td.clone())["action"]
a_rand2 = actor(td.clone())["action"]
assert not torch.equal(a_rand, a_rand2)
with set_exploration_type(ExplorationType.DETERMINISTIC):
    d1 = actor(td.clone())["action"]
    d2 = actor(td.clone())["action"]
assert torch.equal(d1, d2)
assert (d1.abs() <= 1).all()
dist = actor.get_dist(actor(td.clone()))
assert dist.deterministic_sample.shape == (6, 2)

critic = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[8]), in_keys=["obs"])
with torch.no_grad():
    data = actor(td.clone())
data["advantage"] = torch.randn(6, 1)
data["value_target"] = torch.randn(6, 1)
with torch.no_grad():
    data = critic(data)
loss = ClipPPOLoss(actor, critic, clip_value=True)
out = loss(data)
assert "value_clip_fraction" in out.keys()
assert torch.isfinite(out["loss_critic"])
print("OK modules_extra")
