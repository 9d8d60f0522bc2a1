"""Level-Based Foraging (``lbforaging``): ``LBForagingEnv`` (by id), ``LBForagingWrapper`` (an instance).

Agents of random levels collect food on a grid (a cooperative, sparse-reward multi-agent task). All agents
form one group ``"agents"``: ``("agents", "observation")`` is ``[n_agents, obs_dim]``,
``("agents", "action")`` one index (or one-hot) per agent, ``("agents", "reward")`` ``[n_agents, 1]``; the
done flags are shared (root ``"done"``, ``"terminated"``, ``"truncated"``), as in TorchRL's wrapper.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs.common import _EnvWrapper
from tdrl.envs.libs._gym_spaces import space_to_spec

__all__ = ["LBForagingEnv", "LBForagingWrapper"]


def _lbforaging() -> Any:
    try:
        import lbforaging  # registers the Foraging-* ids in gymnasium's registry
    except ImportError as err:
        raise ImportError(
            "LBForagingEnv/LBForagingWrapper need lbforaging: pip install 'tdrl[lbforaging]' (or lbforaging)"
        ) from err
    return lbforaging


def _foraging_ids() -> list[str]:
    import gymnasium

    _lbforaging()
    return sorted(k for k in gymnasium.envs.registry if k.startswith("Foraging-"))


class _AvailableEnvs:
    """The registered ``Foraging-*`` ids, read on access (``[]`` when lbforaging is not installed)."""

    def __get__(self, obj: Any, owner: Any) -> list[str]:
        try:
            return _foraging_ids()
        except ImportError:
            return []


class LBForagingWrapper(_EnvWrapper):
    """Wraps a Level-Based Foraging gymnasium env (``gymnasium.make("Foraging-8x8-2p-1f-v3")``).

    Args:
        env: the environment.
        categorical_actions: actions as indices (``Categorical``) instead of one-hot.
        seed: seed of the next reset (later resets continue the env's generator).
        **kwargs: ``device``, ``allow_done_after_reset``, ... (see ``EnvBase``); no ``batch_size``.

    Examples:
        >>> import gymnasium, lbforaging
        >>> env = LBForagingWrapper(gymnasium.make("Foraging-8x8-2p-1f-v3"), seed=0)
        >>> env.group_map
        {'agents': ['0', '1']}
        >>> env.rollout(4, break_when_any_done=False)["next", "agents", "reward"].shape
        torch.Size([4, 2, 1])
    """

    git_url = "https://github.com/semitable/lb-foraging"
    libname = "lbforaging"
    available_envs = _AvailableEnvs()  # type: ignore[assignment]

    def __init__(
        self, env: Any = None, *, categorical_actions: bool = True, seed: int | None = None, **kwargs: Any
    ) -> None:
        if env is not None:
            kwargs["env"] = env
        self.categorical_actions = categorical_actions
        self._seed = seed
        super().__init__(**kwargs)

    @property
    def lib(self) -> Any:
        """The ``lbforaging`` module."""
        return _lbforaging()

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        import gymnasium

        _lbforaging()
        from lbforaging.foraging.environment import ForagingEnv

        env = kwargs.get("env")
        if env is None:
            raise TypeError("LBForagingWrapper needs env=<a Level-Based Foraging gymnasium env>")
        if not isinstance(env, gymnasium.Env) or not isinstance(env.unwrapped, ForagingEnv):
            raise TypeError(f"LBForagingWrapper: env must wrap a lbforaging ForagingEnv, got {type(env).__name__}")

    def _build_env(self, env: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"LBForagingWrapper got unexpected arguments {sorted(kwargs)}")
        if len(self.batch_size):
            raise ValueError(f"LBForaging envs have an empty batch_size, got {tuple(self.batch_size)}")
        return env

    def _make_specs(self, env: Any) -> None:
        self.n_agents = int(env.unwrapped.n_agents)
        self.group_map = {"agents": [str(i) for i in range(self.n_agents)]}
        dev, agents = self.device, torch.Size((self.n_agents,))
        obs = space_to_spec(env.observation_space, device=dev)
        action = space_to_spec(env.action_space, categorical_action_encoding=self.categorical_actions, device=dev)
        self.full_observation_spec = Composite(agents=Composite(observation=obs, shape=agents))
        self.full_action_spec = Composite(agents=Composite(action=action, shape=agents))
        reward = Unbounded(shape=(self.n_agents, 1), device=dev)
        self.full_reward_spec = Composite(agents=Composite(reward=reward, shape=agents))
        done = Categorical(2, shape=(1,), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=done, terminated=done.clone(), truncated=done.clone())

    def _set_seed(self, seed: int | None) -> None:
        self._seed = seed

    def _agents_td(self, observations: Any, rewards: Any = None) -> TensorDict:
        entries = {"observation": torch.as_tensor(np.stack(observations), dtype=torch.float32, device=self.device)}
        if rewards is not None:
            entries["reward"] = torch.as_tensor(rewards, dtype=torch.float32, device=self.device).reshape(-1, 1)
        return TensorDict(entries, batch_size=(self.n_agents,), device=self.device)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        observations, _ = self._env.reset(seed=self._seed)
        self._seed = None
        return TensorDict({"agents": self._agents_td(observations)}, batch_size=(), device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(("agents", "action"))
        if not self.categorical_actions:
            action = action.argmax(-1)
        observations, rewards, terminated, truncated, _ = self._env.step([int(a) for a in action.tolist()])
        base = self._env.unwrapped
        # lbforaging reports the step limit as a termination; with food left it is a time limit.
        if terminated and base.current_step >= base._max_episode_steps and base.field.any():
            terminated, truncated = False, True
        term = torch.tensor([bool(terminated)], device=self.device)
        trunc = torch.tensor([bool(truncated)], device=self.device)
        return TensorDict(
            {"agents": self._agents_td(observations, rewards), "done": term | trunc, "terminated": term,
             "truncated": trunc},
            batch_size=(),
            device=self.device,
        )


class LBForagingEnv(LBForagingWrapper):
    """A Level-Based Foraging env built from its id: ``LBForagingEnv("Foraging-8x8-2p-1f-v3")``.

    Args:
        env_name: a registered ``Foraging-*`` id (``available_envs``).
        categorical_actions: actions as indices instead of one-hot.
        seed: seed of the next reset.
        **kwargs: ``device`` and the other ``EnvBase`` arguments; the rest goes to ``gymnasium.make``.

    Examples:
        >>> env = LBForagingEnv("Foraging-8x8-2p-1f-v3", seed=0, categorical_actions=False)
        >>> env.full_action_spec["agents", "action"].shape
        torch.Size([2, 6])
    """

    def __init__(
        self, env_name: str, *, categorical_actions: bool = True, seed: int | None = None, **kwargs: Any
    ) -> None:
        kwargs["env_name"] = env_name
        super().__init__(categorical_actions=categorical_actions, seed=seed, **kwargs)

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        name = kwargs.get("env_name")
        ids = _foraging_ids()
        if name not in ids:
            raise ValueError(f"unknown Level-Based Foraging id {name!r}; e.g. {ids[:4]} (see available_envs)")

    def _build_env(self, env_name: str, **kwargs: Any) -> Any:  # type: ignore[override]
        import gymnasium

        env = gymnasium.make(env_name, disable_env_checker=True, **kwargs)
        return super()._build_env(env)
