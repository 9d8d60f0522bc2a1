"""Less common env features: frame_skip, categorical actions, partial resets, fake_tensordict, MultiStep."""

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.data import Categorical
from tdrl.data.postprocs import MultiStep
from tdrl.envs import GymEnv, RewardSum, SerialEnv, StepCounter, TransformedEnv

torch.manual_seed(0)
env = GymEnv("CartPole-v1", categorical_action_encoding=True)
assert isinstance(env.action_spec, Categorical)
env.set_seed(0)
r = env.rollout(4)
assert r["action"].shape == (4,)
assert r["action"].dtype == torch.int64
assert env.action_key == "action"
assert env.reward_key == "reward"
fake = env.fake_tensordict()
assert ("next", "reward") in fake.keys(True)
assert fake["observation"].shape == (4,)

skip = GymEnv("Pendulum-v1", frame_skip=2)
skip.set_seed(0)
rs = skip.rollout(3)
assert rs.batch_size == (3,)


def make_env():
    return TransformedEnv(GymEnv("CartPole-v1"), StepCounter(max_steps=6))


senv = TransformedEnv(SerialEnv(2, make_env), RewardSum())
senv.set_seed(0)
td = senv.reset()
td = senv.rand_step(td)
td = senv.rand_step(
    td["next"].exclude("reward", "done", "terminated", "truncated").set("action", td["action"])
)
reset_td = TensorDict({"_reset": torch.tensor([[True], [False]])}, [2])
out = senv.reset(reset_td.update(td.select("step_count", "episode_reward")))
assert out["step_count"].squeeze(-1).tolist() == [0, 1], out["step_count"]

# rollout on a batched env stops at the first done by default
rb = senv.rollout(20)
assert rb.shape[0] == 2 and rb.shape[1] <= 6
assert rb["next", "done"][:, -1].any()
rb2 = senv.rollout(14, break_when_any_done=False)
assert rb2.shape == (2, 14)
# RewardSum restarts with each episode
ep = rb2["next", "episode_reward"].squeeze(-1)
cnt = rb2["next", "step_count"].squeeze(-1)
assert torch.allclose(ep, cnt.float())  # CartPole pays 1 per step

# MultiStep postproc in a collector
policy = TensorDictModule(torch.nn.Linear(4, 2), in_keys=["observation"], out_keys=["action"])
collector = Collector(
    make_env,
    None,
    frames_per_batch=12,
    total_frames=12,
    postproc=MultiStep(gamma=0.9, n_steps=3),
)
data = next(iter(collector))
collector.shutdown()
assert "steps_to_next_obs" in data.keys()
assert "gamma" in data.keys()
assert (data["steps_to_next_obs"] <= 3).all()
assert data["next", "reward"].max() <= 1 + 0.9 + 0.81 + 1e-5
print("OK env_extras")
