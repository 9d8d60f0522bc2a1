"""TorchRL's own example trainer YAMLs (``yaml/torchrl/``, copied unmodified) compose, validate, build and train.

Overrides only shrink the budget (frames, workers, buffer sizes) and keep loggers offline (``WANDB_MODE``, a temp
folder). TorchRL's HalfCheetah-v4 configs need gymnasium's MuJoCo envs (which also import ``imageio``): the
default run uses Pendulum-v1 for them, with the network sizes left to inference, so it does not depend on
MuJoCo; ``test_halfcheetah_v4_as_written`` (slow) runs them on HalfCheetah-v4 unchanged, skipped where it
cannot load.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass, field

import gymnasium as gym
import pytest
import torch

import tdrl
from tdrl.trainers.algorithms.configs import ConfigValidationError, compose_config, run_config

ROOT = pathlib.Path(__file__).parents[3] / "examples" / "configs" / "torchrl"
_ON = ["collector.total_frames=64", "collector.frames_per_batch=32", "trainer.total_frames=64",
       "trainer.progress_bar=false"]
_OFF = ["collector.total_frames=64", "collector.frames_per_batch=32", "collector.init_random_frames=32",
        "replay_buffer.storage.max_size=64", "replay_buffer.batch_size=16", "trainer.optim_steps_per_batch=2",
        "trainer.progress_bar=false"]
_SMALL_RB = ["replay_buffer.storage.max_size=32", "replay_buffer.batch_size=16"]
# HalfCheetah-v4 -> Pendulum-v1: sizes written for HalfCheetah (17 obs, 6 actions) are inferred again
_PENDULUM = ["training_env.create_env_fn.base_env.env_name=Pendulum-v1"] + [
    f"networks.{net}.{side}=null" for net in ("policy_network", "qvalue_network") for side in ("in_features",
                                                                                               "out_features")]


@dataclass(frozen=True)
class Case:
    folder: str
    name: str
    overrides: tuple[str, ...]
    trainer: str
    logger_dir: str = "logger.log_dir"
    checks: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.name}"


CASES = [
    Case("ppo_trainer", "config", (*_ON, *_SMALL_RB, "collector.num_workers=1"), "PPOTrainer"),
    Case("ppo_trainer", "config_ewma", (*_ON, *_SMALL_RB, "collector.num_workers=1"), "PPOTrainer",
         checks=("ewma",)),
    Case("ppo_trainer", "config_with_transforms",
         (*_ON, "collector.num_workers=1", "batched_env.num_workers=1", "storage.max_size=32",
          "replay_buffer.batch_size=16"), "PPOTrainer", "logger.save_dir"),
    Case("a2c_trainer", "config", (*_ON, *_SMALL_RB, "collector.num_workers=1"), "A2CTrainer", "logger.save_dir"),
    Case("reinforce_trainer", "config", (*_ON, *_SMALL_RB, "collector.num_workers=1"), "ReinforceTrainer",
         "logger.save_dir"),
    Case("dqn_trainer", "config", tuple(_OFF), "DQNTrainer"),
    Case("ddpg_trainer", "config", tuple(_OFF), "DDPGTrainer"),
    Case("sac_trainer", "config",
         (*_OFF, *_PENDULUM, "networks.value_network.in_features=null", "collector.num_workers=1",
          "training_env.num_workers=1"), "SACTrainer", "logger.save_dir", checks=("policy_version",)),
    Case("sac_trainer", "config_async",
         (*[o for o in _OFF if "init_random" not in o], *_PENDULUM, "networks.value_network.in_features=null",
          "collector.num_workers=1", "training_env.num_workers=1", "trainer.total_frames=64"), "SACTrainer",
         "logger.save_dir", checks=("policy_version", "async")),
    Case("cql_trainer", "config", (*_OFF, *_PENDULUM), "CQLTrainer"),
    Case("iql_trainer", "config", (*_OFF, *_PENDULUM, "networks.value_network.in_features=null"), "IQLTrainer"),
]


@pytest.fixture(autouse=True)
def _offline_wandb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")


def _overrides(case: Case, tmp_path: pathlib.Path) -> list[str]:
    return [*case.overrides, f"{case.logger_dir}={tmp_path}"]


def test_every_fixture_has_a_case_and_a_source_header() -> None:
    fixtures = {f"{p.parent.name}/{p.stem}" for p in ROOT.glob("*/*.yaml")}
    covered = {c.id for c in CASES} | {c.id for c in REFUSED_CASES}
    assert fixtures == covered, sorted(fixtures ^ covered)
    for path in ROOT.glob("*/*.yaml"):
        assert path.read_text().startswith("# Source: pytorch/rl sota-implementations/"), path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_torchrl_yaml_builds_and_trains(case: Case, tmp_path: pathlib.Path) -> None:
    cfg = compose_config(ROOT / case.folder, case.name, _overrides(case, tmp_path))
    trainer = run_config(cfg)
    assert type(trainer).__name__ == case.trainer
    if "async" in case.checks:  # the multi_async collector's worker collects while the trainer optimises
        assert trainer.async_collection and type(trainer.collector).__name__ == "MultiAsyncCollector"
    if "ewma" in case.checks:  # the EWMA proximal policy is a SoftUpdate of the actor with eps 0.99
        assert trainer.loss_module.delay_actor and trainer.target_net_updater is not None
        assert float(trainer.loss_module.max_importance_ratio) == 100.0
    before = [p.detach().clone() for p in trainer.loss_module.parameters()]
    trainer.train()
    assert trainer.collected_frames == 64
    assert any(not b.equal(a) for b, a in zip(before, trainer.loss_module.parameters())), "no parameter moved"
    assert any(tmp_path.rglob("*")), "the logger wrote nothing"
    if "policy_version" in case.checks:  # collector.track_policy_version: true tags every stored frame
        stored = trainer.replay_buffer[:]
        assert stored["policy_version"].dtype == torch.int64
        assert stored["policy_version"].shape == stored.shape


# YAMLs that name configs tdrl does not have.
REFUSED_CASES = [
    Case("ppo_trainer", "config_async",
         (*_ON, "collector.num_workers=1", "training_env.num_workers=1", "replay_buffer.storage.max_size=64",
          "replay_buffer.batch_size=16", "trainer.optim_steps_per_batch=2"), "PPOTrainer", "logger.save_dir"),
]


_REFUSALS = {
    # its defaults list names transforms tdrl does not have: composing stops there, with the group's names
    "ppo_trainer/config_async": r"Could not find 'transform/(module|flatten_tensordict)' \(group 'transform' has: .*noop_reset",
}


@pytest.mark.parametrize("case", REFUSED_CASES, ids=[c.id for c in REFUSED_CASES])
def test_yaml_naming_missing_configs_is_refused_before_anything_starts(case: Case, tmp_path: pathlib.Path) -> None:
    # See docs/configs.md: the refusal names the problem before any env or worker starts.
    with pytest.raises(ConfigValidationError, match=_REFUSALS[case.id]):
        run_config(compose_config(ROOT / case.folder, case.name, _overrides(case, tmp_path)))


def _cli(case: Case, tmp_path: pathlib.Path) -> subprocess.CompletedProcess:
    # the subprocess imports the tdrl under test, whatever the working directory
    src = str(pathlib.Path(tdrl.__file__).resolve().parents[1])
    path = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    cmd = [sys.executable, "-m", "tdrl.trainers.cli", "train", "--config-path", str(ROOT / case.folder),
           "--config-name", case.name, *_overrides(case, tmp_path), f"run_dir={tmp_path / 'run'}",
           "eval.episodes=1", "eval.max_steps=20"]  # the run folder's final evaluation: a tiny one
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


_CLI_DEFAULT = {"ppo_trainer/config", "dqn_trainer/config"}
CLI_CASES = [pytest.param(c, id=c.id, marks=() if c.id in _CLI_DEFAULT else pytest.mark.slow) for c in CASES]


@pytest.mark.integration
@pytest.mark.parametrize("case", CLI_CASES)
def test_tdrl_train_cli_runs_torchrl_yaml(case: Case, tmp_path: pathlib.Path) -> None:
    out = _cli(case, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"done: {case.trainer}, 64 frames" in out.stdout, out.stdout[-2000:]


def test_cli_reports_a_mistyped_key_with_the_valid_ones(tmp_path: pathlib.Path) -> None:
    case = CASES[5]  # dqn
    bad = Case(case.folder, case.name, (*case.overrides, "loss.delay_valeu=false"), case.trainer)
    with pytest.raises(ConfigValidationError, match=r"loss\.delay_valeu: unknown key; did you mean delay_value\?"):
        compose_config(ROOT / bad.folder, bad.name, _overrides(bad, tmp_path))


def _mujoco_loads() -> bool:
    try:
        gym.make("HalfCheetah-v4").close()
    except Exception:  # noqa: BLE001 - any import or registration problem means: not available here
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["sac_trainer", "cql_trainer", "iql_trainer"])
def test_halfcheetah_v4_as_written(folder: str, tmp_path: pathlib.Path) -> None:
    if not _mujoco_loads():
        pytest.skip("gymnasium's HalfCheetah-v4 does not load here (MuJoCo envs need imageio)")
    case = next(c for c in CASES if c.folder == folder)
    overrides = [o for o in case.overrides if o not in _PENDULUM and "value_network.in_features" not in o]
    cfg = compose_config(ROOT / folder, "config", [*overrides, f"{case.logger_dir}={tmp_path}"])
    trainer = run_config(cfg)
    trainer.train()
    assert trainer.collected_frames == 64
