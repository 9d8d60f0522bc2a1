"""Registered component configs build their tdrl objects from defaults (plus the required values)."""

from __future__ import annotations

import pathlib

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tdrl.data import ReplayBuffer
from tdrl.envs import EnvBase, Transform, TransformedEnv
from tdrl.trainers.algorithms.configs import REGISTRY
from tdrl.trainers.algorithms.configs.modules import make_categorical_model, make_value_model
from tdrl.trainers.algorithms.configs.transforms import make_to_tensor_image

from .test_configstore_instantiate import REQUIRED as STORE_REQUIRED

# values for fields a config leaves required (``???``)
# The ConfigStore test's table gives the required values of the other entries (one table per entry).
_REQUIRED = {
    "flatten_observation": {"first_dim": -2, "last_dim": -1},
    "rename": {"in_keys": ["observation"], "out_keys": ["obs"]},
    "clip": {"low": -1.0},
    "discrete_action_projection": {"num_actions_effective": 2, "max_actions": 4},
    "unary": {"in_keys": ["observation"], "out_keys": ["obs_abs"], "fn": {"_target_": "torch.abs", "_partial_": True}},
    "linearise_rewards": {"in_keys": ["reward"]},
    "permute": {"dims": [-1, -3, -2]},
    "random_crop_tensordict": {"crop_size": 4},
}
# needs a tokenizer object: built in test_configstore_instantiate.py
_NEEDS_OBJECTS = {"tokenizer"}


@pytest.mark.parametrize("name", sorted(set(REGISTRY["transform"]) - _NEEDS_OBJECTS))
def test_transform_configs_build_transforms(name: str) -> None:
    required = _REQUIRED.get(name) or STORE_REQUIRED.get(("transform", name), {})
    cfg = OmegaConf.merge(OmegaConf.structured(REGISTRY["transform"][name]), required)
    transform = instantiate(cfg)
    assert isinstance(transform, Transform)


@pytest.mark.parametrize("name", ["random", "without_replacement", "slice", "slice_without_replacement"])
def test_sampler_configs_build_buffers(name: str) -> None:
    rb_cfg = OmegaConf.structured(REGISTRY["replay_buffer"]["base"])
    rb_cfg.storage = OmegaConf.structured(REGISTRY["storage"]["lazy_tensor"])
    rb_cfg.storage.max_size = 16
    rb_cfg.sampler = OmegaConf.structured(REGISTRY["sampler"][name])
    if name.startswith("slice"):
        rb_cfg.sampler.num_slices = 2
    rb = instantiate(rb_cfg)
    assert isinstance(rb, ReplayBuffer)
    assert type(rb.sampler).__name__.lower().replace("sampler", "") in name.replace("_", "") + "random"


@pytest.mark.parametrize("name", sorted(REGISTRY["optimizer"]))
def test_optimizer_configs_are_partials_over_params(name: str) -> None:
    make = instantiate(OmegaConf.structured(REGISTRY["optimizer"][name]))
    # positionally: torch names it `params`, DreamerV3Optimizer `parameters` (as TorchRL 0.14.1)
    optimizer = make(torch.nn.Linear(2, 2).parameters())
    assert isinstance(optimizer, torch.optim.Optimizer)


def test_documented_quick_start_env_and_dm_control(tmp_path: pathlib.Path) -> None:
    # TorchRL's quick-start layout: a defaults entry placing a registered env config at a node.
    (tmp_path / "config.yaml").write_text(
        "defaults:\n  - env@training_env: gym\n  - env@dmc_env: dm_control\n"
        "  - env@wrapped: transformed_env\n"
        "  - transform@wrapped.transform: step_counter\n  - _self_\n"
        "training_env:\n  env_name: CartPole-v1\n"
        "dmc_env:\n  env_name: cartpole\n  task_name: balance\n"
        "wrapped:\n  base_env: ${dmc_env}\n  transform:\n    max_steps: 3\n"
    )
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        cfg = compose(config_name="config")
    gym_env = instantiate(cfg.training_env)
    assert isinstance(gym_env, EnvBase) and gym_env.action_spec.shape == torch.Size([2])
    wrapped = instantiate(cfg.wrapped)
    assert isinstance(wrapped, TransformedEnv)
    assert wrapped.rollout(10).shape == torch.Size([3])
    wrapped.close()


@pytest.mark.parametrize("name", ["a2c", "reinforce", "ppo"])
def test_loss_configs_route_gamma_and_keys(name: str) -> None:
    cfg = OmegaConf.structured(REGISTRY["loss"][name])
    cfg.gamma, cfg.advantage_key = 0.5, "adv"
    loss = instantiate(cfg, actor_network=make_categorical_model(torch.nn.Linear(4, 2)),
                       critic_network=make_value_model(torch.nn.Linear(4, 1)))
    assert loss.tensor_keys.advantage == "adv"
    assert float(loss.value_estimator.gamma) == 0.5


def test_to_tensor_image_dtype_is_read_from_its_yaml_name() -> None:
    assert make_to_tensor_image(dtype="torch.float16").dtype == torch.float16
    assert make_to_tensor_image(dtype="float64").dtype == torch.float64
    with pytest.raises(ValueError, match=r"to_tensor_image\.dtype: 'torch\.floaty' is not a torch dtype"):
        make_to_tensor_image(dtype="torch.floaty")
