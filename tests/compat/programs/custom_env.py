"""(c) A custom stateless EnvBase written the way TorchRL's Pendulum tutorial does."""

from typing import Optional

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs import CatTensors, EnvBase, TransformedEnv, UnsqueezeTransform
from tdrl.envs.utils import check_env_specs


def gen_params(g=10.0, batch_size=None) -> TensorDictBase:
    if batch_size is None:
        batch_size = []
    td = TensorDict(
        {
            "params": TensorDict(
                {"max_speed": 8, "max_torque": 2.0, "dt": 0.05, "g": g, "m": 1.0, "l": 1.0},
                [],
            )
        },
        [],
    )
    if batch_size:
        td = td.expand(batch_size).contiguous()
    return td


def angle_normalize(x):
    return ((x + torch.pi) % (2 * torch.pi)) - torch.pi


class PendulumEnv(EnvBase):
    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 30}
    batch_locked = False

    def __init__(self, td_params=None, seed=None, device="cpu"):
        if td_params is None:
            td_params = self.gen_params()
        super().__init__(device=device, batch_size=[])
        self._make_spec(td_params)
        if seed is None:
            seed = torch.empty((), dtype=torch.int64).random_().item()
        self.set_seed(seed)

    gen_params = staticmethod(gen_params)

    def _make_spec(self, td_params):
        self.observation_spec = Composite(
            th=Bounded(low=-torch.pi, high=torch.pi, shape=(), dtype=torch.float32),
            thdot=Bounded(
                low=-td_params["params", "max_speed"],
                high=td_params["params", "max_speed"],
                shape=(),
                dtype=torch.float32,
            ),
            params=self._make_composite_from_td(td_params["params"]),
            shape=(),
        )
        self.state_spec = self.observation_spec.clone()
        self.action_spec = Bounded(
            low=-td_params["params", "max_torque"],
            high=td_params["params", "max_torque"],
            shape=(1,),
            dtype=torch.float32,
        )
        self.reward_spec = Unbounded(shape=(*td_params.shape, 1))

    def _make_composite_from_td(self, td):
        composite = Composite(
            {
                key: self._make_composite_from_td(tensor)
                if isinstance(tensor, TensorDictBase)
                else Unbounded(dtype=tensor.dtype, device=tensor.device, shape=tensor.shape)
                for key, tensor in td.items()
            },
            shape=td.shape,
        )
        return composite

    def _reset(self, tensordict):
        if tensordict is None or tensordict.is_empty():
            tensordict = self.gen_params(batch_size=self.batch_size)
        high_th = torch.tensor(torch.pi, device=self.device)
        high_thdot = torch.tensor(1.0, device=self.device)
        low_th = -high_th
        low_thdot = -high_thdot
        th = (
            torch.rand(tensordict.shape, generator=self.rng, device=self.device) * (high_th - low_th) + low_th
        )
        thdot = (
            torch.rand(tensordict.shape, generator=self.rng, device=self.device) * (high_thdot - low_thdot)
            + low_thdot
        )
        out = TensorDict(
            {"th": th, "thdot": thdot, "params": tensordict["params"]},
            batch_size=tensordict.shape,
        )
        return out

    def _step(self, tensordict):
        th, thdot = tensordict["th"], tensordict["thdot"]
        g_force = tensordict["params", "g"]
        mass = tensordict["params", "m"]
        length = tensordict["params", "l"]
        dt = tensordict["params", "dt"]
        u = tensordict["action"].squeeze(-1)
        u = u.clamp(-tensordict["params", "max_torque"], tensordict["params", "max_torque"])
        costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        new_thdot = thdot + (3 * g_force / (2 * length) * th.sin() + 3.0 / (mass * length**2) * u) * dt
        new_thdot = new_thdot.clamp(-tensordict["params", "max_speed"], tensordict["params", "max_speed"])
        new_th = th + new_thdot * dt
        reward = -costs.view(*tensordict.shape, 1)
        done = torch.zeros_like(reward, dtype=torch.bool)
        out = TensorDict(
            {
                "th": new_th,
                "thdot": new_thdot,
                "params": tensordict["params"],
                "reward": reward,
                "done": done,
            },
            tensordict.shape,
        )
        return out

    def _set_seed(self, seed: Optional[int]):
        rng = torch.Generator()
        rng.manual_seed(seed)
        self.rng = rng


env = PendulumEnv(seed=0)
check_env_specs(env)
td = env.reset()
assert set(td.keys()) >= {"th", "thdot", "params"}
td = env.rand_step(td)
assert td["next", "reward"].shape == (1,)
assert set(env.full_done_spec.keys()) >= {"done", "terminated"}

# batched through params (batch_locked=False), as in the tutorial
batch_size = 10
td = env.reset(env.gen_params(batch_size=[batch_size]))
assert td.batch_size == (batch_size,)
td = env.rand_step(td)
assert td["next", "th"].shape == (batch_size,)
rollout = env.rollout(3, auto_reset=False, tensordict=env.reset(env.gen_params(batch_size=[batch_size])))
assert rollout.batch_size == (batch_size, 3)

# transforms from the tutorial: unsqueeze th/thdot and concatenate them into "observation"
tenv = TransformedEnv(
    env,
    UnsqueezeTransform(
        dim=-1,
        in_keys=["th", "thdot"],
        in_keys_inv=["th", "thdot"],
    ),
)
tenv.append_transform(CatTensors(in_keys=["th", "thdot"], dim=-1, out_key="observation", del_keys=False))
check_env_specs(tenv)
r = tenv.rollout(5)
assert r["observation"].shape == (5, 2)
assert torch.isfinite(r["next", "reward"]).all()

# the tutorial's training loop: backpropagate the return through a differentiable rollout
torch.manual_seed(0)
policy = TensorDictModule(
    torch.nn.Sequential(
        torch.nn.LazyLinear(16),
        torch.nn.Tanh(),
        torch.nn.LazyLinear(1),
    ),
    in_keys=["observation"],
    out_keys=["action"],
)
optim = torch.optim.Adam(policy.parameters(), lr=2e-3)
returns = []
for _ in range(3):
    init_td = tenv.reset(env.gen_params(batch_size=[4]))
    rollout = tenv.rollout(8, policy, tensordict=init_td, auto_reset=False)
    assert rollout.batch_size == (4, 8)
    traj_return = rollout["next", "reward"].mean()
    assert traj_return.requires_grad
    traj_return.backward()
    gn = torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    assert gn > 0
    optim.step()
    optim.zero_grad()
    returns.append(traj_return.item())
assert all(torch.isfinite(torch.tensor(returns)))
print("OK custom_env")
