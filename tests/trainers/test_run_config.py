"""Config composition and validation (no env is built)."""

from __future__ import annotations

import pytest

from tdrl.trainers.config import ConfigError, compose_config, list_presets


def test_default_is_ppo_cartpole():
    cfg = compose_config([])
    assert (cfg.algo, cfg.env.name) == ("ppo", "CartPole-v1")


def test_algo_and_env_pick_the_matching_preset():
    cfg = compose_config(["env=Pendulum-v1"])
    assert cfg.collector.frames_per_batch == 2048
    assert compose_config(["algo=a2c"]).trainer.num_epochs == 1


def test_typo_lists_valid_keys_and_suggests():
    with pytest.raises(ConfigError) as err:
        compose_config(["collector.frame_per_batch=64"])
    msg = str(err.value)
    assert "frames_per_batch" in msg and "Did you mean" in msg and "Valid keys" in msg


def test_loss_keys_checked_against_the_loss_signature():
    compose_config(["loss.clip_epsilon=0.1"])
    with pytest.raises(ConfigError, match="clip_epsilon"):
        compose_config(["algo=a2c", "loss.clip_epsilon=0.1"])


@pytest.mark.parametrize("override", ["collector.total_frames=-1", "algo=nope", "preset=nope", "nokeyvalue"])
def test_bad_values(override):
    with pytest.raises(ConfigError):
        compose_config([override])


def test_user_yaml(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "algo: ppo\nenv: {name: Acrobot-v1}\nnetwork: {num_cells: [32]}\ncollector: {frames_per_batch: 64, total_frames: 128}\n"
        "optim: {}\nloss: {}\ntrainer: {}\neval: {episodes: 1, max_steps: 10}\n"
    )
    cfg = compose_config(["seed=3"], config_path=tmp_path, config_name="mine")
    assert cfg.env.name == "Acrobot-v1" and cfg.seed == 3


def test_every_preset_validates():
    for name in list_presets():
        # The offline presets (cql_*, iql_*) name no dataset: the path is checked when the run is built.
        offline = ["dataset.path=runs/td3"] if name.split("_")[0] in ("cql", "iql") else []
        compose_config([f"preset={name}", *offline])


def test_deprecated_key_arguments_are_not_offered_as_loss_fields():
    from tdrl.trainers.builders import loss_fields

    fields = loss_fields("ppo")
    assert "clip_epsilon" in fields
    assert not {"advantage_key", "value_target_key", "value_key"} & set(fields)
