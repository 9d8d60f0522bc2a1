"""PettingZoo environments: :class:`PettingZooWrapper` (an env instance) and :class:`PettingZooEnv` (a task name).

Terry et al., "PettingZoo: Gym for Multi-Agent Reinforcement Learning", https://arxiv.org/abs/2009.14471.
Needs the ``marl`` extra (``pip install 'tdrl[marl]'``).

Layout (TorchRL's): the env has no batch dims; each group of agents holds ``(group, "observation")``,
``(group, "action")``, ``(group, "reward")`` and ``(group, "done" | "terminated" | "truncated")`` with a leading
agent dim, plus ``(group, "action_mask")`` when the agents report one (in their observation dict or infos),
``(group, "mask")`` with ``use_mask`` (the agents that act this step) and ``(group, "info", ...)`` for the
agents' numeric infos. The shared ``"done"`` / ``"terminated"`` / ``"truncated"`` (``[1]``) aggregate the agents'
flags with ``any`` (parallel envs, by default) or ``all`` (AEC envs, by default).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from tdrl.data import Categorical, Composite, OneHot, TensorSpec, Unbounded
from tdrl.envs.common import _EnvWrapper
from tdrl.envs.libs._gym_spaces import space_to_spec
from tdrl.envs.marl import MarlGroupMapType, check_marl_grouping

__all__ = ["PettingZooEnv", "PettingZooWrapper"]

_HAS_PETTINGZOO = importlib.util.find_spec("pettingzoo") is not None
_FAMILIES = ("sisl", "classic", "atari", "butterfly")


def _require_pettingzoo() -> None:
    if not _HAS_PETTINGZOO:
        raise ImportError("pettingzoo is not installed: install the `marl` extra (pip install 'tdrl[marl]')")


def _all_environments() -> dict[str, str]:
    """``{"family/task": module name}`` of PettingZoo's tasks (found on disk: no task module is imported)."""
    _require_pettingzoo()
    envs: dict[str, str] = {}
    for family in _FAMILIES:
        spec = importlib.util.find_spec(f"pettingzoo.{family}")
        if spec is None or not spec.submodule_search_locations:
            continue
        for info in pkgutil.iter_modules(spec.submodule_search_locations):
            if re.fullmatch(r"\w+_v\d+", info.name):
                envs[f"{family}/{info.name}"] = f"pettingzoo.{family}.{info.name}"
    return envs


def _task_module(task: str) -> Any:
    """The module of a ``"family/task"`` or ``"task"`` name (an unknown name raises, listing the known ones)."""
    envs = _all_environments()
    name = envs.get(task) or next((m for k, m in envs.items() if k.rsplit("/", 1)[-1] == task), None)
    if name is None:
        raise RuntimeError(f"PettingZooEnv: unknown task {task!r}; PettingZoo's tasks: {sorted(envs)}")
    # A family's optional dependency (pymunk, Box2D, chess, ...) missing raises its own ImportError here.
    return importlib.import_module(name)


def _bool_flags(n_agents: int, device: Any) -> Composite:
    flag = Categorical(2, (n_agents, 1), dtype=torch.bool, device=device)
    return Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=(n_agents,), device=device)


def _mask_spec(action_spec: TensorSpec, categorical: bool, device: Any) -> Categorical:
    """The ``"action_mask"`` spec of a group: one flag per category."""
    shape = action_spec.to_one_hot_spec().shape if categorical else action_spec.shape
    return Categorical(2, shape, dtype=torch.bool, device=device)


def _index(data: Any, index: int) -> Any:
    """``data[index]`` through nested dicts (actions of a group, split per agent)."""
    if isinstance(data, np.ndarray):
        return data[index]
    if isinstance(data, Mapping):
        return {key: _index(value, index) for key, value in data.items()}
    raise TypeError(f"cannot split a group action of type {type(data).__name__} per agent")


def _write(target: Any, index: int, value: Any, device: Any) -> None:
    """``target[index] = value`` for a tensor or (recursively) a tensordict and a dict of arrays."""
    if isinstance(target, TensorDictBase):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a dict observation with keys {list(target.keys())}, got {type(value).__name__}")
        for key, sub in value.items():
            _write(target.get(key), index, sub, device)
        return
    target[index] = torch.as_tensor(np.asarray(value), device=device).to(target.dtype).reshape(target.shape[1:])


