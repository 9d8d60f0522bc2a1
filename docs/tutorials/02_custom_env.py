"""Writing a custom environment

Subclass `EnvBase`: declare the specs in `__init__`, write `_reset`, `_step` and `_set_seed`, and let
`check_env_specs` tell you whether the data matches what you declared. The env below is a 1-D walk: the
agent pushes a point towards the origin and the episode ends when it gets there (terminated) or after a
step limit (truncated).
"""

# %%
# ## The environment
# The specs carry the batch size as leading dims. `_step` returns a TensorDict with the next observation,
# the reward and the done flags; tdrl's step pipeline puts it under `"next"` and fills `done` from
# `terminated`/`truncated` when only some are written.
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Bounded, Categorical, Composite, Unbounded
from tdrl.envs import EnvBase, StepCounter, TransformedEnv, check_env_specs


class PointEnv(EnvBase):
    """A point on a line, pushed left or right by +-0.1 per step; the reward is minus its distance."""

    def __init__(self, batch_size=(), device=None):
        super().__init__(batch_size=batch_size, device=device)
        shape = torch.Size(batch_size)
        self.observation_spec = Composite(position=Unbounded((*shape, 1)), shape=shape)
        self.action_spec = Bounded(-0.1, 0.1, shape=(*shape, 1))
        self.reward_spec = Unbounded((*shape, 1))
        self.done_spec = Composite(
            done=Categorical(2, (*shape, 1), dtype=torch.bool),
            terminated=Categorical(2, (*shape, 1), dtype=torch.bool),
            shape=shape,
        )
        self.rng = torch.Generator()

    def _reset(self, tensordict: TensorDictBase | None) -> TensorDictBase:
        position = torch.rand((*self.batch_size, 1), generator=self.rng) * 2 - 1
        done = torch.zeros((*self.batch_size, 1), dtype=torch.bool)
        return TensorDict(
            {"position": position, "done": done, "terminated": done.clone()}, batch_size=self.batch_size
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        position = tensordict["position"] + tensordict["action"].clamp(-0.1, 0.1)
        arrived = position.abs() < 0.05
        return TensorDict(
            {"position": position, "reward": -position.abs(), "done": arrived, "terminated": arrived},
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed: int | None) -> None:
        self.rng.manual_seed(int(seed) if seed is not None else 0)


env = PointEnv()
env.set_seed(0)
check_env_specs(env)
print(env.rollout(3))

# %%
# ## A policy, a time limit and a batch
# The same class works with a batch size. `StepCounter` adds a step limit that ends episodes with
# `truncated=True`, so value estimators still bootstrap from the last state. `break_when_all_done=True`
# rolls out until every copy has ended once (a copy that finished stops stepping).
env = TransformedEnv(PointEnv(batch_size=(4,)), StepCounter(max_steps=6))
env.set_seed(0)


def go_home(td: TensorDictBase) -> TensorDictBase:
    # a hand-written policy: step towards the origin
    td["action"] = -0.1 * td["position"].sign()
    return td


data = env.rollout(100, go_home, break_when_any_done=False, break_when_all_done=True)
print(data.batch_size)
print("final distance per env:", data["next", "position"][:, -1].abs().squeeze(-1))
print("terminated:", data["next", "terminated"].any(dim=1).squeeze(-1))
print("truncated:", data["next", "truncated"].any(dim=1).squeeze(-1))
