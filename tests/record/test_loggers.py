from __future__ import annotations

import json
import time

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


VIDEO = torch.arange(4 * 3 * 8 * 8, dtype=torch.int64).remainder(256).to(torch.uint8).view(4, 3, 8, 8)


def _tb_events(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path))
    acc.Reload()
    return acc


@pytest.mark.skipif(not tb_mod._HAS_TB, reason="tensorboard extra not installed")
def test_tensorboard_scalar_hparams_video_read_back(tmp_path):
    logger = TensorboardLogger("exp", log_dir=str(tmp_path))
    logger.log_scalar("r", 1.5, step=3)
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2}})
    logger.log_video("v", VIDEO, step=4)  # no moviepy needed: a GIF image summary
    logger.close()
    events = _tb_events(tmp_path / "exp")
    assert [(e.step, e.value) for e in events.Scalars("r")] == [(3, 1.5)]
    (image,) = events.Images("v")
    assert (image.step, image.width, image.height) == (4, 8, 8)
    assert image.encoded_image_string[:6] == b"GIF89a"
    (text,) = events.Tensors("hparams/text_summary")
    assert text.tensor_proto.string_val[0].decode() == "lr: 0.001\nnet.depth: 2"


@pytest.mark.skipif(not tb_mod._HAS_TB, reason="tensorboard extra not installed")
def test_tensorboard_resume_purges_events_after_the_saved_step(tmp_path):
    logger = TensorboardLogger("exp", log_dir=str(tmp_path))
    for step in (1, 2):
        logger.log_scalar("r", float(step), step=step)
    state = logger.state_dict()
    logger.log_scalar("r", 99.0, step=3)  # logged by a run killed before its next checkpoint
    logger.close()
    resumed = get_logger("tensorboard", str(tmp_path), "exp", state_dict=state)
    resumed.log_scalar("r", 3.0, step=3)
    resumed.close()
    assert [(e.step, e.value) for e in _tb_events(tmp_path / "exp").Scalars("r")] == [(1, 1.0), (2, 2.0), (3, 3.0)]


def _wandb_records(run_file):
    """(kind, {key: value}) of each history/config record of an offline ``.wandb`` file (LevelDB log format)."""
    import struct

    from wandb.proto import wandb_internal_pb2

    raw = run_file.read_bytes()
    assert raw[:4] == b":W&B"
    pos, block, chunk, out = 7, 32768, b"", []
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:  # block trailer
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        pos += 7
        chunk += raw[pos:pos + length]
        pos += length
        if kind in (1, 4):  # a full record, or the last piece of one
            rec = wandb_internal_pb2.Record()
            rec.ParseFromString(chunk)
            chunk = b""
            which = rec.WhichOneof("record_type")
            if which == "history":
                out.append(("history", {"/".join(i.nested_key) or i.key: json.loads(i.value_json)
                                        for i in rec.history.item}))
            elif which == "config":
                out.append(("config", {i.key: json.loads(i.value_json) for i in rec.config.update}))
    return out


@pytest.mark.skipif(not wandb_mod._HAS_WANDB, reason="wandb extra not installed")
def test_wandb_offline_scalar_hparams_video_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger("exp", offline=True, save_dir=str(tmp_path), project="tdrl-tests")
    logger.log_scalar("r", 1.5, step=3)
    logger.log_hparams({"lr": 1e-3, "net": {"depth": 2}})
    logger.log_video("v", VIDEO, step=4)
    assert logger.state_dict()["local"]["step"] == 4
    logger.close()
    (run_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    for _ in range(300):  # wandb's service process may still be writing the file when close() returns
        records = _wandb_records(run_file)
        history = [r for kind, r in records if kind == "history"]
        if len(history) >= 2:
            break
        time.sleep(0.1)
    assert {"r": 1.5, "trainer/step": 3}.items() <= history[0].items()
    assert history[1]["v/_type"] == "video-file" and history[1]["trainer/step"] == 4
    config = {k: v for kind, r in records if kind == "config" for k, v in r.items()}
    assert config["lr"] == 1e-3 and config["net"] == {"depth": 2}
    (gif,) = run_file.parent.glob("files/media/videos/v_*.gif")
    assert gif.read_bytes()[:6] == b"GIF89a"


def test_csv_checkpoint_state_does_not_grow_with_logged_points(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    logger.log_scalar("r", 0.0, step=0)
    small = len(repr(logger.state_dict()))
    for step in range(1, 2000):
        logger.log_scalar("r", float(step), step=step)
    state = logger.state_dict()
    assert len(repr(state)) <= small + 10  # only the counters' digits grow
    assert state["local"]["files"]["rows"] == {"r": 2000}


def test_csv_restore_truncates_rows_logged_after_the_state(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path))
    for step in range(3):
        logger.log_scalar("r", float(step), step=step)
    state = logger.state_dict()
    logger.log_scalar("r", 99.0, step=3)  # written by a run that is then killed before its next checkpoint
    logger.log_scalar("late", 1.0, step=3)  # a scalar first logged after the state
    resumed = get_logger("csv", str(tmp_path), "exp", state_dict=state)
    assert read_scalars(tmp_path / "exp") == {"r": [(0, 0.0), (1, 1.0), (2, 2.0)]}
    resumed.log_scalar("r", 3.0, step=3)
    resumed.log_scalar("r", 4.0)  # no step: continues the row count
    assert read_scalars(tmp_path / "exp")["r"] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]
    assert resumed.experiment.scalars["r"][-1] == (4, 4.0)


