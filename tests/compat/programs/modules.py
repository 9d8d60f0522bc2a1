"""(d) Modules: MLP, TensorDictModule, ProbabilisticActor, ValueOperator, QValueActor, EGreedyModule."""

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.data import OneHot
from tdrl.envs import GymEnv
from tdrl.envs.utils import ExplorationType, set_exploration_type
from tdrl.modules import (
    MLP,
    EGreedyModule,
    NormalParamExtractor,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)

torch.manual_seed(0)
mlp = MLP(in_features=3, out_features=4, num_cells=[32, 32], activation_class=torch.nn.Tanh)
assert mlp(torch.randn(5, 3)).shape == (5, 4)
lazy = MLP(out_features=2, num_cells=[16], depth=None)
assert lazy(torch.randn(2, 7)).shape == (2, 2)

env = GymEnv("Pendulum-v1")
env.set_seed(0)
net = torch.nn.Sequential(
    MLP(in_features=3, out_features=2, num_cells=[32]),
    NormalParamExtractor(),
)
module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
actor = ProbabilisticActor(
    module=module,
    spec=env.action_spec,
    in_keys=["loc", "scale"],
    distribution_class=TanhNormal,
    distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
    return_log_prob=True,
)
td = actor(env.reset())
assert td["action"].shape == (1,)
assert "sample_log_prob" in td.keys() or "action_log_prob" in td.keys()
assert (td["action"].abs() <= 2.0).all()
dist = actor.get_dist(td)
assert dist.log_prob(td["action"]).shape == ()

with set_exploration_type(ExplorationType.DETERMINISTIC):
    a1 = actor(env.reset())["action"]
with set_exploration_type(ExplorationType.RANDOM):
    r = env.rollout(8, actor)
assert r["action"].shape == (8, 1)

value = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[32]), in_keys=["observation"])
v = value(r)
assert v["state_value"].shape == (8, 1)
qv = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[32]), in_keys=["observation", "action"])
assert qv(r.clone())["state_action_value"].shape == (8, 1)

# discrete: QValueActor + EGreedyModule
cp = GymEnv("CartPole-v1")
cp.set_seed(0)
qnet = MLP(in_features=4, out_features=2, num_cells=[32])
qactor = QValueActor(qnet, in_keys=["observation"], spec=cp.action_spec)
out = qactor(cp.reset())
assert out["action"].shape == (2,)
assert out["action_value"].shape == (2,)
assert out["chosen_action_value"].shape == (1,)
assert out["action"].sum() == 1
greedy = EGreedyModule(spec=cp.action_spec, eps_init=1.0, eps_end=0.05, annealing_num_steps=100)
explore = TensorDictSequential(qactor, greedy)
rr = cp.rollout(10, explore)
assert rr["action"].shape[-1] == 2
greedy.step(50)
assert 0.05 < greedy.eps.item() < 1.0
with set_exploration_type(ExplorationType.DETERMINISTIC):
    td = explore(cp.reset())
assert td["action"].sum() == 1

spec = OneHot(3)
qa = QValueActor(
    TensorDictModule(torch.nn.Linear(5, 3), in_keys=["obs"], out_keys=["action_value"]), spec=spec
)
o = qa(TensorDict({"obs": torch.randn(4, 5)}, [4]))
assert o["action"].shape == (4, 3)
print("OK modules")
