"""MLFlowLogger against a local ``file://`` tracking store (no server): scalars, metrics, hyper-parameters,
videos, histograms, resuming from a state_dict, and get_logger("mlflow", ...)."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("mlflow", reason="MLFlowLogger needs the mlflow extra (pip install 'tdrl[mlflow]')")

from tdrl.record import MLFlowLogger  # noqa: E402
from tdrl.record.loggers import get_logger  # noqa: E402


def _history(logger: MLFlowLogger, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in logger.client.get_metric_history(logger.run_id, key)]


def test_logs_scalars_params_and_artifacts(tmp_path: pathlib.Path) -> None:
    logger = MLFlowLogger("exp", tracking_uri=tmp_path.as_uri(), tags={"team": "rl"})
    logger.log_scalar("loss", 0.5, step=1)
    logger.log_scalar("loss", 0.25, step=2)
    out = logger.log_metrics(TensorDict({"a": {"b": torch.tensor(1.5)}}, []), step=3)
    assert out == {"a/b": 1.5}
    logger.log_hparams({"lr": 0.001, "batch": 32})
    logger.log_video("rollout", torch.randint(0, 255, (4, 3, 8, 8), dtype=torch.uint8), step=5)
    logger.log_histogram("weights", torch.arange(10.0), step=2, bins=5)
    assert _history(logger, "loss") == [(1, 0.5), (2, 0.25)]
    assert _history(logger, "a/b") == [(3, 1.5)]
    run = logger.client.get_run(logger.run_id)
    assert run.data.params == {"lr": "0.001", "batch": "32"}
    assert logger.client.get_experiment(logger.id).tags["team"] == "rl"
    files = {a.path for folder in ("videos", "histograms") for a in logger.client.list_artifacts(logger.run_id, folder)}
    assert files == {"videos/rollout_step_0005.gif", "histograms/weights_step_0002.json"}
    local = logger.client.download_artifacts(logger.run_id, "histograms/weights_step_0002.json", str(tmp_path / "dl"))
    assert json.loads(pathlib.Path(local).read_text())["counts"] == [2.0] * 5
    with pytest.raises(ValueError, match="'m' must be a scalar"):
        logger.log_metrics({"m": torch.ones(2)})
    logger.close()
    logger.close()
    assert logger.client.get_run(logger.run_id).info.status == "FINISHED"


def test_state_dict_continues_the_run(tmp_path: pathlib.Path) -> None:
    first = MLFlowLogger("exp", tracking_uri=tmp_path.as_uri())
    first.log_scalar("x", 1.0, step=0)
    state = first.state_dict()
    first.close()
    second = get_logger("mlflow", str(tmp_path), "exp", state_dict=state)
    second.log_scalar("x", 2.0, step=1)
    assert second.run_id == first.run_id and _history(second, "x") == [(0, 1.0), (1, 2.0)]


def test_get_logger_builds_a_file_store_logger(tmp_path: pathlib.Path) -> None:
    logger = get_logger("mlflow", str(tmp_path / "mlruns"), "exp", mlflow_kwargs={"run_name": "r1"})
    assert isinstance(logger, MLFlowLogger)
    assert logger.tracking_uri == (tmp_path / "mlruns").as_uri()
    assert logger.client.get_run(logger.run_id).info.run_name == "r1"
    with pytest.raises(TypeError, match="unexpected keyword"):
        MLFlowLogger("exp", tracking_uri=tmp_path.as_uri(), bogus=1)