@pytest.mark.skipif(not wandb_mod._HAS_WANDB, reason="wandb extra not installed")
def test_wandb_two_loggers_in_one_process_write_their_own_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    first = WandbLogger("a", offline=True, save_dir=str(tmp_path / "a"), project="tdrl-tests")
    first.log_scalar("r", 1.0, step=1)  # left open, as a crashed or forgotten run would be
    second = WandbLogger("b", offline=True, save_dir=str(tmp_path / "b"), project="tdrl-tests")
    second.log_scalar("r", 2.0, step=1)
    second.close()
    assert list((tmp_path / "b" / "wandb").glob("offline-run-*/run-*.wandb"))
    first.close()


@pytest.mark.skipif(not wandb_mod._HAS_WANDB, reason="wandb extra not installed")
def test_wandb_mode_none_reads_wandb_mode_when_the_logger_is_built(tmp_path, monkeypatch):
    # wandb reads WANDB_MODE once per process; a logger built later must still honour the current value.
    monkeypatch.setenv("WANDB_MODE", "offline")
    logger = WandbLogger("x", save_dir=str(tmp_path), mode=None)
    assert logger._wandb_kwargs["mode"] == "offline"


def test_get_logger_csv_ignores_other_backends_kwargs(tmp_path):
    # TorchRL's sota scripts pass wandb_kwargs whatever the backend; TorchRL ignores them for CSV.
    logger = get_logger("csv", str(tmp_path), "exp", wandb_kwargs={"project": "p", "config": {}},
                        mlflow_kwargs={}, service_backend="direct")
    assert isinstance(logger, CSVLogger)
    assert logger.video_format == "mp4"  # TorchRL's get_logger("csv") default
    logger.log_scalar("r", 1.0, step=0)
    assert read_scalars(tmp_path / "exp") == {"r": [(0, 1.0)]}
    tb = get_logger("tensorboard", str(tmp_path), "tb", wandb_kwargs={"project": "p"})
    assert isinstance(tb, TensorboardLogger)


def test_csv_mp4_video_decodes_back(tmp_path):
    av = pytest.importorskip("av", reason="MP4 writing needs the video extra (PyAV)")
    logger = CSVLogger("exp", log_dir=str(tmp_path), video_format="mp4", video_fps=10)
    video = torch.rand(1, 4, 3, 9, 11)  # odd sizes get padded to even for yuv420p
    logger.log_video("eval/video", video, step=3, caption="ignored")
    path = tmp_path / "exp" / "videos" / "video_eval_video_3.mp4"
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        rate = container.streams.video[0].average_rate
    assert len(frames) == 4 and frames[0].shape == (10, 12, 3)
    assert rate == 10
    gray = CSVLogger("g", log_dir=str(tmp_path), video_format="mp4")
    gray.log_video("v", torch.zeros(2, 1, 4, 4, dtype=torch.uint8))
    assert (tmp_path / "g" / "videos" / "video_v_0.mp4").stat().st_size > 0
    with pytest.raises(ValueError, match="mp4"):
        CSVLogger("bad", log_dir=str(tmp_path), video_format="avi")


def test_csv_none_scalar_is_a_gap(tmp_path):
    # TorchRL's sota scripts log tqdm's rate, None before the bar's second update (TorchRL's CSVLogger raises).
    logger = CSVLogger("gap", log_dir=str(tmp_path))
    logger.log_scalar("time/speed", None, step=0)
    logger.log_scalar("time/speed", 2.5, step=1)
    assert logger.experiment.scalars["time/speed"] == [(1, 2.5)]
    assert (tmp_path / "gap" / "scalars" / "time" / "speed.csv").read_text() == "1,2.5\n"
