"""Configs are validated before anything is built; mistyped keys get a suggestion and the valid keys."""

from __future__ import annotations

import pathlib

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tdrl.trainers.algorithms.configs import ConfigValidationError, run_config, validate_config

YAML_DIR = pathlib.Path(__file__).parents[3] / "examples" / "configs"


def _loose_cfg(tmp_path: pathlib.Path, *overrides: str):
    with initialize_config_dir(config_dir=str(YAML_DIR), version_base="1.3"):
        cfg = compose(config_name="ppo_cartpole", overrides=[f"logger.log_dir={tmp_path}", *overrides])
    # a plain (non-structured) copy, as a hand-written config or an appended "+key=value" would give
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))


def test_unknown_key_names_the_node_path(tmp_path: pathlib.Path) -> None:
    cfg = _loose_cfg(tmp_path)
    cfg.loss.clip_epsilonn = 0.1
    with pytest.raises(ConfigValidationError) as info:
        validate_config(cfg.trainer, path="trainer")
    message = str(info.value)
    assert "trainer.loss_module.clip_epsilonn: unknown key; did you mean clip_epsilon? valid keys: " in message
    assert "valid keys: " in message and "entropy_coeff" in message


def test_validation_runs_before_any_env_is_built(tmp_path: pathlib.Path) -> None:
    cfg = _loose_cfg(tmp_path, "training_env.create_env_fn.env_name=NoSuchEnv-v0")
    cfg.optimizer.learning_rate = 1e-3
    with pytest.raises(ConfigValidationError, match=r"trainer\.optimizer\.learning_rate: unknown key"):
        run_config(cfg)


def test_missing_required_value_is_reported(tmp_path: pathlib.Path) -> None:
    cfg = _loose_cfg(tmp_path)
    cfg.logger.exp_name = "???"
    with pytest.raises(ConfigValidationError, match=r"trainer\.logger\.exp_name: required by tdrl\.trainers\.algorithms\.configs\.logging\.make_csv_logger"):
        validate_config(cfg.trainer, path="trainer")


def test_all_problems_are_listed_together() -> None:
    cfg = OmegaConf.create({
        "a": {"_target_": "torch.nn.Linear", "in_features": 2},
        "b": {"_target_": "tdrl.no_such_module.Thing"},
        "c": {"_target_": "torch.nn.Tanh", "inplace": True},
    })
    with pytest.raises(ConfigValidationError) as info:
        validate_config(cfg)
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid config (3 problem(s)):"
    assert "a.out_features: required by torch.nn.Linear but not set" in lines
    assert any(line.startswith("b._target_: cannot import 'tdrl.no_such_module.Thing'") for line in lines)
    assert any(line.startswith("c.inplace: unknown key;") and line.endswith("(target: torch.nn.Tanh)") for line in lines)


def test_partial_nodes_may_leave_required_arguments() -> None:
    cfg = OmegaConf.create({"opt": {"_target_": "torch.optim.Adam", "_partial_": True, "lr": 0.1}})
    validate_config(cfg)


def test_valid_config_passes(tmp_path: pathlib.Path) -> None:
    validate_config(_loose_cfg(tmp_path).trainer, path="trainer")
