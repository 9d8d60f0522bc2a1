"""EnvPool (C++ multi-threaded env batches): ``MultiThreadedEnv`` (by id), ``MultiThreadedEnvWrapper``.

The batch is ``(num_workers,)``. Keys and specs follow TorchRL's wrapper: ``"observation"`` (or the
dict's keys), discrete actions as indices, ``"reward"`` and the done flags of shape ``(num_workers,)``
(no trailing singleton dim). Finished sub-envs are reset through ``reset(env_ids)`` by the usual partial
reset (``"_reset"`` masks, ``step_and_maybe_reset``), so every transition the env yields is a real one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl._utils import logger
from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs.common import _EnvWrapper
from tdrl.envs.libs._gym_spaces import space_to_spec

__all__ = ["MultiThreadedEnv", "MultiThreadedEnvWrapper"]


def _envpool() -> Any:
    try:
        import envpool
    except ImportError as err:
        raise ImportError(
            "MultiThreadedEnv/MultiThreadedEnvWrapper need envpool: pip install 'tdrl[envpool]' (or envpool)"
        ) from err
    return envpool


class MultiThreadedEnvWrapper(_EnvWrapper):
    """Wraps an EnvPool batch (``envpool.make(task_id, env_type="gymnasium", num_envs=n)``).

    Args:
        env: the EnvPool env (synchronous: its ``batch_size`` equals ``num_envs``).
        **kwargs: ``device`` and the other ``EnvBase`` arguments.

    Examples:
        >>> import envpool
        >>> pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, seed=0)
        >>> env = MultiThreadedEnvWrapper(pool)
        >>> env.batch_size, env.reward_spec.shape
        (torch.Size([2]), torch.Size([2]))
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([2, 3, 4])
    """

    git_url = "https://github.com/sail-sg/envpool"
    libname = "envpool"

    def __init__(self, env: Any = None, **kwargs: Any) -> None:
        if env is not None:
            kwargs["env"] = env
        super().__init__(**kwargs)

    @property
    def lib(self) -> Any:
        """The ``envpool`` module."""
        return _envpool()

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        envpool = _envpool()
        env = kwargs.get("env")
        if env is None:
            return
        if not isinstance(env, envpool.python.envpool.EnvPoolMixin):
            raise TypeError(f"MultiThreadedEnvWrapper: env must be an EnvPool env, got {type(env).__name__}")
        if int(env.config["batch_size"]) != int(env.config["num_envs"]):
            raise ValueError(
                f"asynchronous EnvPool (batch_size={env.config['batch_size']} < num_envs="
                f"{env.config['num_envs']}) is not supported: make it with batch_size=num_envs"
            )

    def _build_env(self, env: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"MultiThreadedEnvWrapper got unexpected arguments {sorted(kwargs)}")
        return env

    def _make_specs(self, env: Any) -> None:
        self.num_workers = int(env.config["num_envs"])
        batch = (self.num_workers,)
        if self.batch_size and tuple(self.batch_size) != batch:
            raise ValueError(f"batch_size {tuple(self.batch_size)} does not match num_envs={self.num_workers}")
        self.batch_size = batch
        dev = self.device
        obs = space_to_spec(env.spec.observation_space, categorical_action_encoding=True, device=dev, batch=batch)
        if not isinstance(obs, Composite):
            obs = Composite(observation=obs, shape=batch, device=dev)
        self.observation_spec = obs
        self.action_spec = space_to_spec(
            env.spec.action_space, categorical_action_encoding=True, device=dev, batch=batch
        )
        self.reward_spec = Unbounded(shape=batch, device=dev)
        done = Categorical(2, shape=batch, dtype=torch.bool, device=dev)
        self.done_spec = Composite(done=done, terminated=done.clone(), truncated=done.clone(), shape=batch)
        self._obs_keys = [(k, s.shape, s.dtype) for k, s in self.observation_spec.items()]
        self._last_obs: dict[str, torch.Tensor] = {}

    def _read_obs(self, obs: Any, ids: np.ndarray | None) -> dict[str, torch.Tensor]:
        """Full-batch observations; a partial reset only fills the rows of ``ids``."""
        out = {}
        for key, shape, dtype in self._obs_keys:
            value = obs[key] if isinstance(obs, dict) else obs
            value = torch.as_tensor(np.asarray(value)).to(dtype)
            if ids is not None:
                full = self._last_obs.get(key, torch.zeros(shape, dtype=dtype)).clone()
                full[torch.as_tensor(ids, dtype=torch.long)] = value
                value = full
            out[key] = value
        self._last_obs = out
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        ids = None
        if mask is not None:
            mask = mask.reshape(self.batch_size).cpu().numpy()
            if not mask.all():
                ids = np.flatnonzero(mask).astype(np.int32)
        obs, _ = self._env.reset() if ids is None else self._env.reset(ids)
        out: dict[str, Any] = self._read_obs(obs, ids)
        zeros = torch.zeros(self.batch_size, dtype=torch.bool)
        out.update(done=zeros, terminated=zeros.clone(), truncated=zeros.clone())
        return TensorDict(out, self.batch_size, device=self.device)

    @torch.no_grad()
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action").detach().cpu().numpy()
        obs, reward, terminated, truncated, _ = self._env.step(action)
        out: dict[str, Any] = self._read_obs(obs, None)
        term = torch.as_tensor(np.asarray(terminated, dtype=bool))
        trunc = torch.as_tensor(np.asarray(truncated, dtype=bool))
        out.update(
            reward=torch.as_tensor(np.asarray(reward, dtype=np.float32)),
            done=term | trunc,
            terminated=term,
            truncated=trunc,
        )
        return TensorDict(out, self.batch_size, device=self.device)

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            # EnvPool seeds its sub-envs once, at construction; TorchRL ignores the call the same way.
            logger.info(
                "MultiThreadedEnv.set_seed(%s) ignored: EnvPool envs are seeded at construction, pass "
                "create_env_kwargs={'seed': s} (or seed= to envpool.make)",
                seed,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_workers={self.num_workers}, device={self.device})"


class MultiThreadedEnv(MultiThreadedEnvWrapper):
    """An EnvPool batch built from its task id: ``MultiThreadedEnv(8, "CartPole-v1")``.

    Args:
        num_workers: the number of sub-envs (EnvPool's ``num_envs``).
        env_name: the EnvPool task id (``"ALE/"`` prefixes are dropped, as EnvPool names Atari tasks).
        create_env_kwargs: further ``envpool.make`` arguments (``seed``, ``num_threads``, ...).
        **kwargs: ``device`` and the other ``EnvBase`` arguments.

    Examples:
        >>> env = MultiThreadedEnv(2, "Pendulum-v1", create_env_kwargs={"seed": 0})
        >>> env.action_spec.shape
        torch.Size([2, 1])
    """

    def __init__(
        self, num_workers: int, env_name: str, *, create_env_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        self.__dict__["env_name"] = env_name.replace("ALE/", "")
        self.__dict__["create_env_kwargs"] = dict(create_env_kwargs or {})
        kwargs.update(num_workers=num_workers, env_name=self.env_name, create_env_kwargs=self.create_env_kwargs)
        super().__init__(**kwargs)

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        envpool = _envpool()
        name = kwargs["env_name"]
        if name not in envpool.list_all_envs():
            close = [k for k in envpool.list_all_envs() if name.split("-")[0].lower() in k.lower()]
            raise ValueError(f"unknown EnvPool task {name!r}" + (f"; similar ids: {close[:8]}" if close else ""))

    def _build_env(  # type: ignore[override]
        self, env_name: str, num_workers: int, create_env_kwargs: dict[str, Any]
    ) -> Any:
        envpool = _envpool()
        make_kwargs = {"max_num_players": 1, **create_env_kwargs}
        return envpool.make(task_id=env_name, env_type="gymnasium", num_envs=num_workers, **make_kwargs)
