"""Trainer loop, hook points and checkpoint round trips on a tiny fake collector."""

from __future__ import annotations

import importlib
import types

import pytest
import torch
from tensordict import TensorDict

from tdrl._utils import timeit
from tdrl.trainers import (
    BatchSubSampler,
    CountFramesLog,
    EarlyStopping,
    LogScalar,
    LRSchedulerHook,
    Trainer,
)
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.trainer import HOOK_DESTINATIONS


class _Collector:
    init_random_frames = 0

    def __init__(self, n_batches: int = 4) -> None:
        self.n_batches = n_batches
        self.shut = False

    def __iter__(self):
        for i in range(self.n_batches):
            yield TensorDict({"x": torch.full((2, 3, 1), float(i)), "next": {"reward": torch.ones(2, 3, 1)}}, [2, 3])

    def set_seed(self, seed, static_seed=False):
        return seed

    def shutdown(self):
        self.shut = True


def _trainer(tmp_path=None, **kwargs):
    w = torch.nn.Parameter(torch.zeros(1))
    module = torch.nn.Module()
    module.w = w

    def loss(td):
        return TensorDict({"loss_a": ((td["x"] - w) ** 2).mean()}, [])

    kwargs.setdefault("optim_steps_per_batch", 2)
    trainer = Trainer(
        collector=_Collector(), total_frames=24, frame_skip=1, loss_module=loss,
        optimizer=torch.optim.SGD([w], lr=0.1), progress_bar=False,
        save_trainer_file=None if tmp_path is None else tmp_path / "ckpt.pt", save_trainer_interval=6, **kwargs,
    )
    return trainer, w


def test_hook_order_and_counts():
    trainer, _ = _trainer(num_epochs=2)
    calls = []
    for dest in ("batch_process", "pre_epoch", "process_optim_batch", "post_loss"):
        trainer.register_op(dest, lambda b, d=dest: calls.append(d))
    for dest in ("pre_optim_steps", "post_optim", "post_steps", "post_epoch", "setup", "shutdown"):
        trainer.register_op(dest, lambda d=dest: calls.append(d))
    trainer.train()
    assert calls[0] == "setup" and calls[-1] == "shutdown"
    first = calls[1: calls.index("post_steps") + 1]
    assert first[:3] == ["batch_process", "pre_optim_steps", "pre_epoch"]
    assert first.count("process_optim_batch") == 4 and first.count("post_optim") == 4
    assert first.count("post_epoch") == 2
    assert trainer._optim_count == 4 * 4 and trainer.collected_frames == 24
    assert trainer.collector.shut


def test_register_op_rejects_unknown_destination():
    trainer, _ = _trainer()
    with pytest.raises(RuntimeError, match="not recognised"):
        trainer.register_op("post_batch", lambda b: b)
    assert len(HOOK_DESTINATIONS) == 18


def test_logging_hooks_reach_log_dict_and_pbar_values():
    trainer, _ = _trainer()
    LogScalar(("next", "reward"), "r_training", log_pbar=True).register(trainer)
    CountFramesLog(frame_skip=1).register(trainer)
    trainer.train()
    assert trainer._log_dict["r_training"] == [1.0] * 4
    assert trainer._log_dict["n_frames"] == [6, 12, 18, 24]
    assert "loss_a" in trainer._log_dict and "grad_norm_0" in trainer._log_dict


def test_checkpoint_round_trip_restores_weights_counters_and_hooks(tmp_path):
    trainer, w = _trainer(tmp_path)
    sched = torch.optim.lr_scheduler.StepLR(trainer.optimizer, step_size=1, gamma=0.5)
    LRSchedulerHook(sched).register(trainer)
    trainer.train()
    state = load_checkpoint(tmp_path / "ckpt.pt")
    assert state["state"]["collected_frames"] == 24
    other, w2 = _trainer(tmp_path)
    LRSchedulerHook(torch.optim.lr_scheduler.StepLR(other.optimizer, step_size=1, gamma=0.5)).register(other)
    other.load_from_file(tmp_path / "ckpt.pt")
    assert other.collected_frames == 24 and other._optim_count == trainer._optim_count
    assert other.optimizer.param_groups[0]["lr"] == trainer.optimizer.param_groups[0]["lr"] == 0.1 * 0.5**4
    # the loss here is a closure, so weights travel through hooks: the optimizer state is restored
    assert (tmp_path / "ckpt.pt.prev").exists()
    del w, w2


def test_load_refuses_checkpoint_missing_a_registered_module(tmp_path):
    trainer, _ = _trainer(tmp_path)
    trainer.train()
    other, _ = _trainer(tmp_path)
    CountFramesLog(frame_skip=1).register(other)
    with pytest.raises(KeyError, match="count_frames_log"):
        other.load_from_file(tmp_path / "ckpt.pt")


def test_early_stopping_requests_stop():
    trainer, _ = _trainer()
    LogScalar(("next", "reward"), "r_training").register(trainer)
    EarlyStopping(monitor="r_training", patience=6, wait_for=0).register(trainer)
    trainer.train()
    assert trainer._stop_training and trainer.collected_frames == 12


def test_batch_subsampler_returns_contiguous_windows():
    td = TensorDict({"t": torch.arange(40).view(4, 10)}, [4, 10])
    out = BatchSubSampler(batch_size=12, sub_traj_len=4)(td)
    assert out.shape == (3, 4)
    assert ((out["t"][:, 1:] - out["t"][:, :-1]) == 1).all()


def test_timings_are_logged_and_printed(capsys):
    timeit.erase()
    trainer, _ = _trainer(log_timings=True, timing_print_interval=12)
    trainer.train()
    assert any(k.startswith("time/trainer/collect") for k in trainer._log_dict)
    printed = capsys.readouterr().out
    assert printed.count("time: ") == 2 and "collect" in printed and "optim" in printed


def test_unsupported_torchrl_options_are_refused():
    with pytest.raises(ValueError, match="save_trainer_file"):
        _trainer(checkpoint=object())
    with pytest.raises(ValueError, match="learner_backend"):
        _trainer(learner_backend="ray")


def test_phase_times_are_exclusive_and_carried_by_checkpoints(tmp_path, monkeypatch):
    now = [0.0]
    module = importlib.import_module("tdrl._utils.timeit")  # the package re-exports the class under that name
    monkeypatch.setattr(module, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    timeit.erase()
    trainer, _ = _trainer(tmp_path)

    def evaluate(batch):  # an evaluation run by a logging hook counts as eval, not log
        with timeit("trainer/eval", exclusive=True):
            now[0] += 5.0

    def log_step(sub_batch):  # logging inside the optimisation loop counts as log, not optim
        now[0] += 1.0

    trainer.register_op("post_steps_log", evaluate)
    trainer.register_op("post_optim_log", log_step)
    trainer.train()
    totals = {k: v for k, v in timeit.todict(percall=False).items() if k.startswith("trainer/")}
    assert totals == {"trainer/collect": 0.0, "trainer/optim": 0.0, "trainer/log": 8.0, "trainer/eval": 20.0,
                      "trainer/checkpoint": 0.0}
    saved = load_checkpoint(tmp_path / "ckpt.pt")["timings"]
    assert saved["trainer/eval"] == [20.0, 4.0] and saved["trainer/log"][0] == 8.0
    timeit.erase()
    resumed, _ = _trainer()
    resumed.load_from_file(tmp_path / "ckpt.pt")
    assert timeit.todict(percall=False)["trainer/eval"] == 20.0
    timeit.erase()
