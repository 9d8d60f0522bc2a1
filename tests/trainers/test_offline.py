"""Offline CQL/IQL: datasets from run folders and ReplayBuffer.dumps, the offline trainer loop, its presets."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv
from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import IQLLoss, SoftUpdate
from tdrl.trainers.algorithms import IQLTrainer, OfflineSteps
from tdrl.trainers.algorithms.configs import ConfigError, compose_run_config
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.datasets import DatasetError, check_dataset, load_dataset
from tdrl.trainers.hooks import LogValidationReward
from tdrl.trainers.run import evaluate_run, resume_run, train_run

SMALL = ["network.num_cells=[16]", "eval.episodes=1", "eval.max_steps=20", "eval.interval_episodes=1",
         "trainer.progress_bar=false"]
OFFLINE_TINY = ["optim.gradient_steps=12", "trainer.optim_steps_per_batch=5", "trainer.save_interval=5",
                "eval.interval=5", "replay.batch_size=16"]


def _source_run(tmp_path_factory, preset: str, extra: list[str]):
    run = tmp_path_factory.mktemp(preset) / "run"
    overrides = [f"preset={preset}", f"run_dir={run}", "eval.interval=0", *SMALL, *extra]
    train_run(compose_run_config(overrides), progress_bar=False)
    return run


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    """A tiny TD3 run on Pendulum-v1: its checkpoint holds a 300-transition replay buffer."""
    return _source_run(tmp_path_factory, "td3_pendulum", [
        "collector.frames_per_batch=100", "collector.total_frames=300", "replay.init_random_frames=100",
        "trainer.optim_steps_per_batch=2"])


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    """A tiny DQN run on CartPole-v1 (one-hot actions)."""
    return _source_run(tmp_path_factory, "dqn_cartpole", [
        "collector.frames_per_batch=64", "collector.total_frames=192", "replay.init_random_frames=64",
        "trainer.optim_steps_per_batch=2", "env.num_envs=2", "replay.batch_size=16"])


@pytest.mark.parametrize("preset,source", [("iql_pendulum", "pendulum_run"), ("cql_pendulum", "pendulum_run"),
                                           ("iql_cartpole", "cartpole_run"), ("cql_cartpole", "cartpole_run")])
def test_offline_preset_trains_checkpoints_evaluates_and_resumes(preset, source, tmp_path, request):
    dataset = request.getfixturevalue(source)
    run = tmp_path / "run"
    cfg = compose_run_config([f"preset={preset}", f"dataset.path={dataset}", f"run_dir={run}", *SMALL, *OFFLINE_TINY])
    summary = train_run(cfg, progress_bar=False)
    assert summary["optim_steps"] == 12 and summary["frames"] == 12  # the counter counts gradient steps
    assert summary["best_train_return"] is None  # no training episodes offline
    assert (run / "best.pt").exists() and (run / "learning_curve.png").exists()
    assert (run / "logs" / "scalars" / "r_eval_periodic.csv").exists()
    state = load_checkpoint(run / "checkpoint.pt")
    assert "replay_buffer" not in state["modules"]  # the dataset is not copied into every checkpoint
    mean, _, returns = evaluate_run(run, episodes=1, policy="last")
    assert len(returns) == 1 and mean == returns[0]
    # Resume with a longer budget: continues from step 12, with the dataset rebuilt from dataset.path.
    saved = OmegaConf.load(run / "config.yaml")
    saved.optim.gradient_steps = 17
    (run / "config.yaml").write_text(OmegaConf.to_yaml(saved))
    before = state["loss_module"]
    resumed = resume_run(run, progress_bar=False)
    assert resumed["optim_steps"] == 17
    after = load_checkpoint(run / "checkpoint.pt")["loss_module"]
    assert any(not torch.equal(before[k], after[k]) for k in before if before[k].is_floating_point())


def test_dataset_from_replay_buffer_dumps(pendulum_run, tmp_path):
    source = load_dataset(pendulum_run, batch_size=8)
    assert len(source) == 300 and source.sample().shape == torch.Size([8])
    source.dumps(tmp_path / "dump")
    run = tmp_path / "run"
    cfg = compose_run_config(["preset=iql_pendulum", f"dataset.path={tmp_path / 'dump'}", f"run_dir={run}",
                          *SMALL, *OFFLINE_TINY])
    assert train_run(cfg, progress_bar=False)["optim_steps"] == 12


def test_dataset_errors_name_the_key_and_the_expected_spec(pendulum_run, cartpole_run, tmp_path):
    with pytest.raises(DatasetError, match=r"dataset entry 'observation' does not match the env: expected shape "
                                           r"\(4,\).*found \(3,\)"):
        train_run(compose_run_config(["preset=cql_cartpole", f"dataset.path={pendulum_run}",
                                  f"run_dir={tmp_path / 'r'}", *SMALL, *OFFLINE_TINY]), progress_bar=False)
    buffer = load_dataset(cartpole_run, batch_size=4)
    stripped = TensorDictReplayBuffer(storage=LazyTensorStorage(10))
    stripped.extend(buffer[:10].exclude(("next", "reward")))
    with pytest.raises(DatasetError, match=r"no entry \('next', 'reward'\).*expected shape \(1,\)"):
        check_dataset(stripped, GymEnv("CartPole-v1"))
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(tmp_path / "missing", batch_size=4)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="neither a run folder"):
        load_dataset(tmp_path / "empty", batch_size=4)


def test_offline_config_errors(pendulum_run):
    with pytest.raises(ConfigError, match="learns offline from a dataset: pass dataset.path="):
        compose_run_config(["algo=iql", "env=Pendulum-v1"])
    with pytest.raises(ConfigError, match="collects nothing: remove the collector section"):
        compose_run_config(["algo=iql", "env=Pendulum-v1", f"dataset.path={pendulum_run}", "collector.total_frames=10"])
    with pytest.raises(ConfigError, match="optim.gradient_steps sets the length of an offline run"):
        compose_run_config(["algo=sac", "optim.gradient_steps=10"])
    with pytest.raises(ConfigError, match="unknown config key 'dataset'"):
        compose_run_config(["algo=sac", "dataset.path=x"])
    with pytest.raises(ConfigError, match="policy_update_delay is TD3's"):
        compose_run_config(["algo=ddpg", "trainer.policy_update_delay=2"])


def _iql_parts():
    net = torch.nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[16]), NormalParamExtractor())
    actor = ProbabilisticActor(TensorDictModule(net, ["observation"], ["loc", "scale"]), in_keys=["loc", "scale"],
                               distribution_class=TanhNormal, distribution_kwargs={"low": -2.0, "high": 2.0},
                               return_log_prob=True)
    qnet = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[16]), in_keys=["observation", "action"])
    vnet = ValueOperator(MLP(in_features=3, out_features=1, num_cells=[16]), in_keys=["observation"])
    loss = IQLLoss(actor, qnet, vnet)
    loss.make_value_estimator(gamma=0.99)
    return actor, loss


def test_python_api_offline_iql_trainer_with_validation_rollouts(pendulum_run, tmp_path):
    actor, loss = _iql_parts()
    buffer = load_dataset(pendulum_run, batch_size=16)
    env = GymEnv("Pendulum-v1")
    trainer = IQLTrainer(collector=None, replay_buffer=buffer, gradient_steps=7, optim_steps_per_batch=3,
                         loss_module=loss, optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
                         target_net_updater=SoftUpdate(loss, tau=0.01), progress_bar=False, seed=0,
                         save_trainer_file=tmp_path / "ckpt.pt", save_trainer_interval=3, log_interval=1)
    LogValidationReward(record_interval=1, record_frames=10, policy_exploration=actor,
                        environment=env).register(trainer)
    assert trainer.offline and trainer.gradient_steps == 7 and isinstance(trainer.collector, OfflineSteps)
    before = [p.detach().clone() for p in loss.actor_network_params.values(True, True)]
    trainer.train()
    assert trainer._optim_count == 7 and trainer.collected_frames == 7  # 3 + 3 + 1 steps
    assert len(trainer._log_dict["r_evaluation"]) == 3  # one evaluation per loop iteration
    after = list(loss.actor_network_params.values(True, True))
    assert all(not torch.equal(b, a) for b, a in zip(before, after))
    # Resume into a fresh trainer with a longer budget.
    _, loss2 = _iql_parts()
    again = IQLTrainer(collector=None, replay_buffer=buffer, gradient_steps=10, optim_steps_per_batch=3,
                       loss_module=loss2, optimizer=torch.optim.Adam(loss2.parameters(), lr=1e-3),
                       progress_bar=False, save_trainer_file=tmp_path / "ckpt.pt")
    again.load_from_file(tmp_path / "ckpt.pt")
    assert again._optim_count == 7
    again.train()
    assert again._optim_count == 10


def test_python_api_offline_errors(pendulum_run):
    _, loss = _iql_parts()
    common = {"optim_steps_per_batch": 2, "loss_module": loss, "progress_bar": False}
    with pytest.raises(ValueError, match="needs gradient_steps >= 1"):
        IQLTrainer(collector=None, replay_buffer=load_dataset(pendulum_run, batch_size=4), **common)
    with pytest.raises(ValueError, match="pre-filled replay_buffer"):
        IQLTrainer(collector=None, replay_buffer=TensorDictReplayBuffer(storage=LazyTensorStorage(4)),
                   gradient_steps=3, **common)
    with pytest.raises(ValueError, match="takes gradient_steps=N instead"):
        IQLTrainer(collector=None, replay_buffer=load_dataset(pendulum_run, batch_size=4), total_frames=10,
                   gradient_steps=3, **common)
    with pytest.raises(ValueError, match="gradient_steps is for offline runs"):
        IQLTrainer(collector=[TensorDict({}, [1])], total_frames=10, gradient_steps=3,
                   replay_buffer=load_dataset(pendulum_run, batch_size=4), **common)


def test_cli_offline_train_and_eval(pendulum_run, tmp_path):
    run = tmp_path / "cli"
    cmd = [sys.executable, "-m", "tdrl.trainers.cli"]
    done = subprocess.run([*cmd, "train", "algo=iql", "env=Pendulum-v1", f"dataset.path={pendulum_run}",
                           f"run_dir={run}", *SMALL, *OFFLINE_TINY, "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "12 gradient steps" in done.stdout
    out = subprocess.run([*cmd, "eval", str(run), "--episodes", "1", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout.strip().splitlines()[-1])["returns"]) == 1
    bad = subprocess.run([*cmd, "train", "algo=iql", "env=CartPole-v1", f"dataset.path={pendulum_run}",
                          f"run_dir={tmp_path / 'bad'}", *SMALL, *OFFLINE_TINY, "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "dataset entry 'observation' does not match the env" in bad.stderr


def test_dataset_path_is_stored_absolute_for_resume(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = compose_run_config(["algo=iql", "env=Pendulum-v1", "dataset.path=runs/td3"])
    assert cfg.dataset.path == str(tmp_path / "runs" / "td3")


def test_offline_progress_bar_counts_gradient_steps(pendulum_run, capsys):
    _, loss = _iql_parts()
    trainer = IQLTrainer(collector=None, replay_buffer=load_dataset(pendulum_run, batch_size=16), gradient_steps=4,
                         optim_steps_per_batch=2, loss_module=loss,
                         optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3),
                         target_net_updater=SoftUpdate(loss, tau=0.01), progress_bar=True, seed=0)
    trainer.train()
    err = capsys.readouterr().err
    assert "steps" in err and "frames" not in err
