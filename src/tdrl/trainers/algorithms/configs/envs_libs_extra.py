"""Configs for more library environments (group ``env``: ``mo_gym``, ``multi_threaded``, ``pettingzoo``,
``vmas``), with TorchRL's fields.

Each config's target is a factory here: TorchRL's point straight at the env classes, whose arguments do not
match the fields (``MultiThreadedEnv`` needs ``num_workers``, ``PettingZooEnv`` takes ``task`` and
``parallel``), so they cannot be instantiated as they stand. A field the env cannot honour only accepts its
default (a non-default value raises, naming it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from tdrl.envs import EnvBase, MarlGroupMapType, MOGymEnv, MultiThreadedEnv, PettingZooEnv, VmasEnv
from tdrl.trainers.algorithms.configs.envs_libs import EnvLibsConfig, gym_env_kwargs

__all__ = [
    "MOGymEnvConfig",
    "MultiThreadedEnvConfig",
    "PettingZooEnvConfig",
    "VmasEnvConfig",
    "make_mo_gym_env",
    "make_multi_threaded_env",
    "make_pettingzoo_env",
    "make_vmas_env",
]

_TARGETS = "tdrl.trainers.algorithms.configs.envs_libs_extra."


def _only_defaults(env: str, **given: tuple[Any, Any]) -> None:
    wrong = {k: v for k, (v, default) in given.items() if v != default}
    if wrong:
        raise ValueError(f"{env} does not support {sorted(wrong)} (got {wrong}); leave them at their defaults")


@dataclass
class MOGymEnvConfig(EnvLibsConfig):
    """An MO-Gymnasium env (:class:`~tdrl.envs.MOGymEnv`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(MOGymEnvConfig(env_name="deep-sea-treasure-v0"))
        >>> env.reward_spec.shape
        torch.Size([2])
    """

    env_name: str = MISSING
    categorical_action_encoding: bool = False
    from_pixels: bool = False
    pixels_only: bool = True
    frame_skip: int = 1
    device: str = "cpu"
    batch_size: list[int] | None = None
    allow_done_after_reset: bool = False
    convert_actions_to_numpy: bool = True
    missing_obs_value: Any = None
    backend: str | None = None
    disable_env_checker: bool | None = None
    render_mode: str | None = None
    num_envs: int = 0
    _target_: str = _TARGETS + "make_mo_gym_env"


def make_mo_gym_env(
    env_name: str,
    categorical_action_encoding: bool = False,
    from_pixels: bool = False,
    pixels_only: bool = True,
    frame_skip: int = 1,
    device: str = "cpu",
    batch_size: list[int] | None = None,
    allow_done_after_reset: bool = False,
    convert_actions_to_numpy: bool = True,
    missing_obs_value: Any = None,
    backend: str | None = None,
    disable_env_checker: bool | None = None,
    render_mode: str | None = None,
    num_envs: int = 0,
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.MOGymEnv` from :class:`MOGymEnvConfig`'s fields.

    Examples:
        >>> make_mo_gym_env("deep-sea-treasure-v0", categorical_action_encoding=True).action_spec.shape
        torch.Size([])
    """
    _only_defaults("MOGymEnv", backend=(backend in (None, "gymnasium"), True))
    return MOGymEnv(env_name, **gym_env_kwargs(
        "MOGymEnv", categorical_action_encoding=categorical_action_encoding, from_pixels=from_pixels,
        pixels_only=pixels_only, frame_skip=frame_skip, device=device, batch_size=batch_size,
        allow_done_after_reset=allow_done_after_reset, convert_actions_to_numpy=convert_actions_to_numpy,
        missing_obs_value=missing_obs_value, disable_env_checker=disable_env_checker, render_mode=render_mode,
        num_envs=num_envs,
    ))


@dataclass
class MultiThreadedEnvConfig(EnvLibsConfig):
    """An EnvPool batch (:class:`~tdrl.envs.MultiThreadedEnv`); ``num_workers`` is tdrl's addition.

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(MultiThreadedEnvConfig(env_name="CartPole-v1", num_workers=2))
        >>> env.batch_size
        torch.Size([2])
    """

    env_name: str = MISSING
    num_workers: int = 1
    create_env_kwargs: dict[str, Any] = field(default_factory=dict)
    from_pixels: bool = False
    pixels_only: bool = True
    frame_skip: int = 1
    device: str = "cpu"
    batch_size: list[int] | None = None
    allow_done_after_reset: bool = False
    _target_: str = _TARGETS + "make_multi_threaded_env"


def make_multi_threaded_env(
    env_name: str,
    num_workers: int = 1,
    create_env_kwargs: dict[str, Any] | None = None,
    from_pixels: bool = False,
    pixels_only: bool = True,
    frame_skip: int = 1,
    device: str = "cpu",
    batch_size: list[int] | None = None,
    allow_done_after_reset: bool = False,
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.MultiThreadedEnv` (``batch_size``, when given, must be ``[num_workers]``).

    Examples:
        >>> make_multi_threaded_env("Pendulum-v1", num_workers=3).action_spec.shape
        torch.Size([3, 1])
    """
    _only_defaults("MultiThreadedEnv", from_pixels=(from_pixels, False), frame_skip=(frame_skip, 1))
    kwargs: dict[str, Any] = {"device": device, "allow_done_after_reset": allow_done_after_reset}
    if batch_size is not None:
        kwargs["batch_size"] = list(batch_size)
    return MultiThreadedEnv(num_workers, env_name, create_env_kwargs=dict(create_env_kwargs or {}), **kwargs)


@dataclass
class PettingZooEnvConfig(EnvLibsConfig):
    """A PettingZoo task (:class:`~tdrl.envs.PettingZooEnv`); ``env_name`` is the task (``"classic/rps_v2"``),
    ``parallel``, ``use_mask``, ``seed`` and ``task_kwargs`` are tdrl's additions.

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(PettingZooEnvConfig(env_name="classic/rps_v2", parallel=True, seed=0))
        >>> sorted(env.group_map)
        ['player']
    """

    env_name: str = MISSING
    parallel: bool = True
    use_mask: bool = False
    seed: int | None = None
    task_kwargs: dict[str, Any] = field(default_factory=dict)
    from_pixels: bool = False
    pixels_only: bool = True
    frame_skip: int = 1
    device: str = "cpu"
    batch_size: list[int] | None = None
    allow_done_after_reset: bool = False
    _target_: str = _TARGETS + "make_pettingzoo_env"


def make_pettingzoo_env(
    env_name: str,
    parallel: bool = True,
    use_mask: bool = False,
    seed: int | None = None,
    task_kwargs: dict[str, Any] | None = None,
    from_pixels: bool = False,
    pixels_only: bool = True,
    frame_skip: int = 1,
    device: str = "cpu",
    batch_size: list[int] | None = None,
    allow_done_after_reset: bool = False,
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.PettingZooEnv` for the task ``env_name``.

    Examples:
        >>> make_pettingzoo_env("classic/rps_v2", seed=0, task_kwargs={"max_cycles": 2}).batch_size
        torch.Size([])
    """
    _only_defaults("PettingZooEnv", from_pixels=(from_pixels, False), frame_skip=(frame_skip, 1),
                   batch_size=(batch_size, None), allow_done_after_reset=(allow_done_after_reset, False))
    return PettingZooEnv(env_name, parallel, use_mask=use_mask, seed=seed, device=device,
                         **dict(task_kwargs or {}))


@dataclass
class VmasEnvConfig(EnvLibsConfig):
    """A VMAS scenario (:class:`~tdrl.envs.VmasEnv`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(VmasEnvConfig(scenario="navigation", num_envs=2, seed=0))
        >>> env.batch_size
        torch.Size([2])
    """

    scenario: Any = MISSING
    num_envs: int = 1
    continuous_actions: bool = True
    max_steps: int | None = None
    categorical_actions: bool = True
    seed: int | None = None
    device: str = "cpu"
    group_map: Any = None
    scenario_kwargs: dict[str, Any] = field(default_factory=dict)
    _target_: str = _TARGETS + "make_vmas_env"


def make_vmas_env(
    scenario: Any,
    num_envs: int = 1,
    continuous_actions: bool = True,
    max_steps: int | None = None,
    categorical_actions: bool = True,
    seed: int | None = None,
    device: str = "cpu",
    group_map: Any = None,
    scenario_kwargs: dict[str, Any] | None = None,
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.VmasEnv` (``scenario_kwargs`` arrive from YAML as a DictConfig).

    Examples:
        >>> make_vmas_env("navigation", num_envs=2, seed=0, max_steps=5).batch_size
        torch.Size([2])
    """
    groups = group_map
    if isinstance(group_map, str):  # a MarlGroupMapType member by name, as YAML writes it
        groups = MarlGroupMapType[group_map.upper()]
    elif group_map is not None and not isinstance(group_map, MarlGroupMapType):
        groups = {str(k): [str(a) for a in v] for k, v in dict(group_map).items()}
    return VmasEnv(scenario, num_envs=num_envs, continuous_actions=continuous_actions, max_steps=max_steps,
                   categorical_actions=categorical_actions, seed=seed, device=device, group_map=groups,
                   scenario_kwargs=dict(scenario_kwargs or {}))
