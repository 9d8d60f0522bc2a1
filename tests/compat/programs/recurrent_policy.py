"""Recurrent-DQN-tutorial style: LSTMModule, InitTracker, make_tensordict_primer, rollout and Collector."""

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.collectors import Collector
from tdrl.envs import Compose, GymEnv, InitTracker, StepCounter, TransformedEnv
from tdrl.modules import MLP, LSTMModule, QValueModule, set_recurrent_mode

torch.manual_seed(0)
env = TransformedEnv(GymEnv("CartPole-v1"), Compose(StepCounter(), InitTracker()))
env.set_seed(0)
lstm = LSTMModule(input_size=4, hidden_size=16, in_key="observation", out_key="embed")
assert set(lstm.in_keys) >= {"observation", "is_init"}
env.append_transform(lstm.make_tensordict_primer())
assert "recurrent_state_h" in env.observation_spec.keys()
mlp = TensorDictModule(
    MLP(in_features=16, out_features=2, num_cells=[16]), in_keys=["embed"], out_keys=["action_value"]
)
qval = QValueModule(spec=env.action_spec)
policy = TensorDictSequential(lstm, mlp, qval)
td = env.reset()
assert td["is_init"].all()
td = policy(td)
assert ("next", "recurrent_state_h") in td.keys(True)
r = env.rollout(10, policy)
assert r["recurrent_state_h"].shape == (10, 1, 16)
assert r["is_init"][0].all() and not r["is_init"][1:].any()
# the hidden state fed at step t+1 is the one produced at step t
assert torch.allclose(r["next", "recurrent_state_h"][:-1], r["recurrent_state_h"][1:])

collector = Collector(env, policy, frames_per_batch=16, total_frames=32)
for data in collector:
    assert data.batch_size == (16,)
    assert data["recurrent_state_c"].shape == (16, 1, 16)
collector.shutdown()

# training mode: process a [B, T] sequence at once
with set_recurrent_mode(True):
    out = policy(data.unsqueeze(0).clone())
assert out["action_value"].shape == (1, 16, 2)
print("OK recurrent_policy")
