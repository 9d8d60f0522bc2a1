"""``tdrl export``: each format loads back without tdrl's classes and gives the actions of ``load_policy``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.cli import main
from tdrl.trainers.policy import load_policy
from tdrl.trainers.policy_export import export_run_policy
from tdrl.trainers.run import train_run

from ._runs import tdrl

pytestmark = pytest.mark.integration

_HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxscript"))


def _load_onnx(path):
    """An ONNX model as a numpy function: onnxruntime when installed, else onnx's reference evaluator."""
    import onnx

    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return lambda obs: torch.from_numpy(session.run(["action"], {"observation": obs.numpy()})[0])
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(str(path))
    return lambda obs: torch.from_numpy(np.asarray(evaluator.run(None, {"observation": obs.numpy()})[0]))


def _load(path, fmt):
    if fmt == "torchscript":
        return torch.jit.load(str(path))
    if fmt == "exported-program":
        return torch.export.load(str(path)).module()
    return _load_onnx(path)


_FORMATS = [
    "torchscript", "exported-program",
    pytest.param("onnx", marks=pytest.mark.skipif(not _HAS_ONNX, reason="ONNX export needs onnx and onnxscript "
                                                                        "(pip install 'tdrl[export]')")),
]


@pytest.mark.parametrize("fmt", _FORMATS)
def test_exported_discrete_policy_matches_load_policy(cartpole_run, tmp_path, fmt, capsys):
    out_file = tmp_path / f"policy.{fmt}"
    if fmt == "torchscript":  # the command end to end, in a subprocess
        out = tdrl("export", str(cartpole_run), "--format", fmt, "--out", str(out_file))
        assert out.returncode == 0, out.stderr[-2000:]
        stdout = out.stdout
    else:  # the same command in process: a Python start per format costs a minute on a loaded machine
        assert main(["export", str(cartpole_run), "--format", fmt, "--out", str(out_file)]) == 0
        stdout = capsys.readouterr().out
    assert f"wrote {out_file}" in stdout and out_file.stat().st_size > 0
    exported = _load(out_file, fmt)
    policy = load_policy(cartpole_run)
    for batch in (1, 5, 64):  # the batch dim is free
        obs = torch.randn(batch, 4) * 2
        expected = policy(obs)
        actions = exported(obs)
        assert actions.dtype == torch.int64 and actions.shape == (batch,)
        assert torch.equal(actions, expected)


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("pendulum") / "run"
    cfg = compose_run_config(["env=Pendulum-v1", "collector.frames_per_batch=128", "collector.total_frames=128",
                              "env.num_envs=1", "trainer.minibatch_size=64", "trainer.num_epochs=1",
                              "eval.episodes=1", "eval.max_steps=10", "eval.interval=0", "logger.tensorboard=false",
                              "trainer.progress_bar=false", f"run_dir={run_dir}"])
    train_run(cfg)
    return run_dir


@pytest.mark.parametrize("fmt", _FORMATS)
def test_exported_continuous_policy_matches_load_policy(pendulum_run, tmp_path, fmt):
    path = export_run_policy(pendulum_run, format=fmt, out=tmp_path / "p")
    exported = _load(path, fmt)
    policy = load_policy(pendulum_run)
    obs = torch.randn(16, 3)
    expected = policy(obs)
    assert expected.shape == (16, 1) and expected.abs().max() <= 2.0  # TanhNormal's mode within Pendulum's bounds
    torch.testing.assert_close(exported(obs), expected, rtol=1e-5, atol=1e-5)


def test_export_errors(cartpole_run, tmp_path):
    with pytest.raises(ValueError, match=r"unknown export format 'tflite'; expected one of"):
        export_run_policy(cartpole_run, format="tflite")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="no run folder at"):
        export_run_policy(tmp_path / "missing", format="torchscript")
