"""(f) Value estimation: GAE on an env rollout."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.envs import GymEnv, StepCounter, TransformedEnv
from tdrl.modules import MLP, ValueOperator
from tdrl.objectives.value import GAE, TD0Estimator, TDLambdaEstimator

torch.manual_seed(0)
env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=10))
env.set_seed(0)
policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
with torch.no_grad():
    rollout = env.rollout(25, policy, break_when_any_done=False)
assert rollout.batch_size == (25,)
value = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[16]), in_keys=["observation"])
gae = GAE(gamma=0.99, lmbda=0.95, value_network=value, average_gae=False)
with torch.no_grad():
    out = gae(rollout.clone())
assert out["advantage"].shape == (25, 1)
assert out["value_target"].shape == (25, 1)
assert out["state_value"].shape == (25, 1)
assert ("next", "state_value") in out.keys(True)
assert torch.isfinite(out["advantage"]).all()
assert torch.allclose(out["value_target"], out["advantage"] + out["state_value"], atol=1e-5)

# batched [B, T] layout
r2 = torch.stack([rollout[:12], rollout[12:24]], 0)
with torch.no_grad():
    o2 = gae(r2)
assert o2["advantage"].shape == (2, 12, 1)

# set_keys and other estimators
td0 = TD0Estimator(gamma=0.9, value_network=value)
td0.set_keys(value_target="my_target")
with torch.no_grad():
    o3 = td0(rollout.clone())
assert "my_target" in o3.keys()
tdl = TDLambdaEstimator(gamma=0.9, lmbda=0.9, value_network=value)
with torch.no_grad():
    o4 = tdl(rollout.clone())
assert o4["advantage"].shape == (25, 1)
print("OK gae_rollout")
