from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from tdrl.record import CSVLogger, TensorboardLogger, WandbLogger, get_logger, read_scalars
from tdrl.record.loggers import tensorboard as tb_mod
from tdrl.record.loggers import wandb as wandb_mod


def test_csv_scalars_round_trip(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    for step in range(3):
        logger.log_scalar("train/reward", step * 0.5, step=step * 10)
    logger.log_scalar("loss", 2.0)  # no step: counts calls
    logger.log_scalar("loss", 1.0)
    scalars = read_scalars(tmp_path / "exp")
    assert scalars["train/reward"] == [(0, 0.0), (10, 0.5), (20, 1.0)]
    assert scalars["loss"] == [(0, 2.0), (1, 1.0)]


def test_csv_log_metrics_and_hparams(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    logger.log_metrics({"a": 1.0, "b": 2.0}, step=5)
    logger.log_hparams(OmegaConf.create({"lr": 3e-4, "net": {"depth": 2}}))
    assert read_scalars(tmp_path / "exp") == {"a": [(5, 1.0)], "b": [(5, 2.0)]}
    assert json.loads((tmp_path / "exp" / "hparams.json").read_text()) == {"lr": 3e-4, "net": {"depth": 2}}


def test_csv_torn_last_line_is_skipped(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    logger.log_scalar("r", 1.0, step=1)
    path = tmp_path / "exp" / "scalars" / "r.csv"
    with path.open("a") as fd:
        fd.write("2,0.")  # a crash in the middle of a write leaves a partial line...
    with path.open("a") as fd:
        fd.write("garbage\n")
    assert read_scalars(tmp_path / "exp")["r"] == [(1, 1.0)]


def test_csv_state_dict_resume_keeps_counters_and_appends(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    logger.log_scalar("loss", 1.0)
    logger.log_str("note", "hello")
    state = logger.state_dict()
    logger.close()
    assert not logger.is_alive
    resumed = get_logger("csv", str(tmp_path), "ignored", state_dict=state)
    assert resumed.exp_name == "exp"
    resumed.log_scalar("loss", 0.5)  # continues at step 1, appends to the same file
    assert read_scalars(tmp_path / "exp")["loss"] == [(0, 1.0), (1, 0.5)]
    assert resumed.experiment.text_counter["note"] == 1


def test_csv_video_shape_is_checked_and_saved(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"\(T, C, H, W\).*got shape \(4, 8, 8\)"):
        logger.log_video("v", torch.zeros(4, 8, 8))
    logger.log_video("v", torch.zeros(4, 3, 8, 8, dtype=torch.uint8), step=2)
    saved = torch.load(tmp_path / "exp" / "videos" / "video_v_2.pt", weights_only=True)
    assert saved.shape == (4, 3, 8, 8)


def test_get_logger_rejects_unknown_type():
    with pytest.raises(ValueError, match="'csv', 'tensorboard', 'wandb'"):
        get_logger("mlfloww", "x", "y")


@pytest.mark.skipif(not tb_mod._HAS_TB, reason="tensorboard extra not installed")
def test_tensorboard_writes_event_files(tmp_path):
    logger = TensorboardLogger("exp", log_dir=str(tmp_path))
    logger.log_scalar("r", 1.0, step=0)
    logger.log_hparams({"lr": 1e-3})
    logger.close()
    assert any(p.name.startswith("events.out.tfevents") for p in Path(tmp_path, "exp").iterdir())


@pytest.mark.skipif(not wandb_mod._HAS_WANDB, reason="wandb extra not installed")
def test_wandb_offline_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")
    logger = WandbLogger("exp", offline=True, save_dir=str(tmp_path), project="tdrl-tests")
    logger.log_scalar("r", 1.0, step=3)
    logger.log_hparams({"lr": 1e-3})
    assert logger.state_dict()["local"]["step"] == 3
    logger.close()
    assert any((tmp_path / "wandb").iterdir())
