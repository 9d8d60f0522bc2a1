"""Network sizes a config leaves unset are inferred from the env specs: MLPs, ConvNets, and module chains."""

from __future__ import annotations

import pathlib

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict

from tdrl.trainers.algorithms.configs import compose_config, infer_sizes, run_config

_CFG = "tdrl.trainers.algorithms.configs."
ROOT = pathlib.Path(__file__).parents[3] / "examples" / "configs" / "torchrl"


def _pixel_pendulum() -> dict:
    # Pendulum's 3 observations as a 3-channel 1x1 "image" under "pixels": a pixel spec without rendering
    return {
        "_target_": _CFG + "envs.make_transformed_env",
        "base_env": {"_target_": _CFG + "envs_libs.make_gym_env", "env_name": "Pendulum-v1"},
        "transform": {"_target_": _CFG + "transforms.make_compose", "transforms": [
            {"_target_": "tdrl.envs.UnsqueezeTransform", "dim": -1, "in_keys": ["observation"],
             "out_keys": ["pixels"]},
            {"_target_": "tdrl.envs.UnsqueezeTransform", "dim": -1, "in_keys": ["pixels"], "out_keys": ["pixels"]},
        ]},
    }


def _conv(**kwargs) -> dict:
    return {"_target_": "tdrl.modules.ConvNet", "in_features": None, "num_cells": [4], "kernel_sizes": 1, **kwargs}


def _cfg(**nodes) -> OmegaConf:
    return OmegaConf.create({**nodes, "trainer": {"collector": {"create_env_fn": _pixel_pendulum()},
                                                  "loss_module": {"actor_network": "${actor}"}}})


def test_convnet_in_features_come_from_the_pixel_channels() -> None:
    cfg = _cfg(actor={"_target_": _CFG + "modules.make_value_model", "network": _conv(), "in_keys": ["pixels"]})
    infer_sizes(cfg)
    assert cfg.actor.network.in_features == 3


def test_conv_mlp_tanh_chain_is_sized_end_to_end() -> None:
    cfg = _cfg(actor={"_target_": _CFG + "module_wrappers.make_tensordict_sequential", "modules": [
        {"_target_": _CFG + "modules.make_tensordict_module", "module": _conv(), "in_keys": ["pixels"],
         "out_keys": ["hidden"]},
        {"_target_": _CFG + "modules.make_tensordict_module", "in_keys": ["hidden"], "out_keys": ["param"],
         "module": {"_target_": "tdrl.modules.MLP", "in_features": None, "out_features": None, "num_cells": [8]}},
        {"_target_": _CFG + "module_wrappers.make_tanh_module", "in_keys": ["param"], "out_keys": ["action"],
         "low": -2.0, "high": 2.0},
    ]})
    infer_sizes(cfg)
    conv, mlp = cfg.actor.modules[0].module, cfg.actor.modules[1].module
    # 3 channels in; 4 channels x 1 x 1 out of the conv; 1 torque out of the MLP
    assert (conv.in_features, mlp.in_features, mlp.out_features) == (3, 4, 1)
    actor = instantiate(cfg.actor)
    out = actor(TensorDict(pixels=torch.zeros(5, 3, 1, 1), batch_size=[5]))
    assert out["action"].shape == (5, 1) and out["action"].abs().max() <= 2.0


def test_values_set_in_the_config_are_kept() -> None:
    cfg = _cfg(actor={"_target_": _CFG + "modules.make_value_model", "network": _conv(in_features=7),
                      "in_keys": ["pixels"]})
    infer_sizes(cfg)
    assert cfg.actor.network.in_features == 7


def test_torchrl_ddpg_yaml_without_any_size(tmp_path: pathlib.Path) -> None:
    # TorchRL's DDPG actor is tensordict_module(MLP) -> tanh_module: both MLPs are sized from Pendulum's specs
    cfg = compose_config(ROOT / "ddpg_trainer", "config", [
        f"logger.log_dir={tmp_path}", "collector.total_frames=32", "collector.frames_per_batch=32",
        "trainer.optim_steps_per_batch=1", "trainer.progress_bar=false", "replay_buffer.batch_size=8",
        "networks.actor_network.in_features=null", "networks.actor_network.out_features=null",
        "networks.value_network.in_features=null", "networks.value_network.out_features=null"])
    trainer = run_config(cfg)
    assert (cfg.networks.actor_network.in_features, cfg.networks.actor_network.out_features) == (3, 1)
    assert (cfg.networks.value_network.in_features, cfg.networks.value_network.out_features) == (4, 1)
    trainer.train()
    assert trainer.collected_frames == 32
