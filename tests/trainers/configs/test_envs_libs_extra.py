"""``MOGymEnvConfig``, ``MultiThreadedEnvConfig``, ``PettingZooEnvConfig``, ``VmasEnvConfig``: instantiate to the
env with the fields given, through the ConfigStore names TorchRL uses, and reject fields the env cannot honour."""

from __future__ import annotations

import importlib.util

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tdrl.trainers.algorithms.configs import REGISTRY
from tdrl.trainers.algorithms.configs.envs_libs_extra import (
    MOGymEnvConfig,
    MultiThreadedEnvConfig,
    PettingZooEnvConfig,
    VmasEnvConfig,
    make_mo_gym_env,
    make_multi_threaded_env,
    make_pettingzoo_env,
    make_vmas_env,
)


def _needs(module: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=f"{module} is not installed")


def test_registered_under_torchrl_names() -> None:
    env = REGISTRY["env"]
    assert env["mo_gym"] is MOGymEnvConfig and env["multi_threaded"] is MultiThreadedEnvConfig
    assert env["pettingzoo"] is PettingZooEnvConfig and env["vmas"] is VmasEnvConfig


@_needs("mo_gymnasium")
def test_mo_gym_from_yaml() -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(MOGymEnvConfig), {"env_name": "deep-sea-treasure-v0",
                                                                  "categorical_action_encoding": True})
    env = instantiate(cfg)
    assert type(env).__name__ == "MOGymEnv" and env.reward_spec.shape == (2,) and env.action_spec.shape == ()
    with pytest.raises(ValueError, match="convert_actions_to_numpy"):
        make_mo_gym_env("deep-sea-treasure-v0", convert_actions_to_numpy=False)


@_needs("envpool")
def test_multi_threaded_from_yaml() -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(MultiThreadedEnvConfig),
                          {"env_name": "CartPole-v1", "num_workers": 3, "create_env_kwargs": {"seed": 1}})
    env = instantiate(cfg)
    assert env.batch_size == (3,) and env.rollout(2).batch_size == (3, 2)
    with pytest.raises(ValueError, match="frame_skip"):
        make_multi_threaded_env("CartPole-v1", frame_skip=2)


@_needs("pettingzoo")
def test_pettingzoo_from_yaml() -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(PettingZooEnvConfig),
                          {"env_name": "classic/tictactoe_v3", "parallel": False, "use_mask": True, "seed": 0})
    env = instantiate(cfg)
    assert sorted(env.group_map) == ["player_1", "player_2"]
    with pytest.raises(ValueError, match="from_pixels"):
        make_pettingzoo_env("classic/rps_v2", from_pixels=True)


@_needs("vmas")
def test_vmas_from_yaml() -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(VmasEnvConfig),
                          {"scenario": "navigation", "num_envs": 2, "seed": 0, "max_steps": 3,
                           "scenario_kwargs": {"n_agents": 2}})
    env = instantiate(cfg)
    assert env.batch_size == (2,) and env.n_agents == 2
    per_agent = make_vmas_env("navigation", num_envs=1, seed=0, group_map="one_group_per_agent",
                              scenario_kwargs={"n_agents": 2})
    assert sorted(per_agent.group_map) == ["agent_0", "agent_1"]
