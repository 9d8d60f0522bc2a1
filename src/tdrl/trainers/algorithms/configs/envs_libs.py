"""Configs for library environments (group ``env``: ``gym``, ``dm_control``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import MISSING

from tdrl.envs import DMControlEnv, DoubleToFloat, EnvBase, GymEnv, TransformedEnv
from tdrl.envs.libs.gym import set_gym_backend
from tdrl.trainers.algorithms.configs.common import ConfigBase

__all__ = ["DMControlEnvConfig", "EnvLibsConfig", "GymEnvConfig", "make_dm_control_env", "make_gym_env"]


@dataclass
class EnvLibsConfig(ConfigBase):
    """Parent of library environment configs.

    Examples:
        >>> from hydra.utils import instantiate
        >>> cfg = GymEnvConfig(env_name="CartPole-v1")
        >>> isinstance(cfg, EnvLibsConfig), instantiate(cfg).batch_size
        (True, torch.Size([]))
    """

    _partial_: bool = False


@dataclass
class GymEnvConfig(EnvLibsConfig):
    """A gymnasium environment (:class:`~tdrl.envs.GymEnv`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(GymEnvConfig(env_name="CartPole-v1"))
        >>> env.action_spec.shape
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
    disable_env_checker: bool | None = None
    render_mode: str | None = None
    num_envs: int = 0
    double_to_float: bool = False
    backend: str = "gymnasium"
    _target_: str = "tdrl.trainers.algorithms.configs.envs_libs.make_gym_env"


def gym_env_kwargs(
    env: str,
    *,
    categorical_action_encoding: bool,
    from_pixels: bool,
    pixels_only: bool,
    frame_skip: int,
    device: str,
    batch_size: list[int] | None,
    allow_done_after_reset: bool,
    convert_actions_to_numpy: bool,
    missing_obs_value: Any,
    disable_env_checker: bool | None,
    render_mode: str | None,
    num_envs: int,
) -> dict[str, Any]:
    """The keyword arguments of a gymnasium-backed env (``GymEnv``, ``MOGymEnv``) from a config's fields.

    Examples:
        >>> sorted(gym_env_kwargs("GymEnv", categorical_action_encoding=False, from_pixels=False, pixels_only=True,
        ...     frame_skip=2, device="cpu", batch_size=None, allow_done_after_reset=False,
        ...     convert_actions_to_numpy=True, missing_obs_value=None, disable_env_checker=None, render_mode=None,
        ...     num_envs=4))
        ['allow_done_after_reset', 'categorical_action_encoding', 'device', 'frame_skip', 'from_pixels', 'num_envs']
    """
    if not convert_actions_to_numpy or missing_obs_value is not None:
        raise ValueError(f"tdrl's {env} always converts actions to numpy and does not fill missing observations: "
                         "leave convert_actions_to_numpy=True and missing_obs_value=None")
    kwargs: dict[str, Any] = {
        "categorical_action_encoding": categorical_action_encoding, "from_pixels": from_pixels,
        "frame_skip": frame_skip, "device": device, "allow_done_after_reset": allow_done_after_reset,
    }
    if from_pixels:
        kwargs["pixels_only"] = pixels_only
    optional = {"batch_size": list(batch_size) if batch_size is not None else None,
                "disable_env_checker": disable_env_checker, "render_mode": render_mode, "num_envs": num_envs or None}
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    return kwargs


def make_gym_env(
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
    disable_env_checker: bool | None = None,
    render_mode: str | None = None,
    num_envs: int = 0,
    double_to_float: bool = False,
    backend: str = "gymnasium",
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.GymEnv`; ``double_to_float`` casts a float64 observation to float32.

    ``convert_actions_to_numpy`` and ``missing_obs_value`` are kept for TorchRL YAMLs: tdrl always hands
    numpy actions to gymnasium and has no missing-observation filler, so only their defaults are accepted.

    Examples:
        >>> make_gym_env("CartPole-v1", double_to_float=True).observation_spec["observation"].dtype
        torch.float32
    """
    kwargs = gym_env_kwargs(
        "GymEnv", categorical_action_encoding=categorical_action_encoding, from_pixels=from_pixels,
        pixels_only=pixels_only, frame_skip=frame_skip, device=device, batch_size=batch_size,
        allow_done_after_reset=allow_done_after_reset, convert_actions_to_numpy=convert_actions_to_numpy,
        missing_obs_value=missing_obs_value, disable_env_checker=disable_env_checker, render_mode=render_mode,
        num_envs=num_envs,
    )
    with set_gym_backend(backend):
        env = GymEnv(env_name, **kwargs)
    if double_to_float and env.observation_spec["observation"].dtype == torch.float64:
        # tdrl's EnvBase has no append_transform (TorchRL's does): wrap explicitly.
        return TransformedEnv(env, DoubleToFloat(in_keys=["observation"]))
    return env


@dataclass
class DMControlEnvConfig(EnvLibsConfig):
    """A DeepMind Control suite task (:class:`~tdrl.envs.DMControlEnv`).

    Examples:
        >>> from hydra.utils import instantiate
        >>> env = instantiate(DMControlEnvConfig(env_name="cartpole", task_name="balance"))
        >>> env.action_spec.shape
        torch.Size([1])
    """

    env_name: str = MISSING
    task_name: str = MISSING
    from_pixels: bool = False
    pixels_only: bool = True
    frame_skip: int = 1
    device: str = "cpu"
    batch_size: list[int] | None = None
    allow_done_after_reset: bool = False
    _target_: str = "tdrl.trainers.algorithms.configs.envs_libs.make_dm_control_env"


def make_dm_control_env(
    env_name: str,
    task_name: str,
    from_pixels: bool = False,
    pixels_only: bool = True,
    frame_skip: int = 1,
    device: str = "cpu",
    batch_size: list[int] | None = None,
    allow_done_after_reset: bool = False,
) -> EnvBase:
    """Builds a :class:`~tdrl.envs.DMControlEnv` (``batch_size`` arrives from YAML as a list).

    Examples:
        >>> make_dm_control_env("cartpole", "balance").batch_size
        torch.Size([])
    """
    kwargs: dict[str, Any] = {"from_pixels": from_pixels, "frame_skip": frame_skip, "device": device,
                              "allow_done_after_reset": allow_done_after_reset}
    if from_pixels:
        kwargs["pixels_only"] = pixels_only
    if batch_size is not None:
        kwargs["batch_size"] = list(batch_size)
    return DMControlEnv(env_name, task_name, **kwargs)
