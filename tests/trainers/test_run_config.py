"""Config composition and validation (no env is built)."""

from __future__ import annotations

import pytest

from tdrl.trainers.algorithms.configs import ConfigError, compose_run_config, list_presets


def test_default_is_ppo_cartpole():
    cfg = compose_run_config([])
    assert (cfg.algo, cfg.env.name) == ("ppo", "CartPole-v1")


def test_algo_and_env_pick_the_matching_preset():
    cfg = compose_run_config(["env=Pendulum-v1"])
    assert cfg.collector.frames_per_batch == 2048
    assert compose_run_config(["algo=a2c"]).trainer.num_epochs == 1


def test_typo_lists_valid_keys_and_suggests():
    with pytest.raises(ConfigError) as err:
        compose_run_config(["collector.frame_per_batch=64"])
    msg = str(err.value)
    assert "frames_per_batch" in msg and "Did you mean" in msg and "Valid keys" in msg


def test_loss_keys_checked_against_the_loss_signature():
    compose_run_config(["loss.clip_epsilon=0.1"])
    with pytest.raises(ConfigError, match="clip_epsilon"):
        compose_run_config(["algo=a2c", "loss.clip_epsilon=0.1"])


@pytest.mark.parametrize("override", ["collector.total_frames=-1", "algo=nope", "preset=nope", "nokeyvalue"])
def test_bad_values(override):
    with pytest.raises(ConfigError):
        compose_run_config([override])


def test_user_yaml(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "algo: ppo\nenv: {name: Acrobot-v1}\nnetwork: {num_cells: [32]}\ncollector: {frames_per_batch: 64, total_frames: 128}\n"
        "optim: {}\nloss: {}\ntrainer: {}\neval: {episodes: 1, max_steps: 10}\n"
    )
    cfg = compose_run_config(["seed=3"], config_path=tmp_path, config_name="mine")
    assert cfg.env.name == "Acrobot-v1" and cfg.seed == 3


def test_every_preset_validates():
    for name in list_presets():
        # The offline presets (cql_*, iql_*) name no dataset: the path is checked when the run is built.
        offline = ["dataset.path=runs/td3"] if name.split("_")[0] in ("cql", "iql") else []
        compose_run_config([f"preset={name}", *offline])


def test_deprecated_key_arguments_are_not_offered_as_loss_fields():
    from tdrl.trainers.algorithms.configs import loss_fields

    fields = loss_fields("ppo")
    assert "clip_epsilon" in fields
    assert not {"advantage_key", "value_target_key", "value_key"} & set(fields)


@pytest.mark.parametrize(("overrides", "message"), [
    (["env.num_envs=3"], r"collector.frames_per_batch \(256\) must be a multiple of env.num_envs \(3\)"),
    (["trainer.minibatch_size=300"], r"trainer.minibatch_size \(300\) must divide collector.frames_per_batch"),
    (["algo=dqn", "replay.buffer_size=8"], r"replay.buffer_size \(8\) must hold at least one sample"),
    (["loss.clip_epsilon=abc"], r"loss.clip_epsilon=abc: expected a float, got 'abc'"),
    (["loss.gamma=2"], r"loss.gamma must be in \[0, 1\]"),
    (["network.activation=sigmoid"], r"network.activation must be one of"),
    (["network.num_cells=[64,x]"], r"network.num_cells=\[64,x\]: expected an integer \(at network.num_cells\[1\]\), got 'x'"),
    (["seed=abc"], r"seed=abc: expected an integer \(or null\), got 'abc'"),
])
def test_values_are_typed_and_ranged(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose_run_config(overrides)


def test_derived_values_are_filled_and_recorded():
    cfg = compose_run_config(["collector.frames_per_batch=512"])
    assert cfg.trainer.minibatch_size == 256 and cfg.trainer.save_interval == 10240  # the preset's own
    cfg = compose_run_config(["algo=sac", "env=Pendulum-v1"])
    assert cfg.trainer.optim_steps_per_batch is not None and cfg.exploration.annealing_frames == 10_000
    assert cfg.replay.buffer_size > 0 and cfg.trainer.policy_update_delay is None
    assert compose_run_config(["algo=td3", "env=Pendulum-v1"]).trainer.policy_update_delay == 2


def test_a_config_yaml_from_main_composes(tmp_path):
    # run folders written before the structured schema hold the same keys, without the derived ones
    (tmp_path / "config.yaml").write_text(
        "algo: ppo\nseed: 0\nnum_threads: 1\nrun_dir: null\nenv: {name: CartPole-v1, num_envs: 2}\n"
        "network: {num_cells: [8], activation: tanh}\ncollector: {frames_per_batch: 64, total_frames: 128}\n"
        "optim: {lr: 0.001}\nloss: {gamma: 0.98}\ntrainer: {num_epochs: 2}\neval: {episodes: 1, max_steps: 10}\n"
        "logger: {tensorboard: false}\n")
    cfg = compose_run_config(config_path=tmp_path, config_name="config")
    assert cfg.trainer.minibatch_size == 64 and cfg.trainer.num_epochs == 2 and cfg.loss.gamma == 0.98