class PettingZooWrapper(_EnvWrapper):
    """Wraps a ``pettingzoo`` ``ParallelEnv`` or ``AECEnv`` as a multi-agent tdrl env (no batch dims).

    In a parallel env every live agent acts at each step; agents that leave (``use_mask=True``) get
    ``mask`` False and keep their last done flags. In an AEC env only ``agent_selection`` acts, so
    ``use_mask=True`` is required: ``mask`` tells which agent's action is read.

    Args:
        env: the PettingZoo env.
        return_state: also return the env's global ``"state"`` (from ``state_space`` or a ``state()`` sample).
        group_map: a :class:`~tdrl.envs.MarlGroupMapType` or ``{group: [agent names]}``. Default: one group
            per agent for AEC envs; for parallel envs agents named ``<name>_<int>`` grouped by ``<name>``, any
            other agent alone in a group of its own name.
        use_mask: write ``(group, "mask")`` (the acting agents); required for AEC envs.
        categorical_actions: discrete actions as indices (default) instead of one-hot.
        seed: the seed of the first reset.
        done_on_any: the shared done flags are the ``any`` (``True``) or the ``all`` (``False``) of the
            agents'; ``None``: ``any`` for parallel envs, ``all`` for AEC envs.
        **kwargs: ``device`` and the other :class:`~tdrl.envs.EnvBase` arguments (no ``batch_size``).

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("pettingzoo")  # the `marl` extra
        >>> from pettingzoo.classic import tictactoe_v3
        >>> env = PettingZooWrapper(tictactoe_v3.env(), use_mask=True, seed=0)
        >>> env.group_map
        {'player_1': ['player_1'], 'player_2': ['player_2']}
        >>> env.rollout(4)["next", "player_1", "action_mask"].shape
        torch.Size([4, 1, 9])
    """

    git_url = "https://github.com/Farama-Foundation/PettingZoo"
    libname = "pettingzoo"

    @classmethod
    def available_envs_list(cls) -> list[str]:
        """PettingZoo's ``"family/task"`` names (empty without pettingzoo)."""
        if not _HAS_PETTINGZOO:
            return []
        return list(_all_environments())

    def __init__(
        self,
        env: Any = None,
        return_state: bool = False,
        group_map: MarlGroupMapType | dict[str, list[str]] | None = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if env is not None:
            kwargs["env"] = env
        self.group_map = group_map
        self.return_state = return_state
        self.seed = seed
        self.use_mask = use_mask
        self.categorical_actions = categorical_actions
        self.done_on_any = done_on_any
        super().__init__(**kwargs, allow_done_after_reset=True)

    # ------------------------------------------------------------------ construction
    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _require_pettingzoo()
        import pettingzoo

        env = kwargs.get("env")
        if env is None:
            raise TypeError("PettingZooWrapper needs env=<a pettingzoo ParallelEnv or AECEnv>")
        if not isinstance(env, (pettingzoo.utils.env.ParallelEnv, pettingzoo.utils.env.AECEnv)):
            raise TypeError(
                f"PettingZooWrapper: env must be a pettingzoo ParallelEnv or AECEnv, got {type(env).__name__}"
            )

    def _build_env(self, env: Any = None) -> Any:  # type: ignore[override]
        import pettingzoo

        self.parallel = isinstance(env, pettingzoo.utils.env.ParallelEnv)
        if not self.parallel and not self.use_mask:
            raise ValueError(
                "PettingZooWrapper: AEC envs need use_mask=True (one agent acts per step; the mask says which)"
            )
        if len(self.batch_size):
            raise RuntimeError(f"PettingZooWrapper: PettingZoo envs have no batch dims, got batch_size {self.batch_size}")
        return env

    def _default_group_map(self, agent_names: list[str]) -> dict[str, list[str]]:
        if not self.parallel:
            return MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(agent_names)
        groups: dict[str, list[str]] = {}
        for name in agent_names:
            prefix, _, index = name.rpartition("_")
            is_indexed = bool(prefix) and index.lstrip("+-").isdigit()
            groups.setdefault(prefix if is_indexed else name, []).append(name)
        return groups

    def _make_specs(self, env: Any) -> None:
        if self.done_on_any is None:
            self.done_on_any = self.parallel
        agents = list(self.possible_agents)
        if self.group_map is None:
            self.group_map = self._default_group_map(agents)
        elif isinstance(self.group_map, MarlGroupMapType):
            self.group_map = self.group_map.get_group_map(agents)
        else:
            self.group_map = {group: list(names) for group, names in self.group_map.items()}
        check_marl_grouping(self.group_map, agents)
        self.has_action_mask = dict.fromkeys(self.group_map, False)
        flag = Categorical(2, (1,), dtype=torch.bool, device=self.device)
        actions, observations, rewards = Composite(), Composite(), Composite()
        dones = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone())
        for group, names in self.group_map.items():
            actions[group], observations[group] = self._group_specs(group, names)
            rewards[group] = Composite(
                reward=Unbounded((len(names), 1), device=self.device), shape=(len(names),), device=self.device
            )
            dones[group] = _bool_flags(len(names), self.device)
        self.full_action_spec_unbatched = actions.to(self.device)
        self.full_observation_spec_unbatched = observations.to(self.device)
        self.full_reward_spec_unbatched = rewards.to(self.device)
        self.full_done_spec_unbatched = dones.to(self.device)

    def _group_specs(self, group: str, names: list[str]) -> tuple[Composite, Composite]:
        """``(action, observation)`` specs of a group; an observation ``"action_mask"`` moves to the group."""
        act = torch.stack(
            [
                Composite(
                    action=space_to_spec(
                        self.action_space(name),
                        categorical_action_encoding=self.categorical_actions,
                        device=self.device,
                    )
                )
                for name in names
            ],
            0,
        )
        obs = torch.stack(
            [
                Composite(observation=space_to_spec(self.observation_space(name), device=self.device))
                for name in names
            ],
            0,
        )
        inner = obs["observation"]
        if isinstance(inner, Composite) and "action_mask" in inner.keys():
            self.has_action_mask[group] = True
            del inner["action_mask"]
            obs["action_mask"] = _mask_spec(act["action"], self.categorical_actions, self.device)
        if self.use_mask:
            obs["mask"] = Categorical(2, (len(names),), dtype=torch.bool, device=self.device)
        return act, obs

    def _init_env(self) -> None:
        _, infos = self._reset_parallel(seed=self.seed) if self.parallel else self._reset_aec(seed=self.seed)
        observations = self.full_observation_spec_unbatched
        for group, names in self.group_map.items():
            info = torch.stack(
                [
                    Composite(
                        info=Composite(
                            {
                                key: Unbounded(torch.as_tensor(value).shape, device=self.device)
                                for key, value in infos[name].items()
                            },
                            device=self.device,
                        ),
                        device=self.device,
                    )
                    for name in names
                ],
                0,
            )
            if ("info", "action_mask") in info.keys(True, True):
                if not self.has_action_mask[group]:
                    self.has_action_mask[group] = True
                    observations[group, "action_mask"] = _mask_spec(
                        self.full_action_spec_unbatched[group, "action"], self.categorical_actions, self.device
                    )
                del info["info"]["action_mask"]
            if len(info["info"].keys()):
                observations[group].update(info)
        if self.return_state:
            observations["state"] = self._state_spec()
        self.full_observation_spec_unbatched = observations
        # one spec per agent, to encode its observation (numpy, dict, or an index for a one-hot space)
        self._obs_specs = {
            group: [self.full_observation_spec_unbatched[group, "observation"][i] for i in range(len(names))]
            for group, names in self.group_map.items()
        }
        self._reset_zero = self.full_observation_spec_unbatched.zero()
        self._reset_zero.update(self.full_done_spec_unbatched.zero())
        self._step_zero = self._reset_zero.clone()
        self._step_zero.update(self.full_reward_spec_unbatched.zero())

    def _state_spec(self) -> TensorSpec:
        space = getattr(self._env, "state_space", None)
        if space is not None:
            return space_to_spec(space, device=self.device)
        sample = torch.as_tensor(np.asarray(self._env.state()), device=self.device)
        return Unbounded(sample.shape, dtype=sample.dtype, device=self.device)

    def _set_seed(self, seed: int | None) -> None:
        self.seed = seed
        self.reset(seed=seed)

    # ------------------------------------------------------------------ reset / step
    def _reset_aec(self, **kwargs: Any) -> tuple[dict, dict]:
        self._env.reset(**kwargs)
        return {agent: self._env.observe(agent) for agent in self.possible_agents}, self._env.infos

    def _reset_parallel(self, **kwargs: Any) -> tuple[dict, dict]:
        return self._env.reset(**kwargs)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if tensordict is not None:
            mask = tensordict.get("_reset", None)
            if mask is not None and not bool(mask.all()):
                raise RuntimeError(
                    f"{type(self).__name__} resets as a whole: '_reset' must be all True or absent, got {mask}"
                )
        observations, infos = self._reset_parallel(**kwargs) if self.parallel else self._reset_aec(**kwargs)
        out = self._reset_zero.clone()
        self._update_agent_mask(out)
        observations, infos = self._update_action_mask(out, observations, infos)
        for group, names in self.group_map.items():
            group_obs = out.get((group, "observation"))
            group_info = out.get((group, "info"), None)
            for index, agent in enumerate(names):
                group_obs[index] = self._obs_specs[group][index].encode(observations[agent])
                if group_info is not None:
                    _write(group_info, index, infos[agent], self.device)
        if self.return_state:
            out.set("state", self._read_state())
        return out

    def _read_state(self) -> torch.Tensor:
        spec = self.full_observation_spec_unbatched["state"]
        return torch.as_tensor(np.asarray(self._env.state()), device=self.device).to(spec.dtype).reshape(spec.shape)

    def _group_action(self, tensordict: TensorDictBase, group: str) -> Any:
        return self.full_action_spec_unbatched[group, "action"].to_numpy(tensordict.get((group, "action")))

    def _step_parallel(self, tensordict: TensorDictBase) -> tuple[dict, dict, dict, dict, dict]:
        actions = {}
        for group, names in self.group_map.items():
            group_action = self._group_action(tensordict, group)
            for index, agent in enumerate(names):
                actions[agent] = _index(group_action, index)
        return self._env.step(actions)

    def _step_aec(self, tensordict: TensorDictBase) -> tuple[dict, dict, dict, dict, dict]:
        acting = self._env.agent_selection
        for group, names in self.group_map.items():
            if acting in names:
                self._env.step(_index(self._group_action(tensordict, group), names.index(acting)))
                break
        env = self._env
        observations = {agent: env.observe(agent) for agent in self.possible_agents}
        return observations, env.rewards, env.terminations, env.truncations, env.infos

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        step = self._step_parallel if self.parallel else self._step_aec
        observations, rewards, terminations, truncations, infos = step(tensordict)
        out = self._step_zero.clone()
        self._update_agent_mask(out)
        observations, infos = self._update_action_mask(out, observations, infos)
        for group, names in self.group_map.items():
            g = out.get(group)
            group_info = g.get("info", None)
            for index, agent in enumerate(names):
                if agent in observations:  # a live agent
                    g.get("observation")[index] = self._obs_specs[group][index].encode(observations[agent])
                    g.get("reward")[index] = float(rewards[agent])
                    terminated, truncated = bool(terminations[agent]), bool(truncations[agent])
                    if group_info is not None:
                        _write(group_info, index, infos[agent], self.device)
                elif not self.use_mask:
                    raise ValueError(
                        f"agent {agent!r} left the env (no observation this step): build the env with "
                        "use_mask=True to allow agents that leave"
                    )
                elif agent in self.agents:
                    raise ValueError(f"agent {agent!r} has no observation this step but is still in {self.agents}")
                else:  # gone: its last flags, or done when the env no longer reports them
                    terminated = bool(terminations.get(agent, True))
                    truncated = bool(truncations.get(agent, True))
                g.get("done")[index] = terminated or truncated
                g.get("terminated")[index] = terminated
                g.get("truncated")[index] = truncated
        for name in ("done", "terminated", "truncated"):
            out.set(name, self._aggregate(out, name))
        if self.return_state:
            out.set("state", self._read_state())
        return out

    def _aggregate(self, out: TensorDictBase, name: str) -> torch.Tensor:
        flags = [out.get((group, name)) for group in self.group_map]
        if self.done_on_any:
            value = any(bool(f.any()) for f in flags)
        else:
            value = all(bool(f.all()) for f in flags)
        return torch.tensor([value], device=self.device)

    def _acting_agents(self) -> list[str]:
        # parallel: the live agents; AEC: the one whose turn it is
        return list(self._env.agents) if self.parallel else [self._env.agent_selection]

    def _update_agent_mask(self, out: TensorDictBase) -> None:
        if not self.use_mask:
            return
        acting = self._acting_agents()
        for group, names in self.group_map.items():
            out.set((group, "mask"), torch.tensor([n in acting for n in names], device=self.device))

    def _update_action_mask(self, out: TensorDictBase, observations: dict, infos: dict) -> tuple[dict, dict]:
        """Writes ``(group, "action_mask")`` (all True for agents not acting) and updates the action specs' masks.

        Returns copies of ``observations`` and ``infos`` without their ``"action_mask"`` entries.
        """
        observations, infos = copy.deepcopy(observations), copy.deepcopy(infos)
        acting = self._acting_agents()
        for group, names in self.group_map.items():
            if not self.has_action_mask[group]:
                continue
            mask = out.get((group, "action_mask"))
            mask.fill_(True)
            for index, agent in enumerate(names):
                if agent not in observations:
                    continue
                obs, info = observations[agent], infos.get(agent)
                holder = obs if isinstance(obs, dict) and "action_mask" in obs else info
                if isinstance(holder, dict) and "action_mask" in holder:
                    if agent in acting:
                        mask[index] = torch.as_tensor(np.asarray(holder["action_mask"]), device=self.device).bool()
                    del holder["action_mask"]
            spec = self.full_action_spec_unbatched[group, "action"]
            if isinstance(spec, (Categorical, OneHot)):
                spec.update_mask(mask.clone())
        return observations, infos

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Closes the PettingZoo env."""
        super().close(raise_if_closed=raise_if_closed)

    def __repr__(self) -> str:
        kind = "parallel" if self.__dict__.get("parallel") else "AEC"
        return f"{type(self).__name__}({kind}, group_map={self.group_map}, device={self.device})"


class PettingZooEnv(PettingZooWrapper):
    """A PettingZoo task built by name: ``PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True)``.

    Args:
        task: ``"<family>/<task>"`` (``"classic/tictactoe_v3"``) or ``"<task>"`` (``"tictactoe_v3"``).
        parallel: build the task's ``parallel_env`` (``True``) or its AEC ``env`` (``False``).
        return_state: see :class:`PettingZooWrapper`.
        group_map: see :class:`PettingZooWrapper`.
        use_mask: see :class:`PettingZooWrapper`.
        categorical_actions: see :class:`PettingZooWrapper`.
        seed: see :class:`PettingZooWrapper`.
        done_on_any: see :class:`PettingZooWrapper`.
        **kwargs: the task's own arguments (``max_cycles``, ...), or ``device``/... of
            :class:`~tdrl.envs.EnvBase`.

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("pettingzoo")  # the `marl` extra
        >>> env = PettingZooEnv("rps_v2", parallel=True, seed=0, max_cycles=3)
        >>> env.group_map
        {'player': ['player_0', 'player_1']}
        >>> env.rollout(5)["next", "player", "reward"].shape
        torch.Size([3, 2, 1])
    """

    _ENV_KWARGS = ("device", "batch_size", "spec_locked", "frame_skip")

    def __init__(
        self,
        task: str,
        parallel: bool,
        return_state: bool = False,
        group_map: MarlGroupMapType | dict[str, list[str]] | None = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        **kwargs: Any,
    ) -> None:
        _require_pettingzoo()
        env_kwargs = {k: kwargs.pop(k) for k in self._ENV_KWARGS if k in kwargs}
        self.task_name = task
        env = self._make_task(task, parallel, kwargs)
        super().__init__(
            env=env,
            return_state=return_state,
            group_map=group_map,
            use_mask=use_mask,
            categorical_actions=categorical_actions,
            seed=seed,
            done_on_any=done_on_any,
            **env_kwargs,
        )
        self._constructor_kwargs = {"task": task, "parallel": parallel, **kwargs}

    @staticmethod
    def _make_task(task: str, parallel: bool, task_kwargs: dict[str, Any]) -> Any:
        if not isinstance(parallel, bool):
            raise TypeError(f"PettingZooEnv: parallel must be True or False, got {parallel!r}")
        module = _task_module(task)
        if parallel:
            if not hasattr(module, "parallel_env"):
                raise ValueError(f"PettingZooEnv: task {task!r} has no parallel version (use parallel=False)")
            return module.parallel_env(**task_kwargs)
        return module.env(**task_kwargs)

    def __repr__(self) -> str:
        return f"{super().__repr__()} (task={self.task_name})"
