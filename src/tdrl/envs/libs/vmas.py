"""VMAS (vectorized multi-agent simulator) environments: :class:`VmasWrapper` and :class:`VmasEnv`.

Bettini et al., "VMAS: A Vectorized Multi-Agent Simulator for Collective Robot Learning",
https://arxiv.org/abs/2207.03530. Needs the ``marl`` extra (``pip install 'tdrl[marl]'``).

Layout (TorchRL's): a batch of ``num_envs`` scenarios; each group of agents (default: agents named
``<name>_<i>`` grouped by ``<name>``, a lone ``"agent"`` group renamed ``"agents"``) holds
``(group, "observation")``, ``(group, "action")``, ``(group, "reward")`` (``[num_envs, n_agents, 1]``) and the
scenario's ``(group, "info")`` entries; ``"done"`` / ``"terminated"`` (``[num_envs, 1]``) are shared.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from tdrl.data import (
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Unbounded,
)
from tdrl.envs.common import _EnvWrapper
from tdrl.envs.marl import MarlGroupMapType, check_marl_grouping

__all__ = ["VmasEnv", "VmasWrapper"]

_HAS_VMAS = importlib.util.find_spec("vmas") is not None


def _require_vmas() -> None:
    if not _HAS_VMAS:
        raise ImportError("vmas is not installed: install the `marl` extra (pip install 'tdrl[marl]')")


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype


def vmas_space_to_spec(
    space: Any, *, device: Any = None, categorical_action_encoding: bool = True
) -> TensorSpec:
    """The spec of one agent's gym space (``Box``, ``Discrete``, ``MultiDiscrete`` or ``Dict``), without batch dims.

    Args:
        space: the space (duck-typed: ``n``, ``nvec``, ``low``/``high`` or ``spaces``).
        device: device of the spec.
        categorical_action_encoding: discrete spaces as indices (``Categorical``) instead of one-hot.

    Returns:
        The spec.

    Examples:
        >>> import numpy as np
        >>> from types import SimpleNamespace
        >>> box = SimpleNamespace(low=-np.ones(2, np.float32), high=np.ones(2, np.float32), shape=(2,),
        ...                       dtype=np.dtype("float32"))
        >>> vmas_space_to_spec(box).shape
        torch.Size([2])
        >>> type(vmas_space_to_spec(SimpleNamespace(n=5, dtype=np.dtype("int64")))).__name__
        'Categorical'
    """
    if hasattr(space, "nvec"):
        nvec = [int(n) for n in space.nvec]
        if categorical_action_encoding:
            return MultiCategorical(nvec, device=device, dtype=_torch_dtype(space.dtype))
        return MultiOneHot(nvec, device=device, dtype=torch.long)
    if hasattr(space, "n"):
        if categorical_action_encoding:
            return Categorical(int(space.n), device=device, dtype=_torch_dtype(space.dtype))
        return OneHot(int(space.n), device=device, dtype=torch.long)
    if hasattr(space, "low") and hasattr(space, "high"):
        shape = torch.Size(space.shape) if len(space.shape) else torch.Size([1])
        dtype = _torch_dtype(space.dtype)
        low = torch.as_tensor(space.low, dtype=dtype, device=device).reshape(shape)
        high = torch.as_tensor(space.high, dtype=dtype, device=device).reshape(shape)
        if low.isinf().all() and high.isinf().all():
            return Unbounded(shape, device=device, dtype=dtype)
        return Bounded(low, high, shape, dtype=dtype, device=device)
    if hasattr(space, "spaces") and isinstance(space.spaces, Mapping):
        return Composite(
            {
                k: vmas_space_to_spec(
                    v, device=device, categorical_action_encoding=categorical_action_encoding
                )
                for k, v in space.spaces.items()
            },
            device=device,
        )
    raise TypeError(f"vmas_space_to_spec: unsupported space {type(space).__name__} ({space!r})")


def default_group_map(agent_names: Sequence[str]) -> dict[str, list[str]]:
    """VMAS's grouping: ``<name>_<int>`` agents grouped by ``<name>``; otherwise all in ``"agents"``.

    A single ``"agent"`` group is named ``"agents"``.

    Examples:
        >>> default_group_map(["agent_0", "agent_1"])
        {'agents': ['agent_0', 'agent_1']}
        >>> default_group_map(["adversary_0", "good_0", "good_1"])
        {'adversary': ['adversary_0'], 'good': ['good_0', 'good_1']}
        >>> default_group_map(["alice", "bob"])
        {'agents': ['alice', 'bob']}
    """
    groups: dict[str, list[str]] = {}
    for name in agent_names:
        prefix, _, index = name.rpartition("_")
        if not prefix or not index.isdigit():
            return MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(agent_names)
        groups.setdefault(prefix, []).append(name)
    if list(groups) == ["agent"]:
        groups = {"agents": groups["agent"]}
    return groups


def _per_env(value: torch.Tensor, batch_size: torch.Size) -> torch.Tensor:
    """``[num_envs]`` -> ``[num_envs, 1]`` (VMAS drops the trailing singleton of rewards, dones, infos)."""
    return value.unsqueeze(-1) if value.shape == batch_size else value


class VmasWrapper(_EnvWrapper):
    """Wraps a ``vmas`` ``Environment`` (built with ``wrapper=None``) as a batched multi-agent tdrl env.

    Args:
        env: the VMAS environment.
        categorical_actions: discrete actions as indices (default) instead of one-hot.
        group_map: a :class:`~tdrl.envs.MarlGroupMapType` or ``{group: [agent names]}``; default: VMAS's
            naming convention (see :func:`default_group_map`).
        **kwargs: ``device`` (must be the VMAS env's) and the other :class:`~tdrl.envs.EnvBase` arguments.

    Examples:
        >>> import pytest
        >>> vmas = pytest.importorskip("vmas")  # the `marl` extra
        >>> env = VmasWrapper(vmas.make_env("navigation", num_envs=2, n_agents=2, wrapper=None, seed=0))
        >>> env.group_map, env.rollout(3)["next", "agents", "reward"].shape
        ({'agents': ['agent_0', 'agent_1']}, torch.Size([2, 3, 2, 1]))
    """

    git_url = "https://github.com/proroklab/VectorizedMultiAgentSimulator"
    libname = "vmas"

    @classmethod
    def available_envs_list(cls) -> list[str]:
        """Names of VMAS's scenarios (empty when vmas is absent)."""
        if not _HAS_VMAS:
            return []
        import vmas

        return list(vmas.scenarios) + list(vmas.mpe_scenarios) + list(vmas.debug_scenarios)

    def __init__(
        self,
        env: Any = None,
        categorical_actions: bool = True,
        group_map: MarlGroupMapType | dict[str, list[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        if env is not None:
            kwargs["env"] = env
            if not hasattr(env, "device"):
                raise TypeError(
                    f"VmasWrapper: env must be a vmas.simulator.environment.Environment, got "
                    f"{type(env).__name__}"
                )
            if (
                "device" in kwargs
                and kwargs["device"] is not None
                and torch.device(kwargs["device"]) != env.device
            ):
                raise TypeError(
                    f"VmasWrapper: device={kwargs['device']!r} differs from the VMAS env's {env.device}"
                )
            kwargs["device"] = str(env.device)
        self.group_map = group_map
        self.categorical_actions = categorical_actions
        super().__init__(**kwargs, allow_done_after_reset=True)

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _require_vmas()
        from vmas.simulator.environment import Environment

        env = kwargs.get("env")
        if env is None:
            raise TypeError("VmasWrapper needs env=<a vmas Environment built with wrapper=None>")
        if not isinstance(env, Environment):
            raise TypeError(
                f"VmasWrapper: env must be a vmas.simulator.environment.Environment, got {type(env).__name__}"
            )

    def _build_env(self, env: Any = None, from_pixels: bool = False, pixels_only: bool = False) -> Any:
        if from_pixels or pixels_only:
            raise ValueError("VmasWrapper: from_pixels is not supported (VMAS renders through pyglet only)")
        if not self.batch_size:
            self.batch_size = torch.Size([env.num_envs])
        elif tuple(self.batch_size) != (env.num_envs,):
            raise TypeError(
                f"VmasWrapper: batch_size {tuple(self.batch_size)} must be (num_envs,) = ({env.num_envs},)"
            )
        self.from_pixels = self.pixels_only = False
        return env

    def _make_specs(self, env: Any) -> None:
        self.agent_names = [agent.name for agent in env.agents]
        self.agent_names_to_indices_map = {name: i for i, name in enumerate(self.agent_names)}
        if self.group_map is None:
            self.group_map = default_group_map(self.agent_names)
        elif isinstance(self.group_map, MarlGroupMapType):
            self.group_map = self.group_map.get_group_map(self.agent_names)
        else:
            self.group_map = {group: list(names) for group, names in self.group_map.items()}
        check_marl_grouping(self.group_map, self.agent_names)
        actions, observations, rewards = Composite(), Composite(), Composite()
        self.het_specs_map = {}
        for group in self.group_map:
            obs, act, rew, info = self._group_specs(env, group)
            actions[group], observations[group], rewards[group] = act, obs, rew
            if info is not None:
                observations[group, "info"] = info
            # Agents of the group with different shapes: their data are a lazy stack (TorchRL's layout).
            self.het_specs_map[group] = any(
                -1 in spec[key].shape for spec in (obs, act) for key in spec.keys(True, True)
            )
        self.het_specs = any(self.het_specs_map.values())
        self.full_action_spec_unbatched = actions.to(self.device)
        self.full_observation_spec_unbatched = observations.to(self.device)
        self.full_reward_spec_unbatched = rewards.to(self.device)
        done = Categorical(2, (1,), dtype=torch.bool, device=self.device)
        self.full_done_spec_unbatched = Composite(done=done, terminated=done.clone(), device=self.device)

    def _group_specs(
        self, env: Any, group: str
    ) -> tuple[TensorSpec, TensorSpec, TensorSpec, TensorSpec | None]:
        """``(observation, action, reward, info or None)`` specs of a group, stacked along the agents."""
        cat = self.categorical_actions
        obs, act, rew, info = [], [], [], []
        for name in self.group_map[group]:
            i = self.agent_names_to_indices_map[name]
            act.append(
                Composite(action=vmas_space_to_spec(env.action_space[i], categorical_action_encoding=cat))
            )
            obs.append(
                Composite(
                    observation=vmas_space_to_spec(env.observation_space[i], categorical_action_encoding=cat)
                )
            )
            rew.append(Composite(reward=Unbounded((1,))))
            agent_info = env.scenario.info(env.agents[i])
            if agent_info:
                info.append(
                    Composite(
                        {
                            k: Unbounded(_per_env(v, self.batch_size).shape[1:], dtype=torch.float32)
                            for k, v in agent_info.items()
                        }
                    )
                )
        stacked_info = torch.stack(info, 0) if info else None
        return torch.stack(obs, 0), torch.stack(act, 0), torch.stack(rew, 0), stacked_info

    def _set_seed(self, seed: int | None) -> None:
        self._env.seed(seed)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None or mask.all():
            self._env.reset(return_observations=False)
        else:
            for index in mask.reshape(-1).nonzero().reshape(-1).tolist():
                self._env.reset_at(index, return_observations=False)
        obs, dones, infos = self._env.get_from_scenario(
            get_observations=True, get_infos=True, get_rewards=False, get_dones=True
        )
        return self._output(obs, None, dones, infos)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        per_agent: list[torch.Tensor | None] = [None] * len(self.agent_names)
        for group, names in self.group_map.items():
            for name, action in zip(
                names, self.read_action(tensordict.get((group, "action")), group=group), strict=True
            ):
                per_agent[self.agent_names_to_indices_map[name]] = action
        obs, rews, dones, infos = self._env.step(per_agent)
        return self._output(obs, rews, dones, infos)

    def _output(self, obs: list, rews: list | None, dones: torch.Tensor, infos: list) -> TensorDict:
        done = self.read_done(dones)
        source: dict[str, Any] = {"done": done, "terminated": done.clone()}
        for group, names in self.group_map.items():
            agent_tds = []
            for name in names:
                i = self.agent_names_to_indices_map[name]
                agent = {"observation": self.read_obs(obs[i])}
                if rews is not None:
                    agent["reward"] = self.read_reward(rews[i])
                info = self.read_info(infos[i])
                if info is not None:
                    agent["info"] = info
                agent_tds.append(TensorDict(agent, batch_size=self.batch_size, device=self.device))
            stacked = LazyStackedTensorDict.maybe_dense_stack(agent_tds, dim=1)
            source[group] = stacked if self.het_specs_map[group] else stacked.to_tensordict()
        return TensorDict(source, batch_size=self.batch_size, device=self.device)

    def read_obs(self, observations: dict | torch.Tensor) -> TensorDict | torch.Tensor:
        """One agent's observation (a tensor or a dict of them) with a trailing dim per env."""
        if isinstance(observations, torch.Tensor):
            return _per_env(observations, self.batch_size)
        return TensorDict({k: self.read_obs(v) for k, v in observations.items()}, batch_size=self.batch_size)

    def read_info(self, infos: dict[str, torch.Tensor]) -> TensorDict | None:
        """One agent's info entries as float32 (``None`` when the scenario reports none)."""
        if not infos:
            return None
        return TensorDict(
            {k: _per_env(v.to(torch.float32), self.batch_size) for k, v in infos.items()},
            batch_size=self.batch_size,
            device=self.device,
        )

    def read_done(self, done: torch.Tensor) -> torch.Tensor:
        """``[num_envs]`` -> ``[num_envs, 1]``."""
        return _per_env(done, self.batch_size)

    def read_reward(self, rewards: torch.Tensor) -> torch.Tensor:
        """``[num_envs]`` -> ``[num_envs, 1]``."""
        return _per_env(rewards, self.batch_size)

    def read_action(self, action: torch.Tensor, group: str = "agents") -> tuple[torch.Tensor, ...]:
        """A group's ``[num_envs, n_agents, ...]`` action split per agent (one-hot turned into indices)."""
        if not self._env.continuous_actions and not self.categorical_actions:
            action = self.full_action_spec_unbatched[group, "action"].to_categorical(action)
        return action.unbind(1)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self._env.num_envs}, n_agents={self._env.n_agents}, "
            f"batch_size={self.batch_size}, device={self.device})"
        )


class VmasEnv(VmasWrapper):
    """A VMAS scenario built by name (``VmasEnv("navigation", num_envs=32, n_agents=3)``).

    Args:
        scenario: a scenario name (see :meth:`available_envs_list`) or a ``BaseScenario`` instance.

    Keyword Args:
        num_envs: number of vectorized envs (the batch size).
        continuous_actions: continuous (default) or discrete actions.
        max_steps: horizon after which the envs report done (``None``: the scenario's own end only).
        categorical_actions: discrete actions as indices (default) instead of one-hot.
        seed: VMAS seed.
        group_map: see :class:`VmasWrapper`.
        scenario_kwargs: arguments of the scenario (``n_agents``, ...); extra keyword arguments are added.
        **kwargs: scenario arguments, or ``device``/``batch_size``/... of :class:`~tdrl.envs.EnvBase`.

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("vmas")  # the `marl` extra
        >>> env = VmasEnv("navigation", num_envs=4, n_agents=2, max_steps=5, seed=0)
        >>> env.full_action_spec["agents", "action"].shape
        torch.Size([4, 2, 2])
    """

    _ENV_KWARGS = ("device", "batch_size", "allow_done_after_reset", "spec_locked", "frame_skip")

    def __init__(
        self,
        scenario: Any,
        *,
        num_envs: int,
        continuous_actions: bool = True,
        max_steps: int | None = None,
        categorical_actions: bool = True,
        seed: int | None = None,
        group_map: MarlGroupMapType | dict[str, list[str]] | None = None,
        scenario_kwargs: dict | None = None,
        **kwargs: Any,
    ) -> None:
        _require_vmas()
        env_kwargs = {k: kwargs.pop(k) for k in self._ENV_KWARGS if k in kwargs}
        env_kwargs.pop("allow_done_after_reset", None)
        if env_kwargs.get("device") is None:
            env_kwargs["device"] = torch.get_default_device()
        super().__init__(
            scenario=scenario,
            num_envs=num_envs,
            continuous_actions=continuous_actions,
            max_steps=max_steps,
            seed=seed,
            scenario_kwargs={**(scenario_kwargs or {}), **kwargs},
            categorical_actions=categorical_actions,
            group_map=group_map,
            **env_kwargs,
        )

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _require_vmas()
        if kwargs.get("num_envs") is None:
            raise TypeError("VmasEnv needs num_envs=<number of vectorized envs>")

    def _build_env(  # type: ignore[override]
        self,
        scenario: Any,
        num_envs: int,
        continuous_actions: bool,
        max_steps: int | None,
        seed: int | None,
        scenario_kwargs: dict,
    ) -> Any:
        import vmas

        self.scenario_name = scenario
        scenario_kwargs = dict(scenario_kwargs)
        from_pixels = scenario_kwargs.pop("from_pixels", False)
        pixels_only = scenario_kwargs.pop("pixels_only", False)
        env = vmas.make_env(
            scenario=scenario,
            num_envs=num_envs,
            device=self.device,
            continuous_actions=continuous_actions,
            max_steps=max_steps,
            seed=seed,
            wrapper=None,
            **scenario_kwargs,
        )
        return super()._build_env(env=env, from_pixels=from_pixels, pixels_only=pixels_only)

    def __repr__(self) -> str:
        return f"{super().__repr__()} (scenario={self.scenario_name})"
