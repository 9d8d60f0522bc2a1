"""``PendulumEnv``: the classic pendulum swing-up, stateless and batched, in pure torch (no gym).

The state (``th``, ``thdot``) and the physical parameters (``params``) travel in the tensordict, so one
env instance serves any batch size (``batch_locked=False``): the batch comes from the tensordict given to
``reset``. Dynamics follow gymnasium's ``Pendulum-v1``: ``thdot += (3g/(2l) sin th + 3/(m l^2) u) dt``,
clipped to ``max_speed``; cost ``angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2``; reward ``-cost``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs.common import EnvBase
from tdrl.envs.utils import make_composite_from_td

__all__ = ["PendulumEnv"]


class PendulumEnv(EnvBase):
    """A stateless, batched pendulum (TorchRL's ``PendulumEnv``).

    Args:
        td_params: physical parameters under ``"params"`` (``gen_params()`` by default).
        seed: seed of the env's generator (drawn from torch's global RNG when ``None``).
        device: device of the env.
        batch_size: optional fixed batch size (an extension: TorchRL's env takes the batch from the
            tensordict given to ``reset``, which works here too).

    Examples:
        >>> import torch
        >>> env = PendulumEnv(seed=0)
        >>> td = env.reset(env.gen_params(batch_size=[4]))
        >>> env.rand_step(td)["next", "reward"].shape
        torch.Size([4, 1])
        >>> env.rollout(5)["next", "th"].shape
        torch.Size([5])
    """

    DEFAULT_X = math.pi
    DEFAULT_Y = 1.0
    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 30}
    batch_locked = False
    _supports_set_state = True

    def __init__(
        self,
        td_params: TensorDictBase | None = None,
        seed: int | None = None,
        device: Any = None,
        *,
        batch_size: tuple | torch.Size | None = None,
    ) -> None:
        super().__init__(device=device, batch_size=batch_size)
        if td_params is None:
            td_params = self.gen_params(batch_size=self.batch_size, device=self.device)
        elif td_params.batch_size != self.batch_size:
            td_params = td_params.expand(self.batch_size).contiguous()
        self._make_spec(td_params)
        self.rng: torch.Generator | None = None
        if seed is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        self.set_seed(seed)

    # ------------------------------------------------------------------ dynamics
    @classmethod
    def _step(cls, tensordict: TensorDictBase) -> TensorDictBase:
        params = tensordict["params"]
        th, thdot = tensordict["th"], tensordict["thdot"]
        g, m, length, dt = params["g"], params["m"], params["l"], params["dt"]
        max_torque = params["max_torque"]
        u = tensordict["action"].squeeze(-1)
        u = torch.maximum(torch.minimum(u, max_torque), -max_torque)
        costs = cls.angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        new_thdot = thdot + (3 * g / (2 * length) * th.sin() + 3.0 / (m * length**2) * u) * dt
        max_speed = params["max_speed"]
        new_thdot = torch.maximum(torch.minimum(new_thdot, max_speed), -max_speed)
        new_th = cls.angle_normalize(th + new_thdot * dt)
        reward = -costs.reshape(*tensordict.batch_size, 1)
        return TensorDict(
            {
                "th": new_th,
                "thdot": new_thdot,
                "params": params,
                "reward": reward,
                "done": torch.zeros_like(reward, dtype=torch.bool),
            },
            tensordict.batch_size,
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        batch_size = tensordict.batch_size if tensordict is not None else self.batch_size
        if (
            kwargs.get("set_state")
            and tensordict is not None
            and "th" in tensordict
            and "thdot" in tensordict
        ):
            return tensordict.copy()
        if tensordict is None or "params" not in tensordict.keys():
            params = self.gen_params(batch_size=batch_size, device=self.device)["params"]
        else:
            params = tensordict["params"]
        high = torch.tensor([self.DEFAULT_X, self.DEFAULT_Y], device=self.device)
        sample = torch.rand((2, *batch_size), generator=self.rng, device=self.device)
        sample = sample * (2 * high.reshape(2, *([1] * len(batch_size)))) - high.reshape(
            2, *([1] * len(batch_size))
        )
        return TensorDict({"th": sample[0], "thdot": sample[1], "params": params}, batch_size)

    # ------------------------------------------------------------------ specs / seeding
    def _make_spec(self, td_params: TensorDictBase) -> None:
        shape = self.batch_size
        max_speed = td_params["params", "max_speed"]
        max_torque = td_params["params", "max_torque"]
        self.observation_spec = Composite(
            th=Bounded(low=-math.pi, high=math.pi, shape=shape, dtype=torch.float32),
            thdot=Bounded(low=-max_speed, high=max_speed, shape=shape, dtype=torch.float32),
            params=make_composite_from_td(td_params["params"], unsqueeze_null_shapes=False),
            shape=shape,
        )
        self.state_spec = self.observation_spec.clone()
        self.action_spec = Bounded(
            low=-max_torque.unsqueeze(-1),
            high=max_torque.unsqueeze(-1),
            shape=(*shape, 1),
            dtype=torch.float32,
        )
        self.reward_spec = Unbounded(shape=(*shape, 1))

    def _set_seed(self, seed: int | None) -> None:
        rng = torch.Generator(device=self.device if self.device is not None else "cpu")
        if seed is not None:
            rng.manual_seed(int(seed))
        else:
            rng.seed()
        self.rng = rng

    @staticmethod
    def gen_params(g: float = 10.0, batch_size: Any = None, device: Any = None) -> TensorDictBase:
        """Physical parameters under ``"params"``: max speed/torque, ``dt``, ``g``, mass ``m``, length ``l``."""
        params = TensorDict(
            {"max_speed": 8.0, "max_torque": 2.0, "dt": 0.05, "g": g, "m": 1.0, "l": 1.0}, [], device=device
        )
        td = TensorDict({"params": params}, [], device=device)
        if batch_size:
            td = td.expand(batch_size).contiguous()
        return td

    @staticmethod
    def angle_normalize(x: torch.Tensor) -> torch.Tensor:
        """Wraps angles into ``[-pi, pi)``."""
        return ((x + math.pi) % (2 * math.pi)) - math.pi
