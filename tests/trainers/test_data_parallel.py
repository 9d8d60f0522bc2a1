"""Data-parallel learners (tdrl/trainers/data_parallel.py and run.train_data_parallel)."""

from __future__ import annotations

import json
import os

import pytest
import torch
from omegaconf import OmegaConf

from tdrl.trainers.algorithms.configs.presets import ConfigError, compose_run_config
from tdrl.trainers.builders import build_agent, build_env
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.data_parallel import (
    GradientAverager,
    broadcast_module,
    check_world_size,
    init_data_parallel,
    shard_run_config,
    torchrun_env,
)
from tdrl.trainers.hooks import OptimizerHook
from tdrl.trainers.run import data_parallel_world_size

from ._runs import tdrl

_STEPS = 3
_CLIP = 0.5  # clipping must see the averaged gradient (as with DDP), so it is on


def _dqn_parts(seed: int):
    cfg = compose_run_config(["algo=dqn", "network.num_cells=[16]"])
    env = build_env(cfg.env)
    torch.manual_seed(seed)
    loss = build_agent(cfg, env).loss
    return env, loss


def _fixed_batch():
    env, _ = _dqn_parts(0)
    env.set_seed(0)
    torch.manual_seed(0)
    batch = env.rollout(32, break_when_any_done=False).reshape(-1)
    env.close()
    return batch[:32]


def _step(loss, hook, batch):
    losses = loss(batch)
    hook(losses.select(*[k for k in losses.keys() if k.startswith("loss")]), True, _CLIP, 0)


def _params(loss):
    return torch.cat([p.detach().reshape(-1) for p in loss.parameters()])


def _rank(rank, world, init_method, batch, out_dir):
    init_data_parallel(rank, world, backend="gloo", init_method=init_method)
    try:
        env, loss = _dqn_parts(seed=100 + rank)  # different initial weights: the broadcast makes them rank 0's
        env.close()
        broadcast_module(loss)
        GradientAverager(loss)
        hook = OptimizerHook(torch.optim.Adam(loss.parameters(), lr=1e-2))
        share = batch.shape[0] // world
        for _ in range(_STEPS):
            _step(loss, hook, batch[rank * share:(rank + 1) * share])
            mine = _params(loss)
            every = [torch.empty_like(mine) for _ in range(world)]
            torch.distributed.all_gather(every, mine)
            assert all(torch.equal(every[0], other) for other in every[1:]), "ranks diverged"
        torch.save(_params(loss), os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        torch.distributed.destroy_process_group()


def test_two_ranks_match_one_process_on_the_doubled_batch(tmp_path):
    batch = _fixed_batch()
    init = (tmp_path / "store").as_uri()
    torch.multiprocessing.spawn(_rank, args=(2, init, batch, str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert torch.equal(ranks[0], ranks[1])
    env, loss = _dqn_parts(seed=100)  # rank 0's initial weights
    env.close()
    start = _params(loss).clone()
    hook = OptimizerHook(torch.optim.Adam(loss.parameters(), lr=1e-2))
    for _ in range(_STEPS):
        _step(loss, hook, batch)
    single = _params(loss)
    assert not torch.allclose(single, start)  # the steps moved the weights
    torch.testing.assert_close(ranks[0], single, rtol=1e-4, atol=1e-5)


def test_one_rank_group_leaves_gradients_alone(tmp_path):
    init_data_parallel(0, 1, backend="gloo", init_method=(tmp_path / "s").as_uri())
    try:
        net = torch.nn.Linear(3, 1)
        averager = GradientAverager(net)
        net(torch.ones(2, 3)).sum().backward()
        assert torch.equal(net.weight.grad, torch.full((1, 3), 2.0))
        averager.remove()
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_world_size(bad):
    with pytest.raises(ValueError, match="trainer.world_size must be an integer >= 1"):
        check_world_size(bad)


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_bad_world_size_in_config(bad):
    with pytest.raises(ConfigError, match="trainer.world_size must be >= 1"):
        compose_run_config([f"trainer.world_size={bad}"])


def test_nccl_needs_one_device_per_rank():
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match=f"one CUDA device per rank; {gpus} available"):
        check_world_size(gpus + 1, "nccl")


def test_no_torch_distributed(monkeypatch):
    monkeypatch.setattr(torch.distributed, "is_available", lambda: False)
    with pytest.raises(ImportError, match="needs torch.distributed"):
        check_world_size(2)
    assert check_world_size(1) == 1  # one process needs none


def test_torchrun_env_and_world_size_agreement(monkeypatch):
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    assert torchrun_env() is None
    assert data_parallel_world_size(compose_run_config(["trainer.world_size=3"])) == 3
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert torchrun_env() == {"rank": 0, "world_size": 2, "local_rank": 0}
    assert data_parallel_world_size(compose_run_config([])) == 2
    with pytest.raises(ValueError, match="trainer.world_size=3 but torchrun started WORLD_SIZE=2"):
        data_parallel_world_size(compose_run_config(["trainer.world_size=3"]))
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ValueError, match=r"RANK must be in \[0, WORLD_SIZE=2\)"):
        torchrun_env()


def test_shard_splits_global_sizes():
    cfg = compose_run_config(["algo=dqn", "collector.frames_per_batch=64", "replay.batch_size=32",
                              "replay.buffer_size=1000", "replay.init_random_frames=100", "seed=5"])
    shard = shard_run_config(cfg, 1, 2)
    assert (shard.collector.frames_per_batch, shard.replay.batch_size, shard.replay.buffer_size,
            shard.replay.init_random_frames, shard.seed) == (32, 16, 500, 50, 6)
    # gradient steps per batch stay the global count: every rank takes each of them, on its half of the sample
    assert shard.trainer.optim_steps_per_batch == cfg.trainer.optim_steps_per_batch
    assert shard.collector.total_frames * 2 == cfg.collector.total_frames
    assert cfg.collector.frames_per_batch == 64  # the global config is not changed
    with pytest.raises(ValueError, match=r"collector.frames_per_batch \(64\) must be a multiple of trainer.world_size"):
        shard_run_config(cfg, 0, 3)
    odd = compose_run_config(["algo=dqn", "collector.frames_per_batch=64", "replay.batch_size=33"])
    with pytest.raises(ValueError, match=r"replay.batch_size \(33\) must be a multiple of trainer.world_size \(2\)"):
        shard_run_config(odd, 0, 2)


_E2E = ["algo=ppo", "collector.frames_per_batch=128", "trainer.minibatch_size=64", "collector.total_frames=256",
        "trainer.num_epochs=1", "eval.episodes=1", "eval.max_steps=50", "logger.tensorboard=false",
        "trainer.world_size=2", "num_threads=1"]


@pytest.mark.integration
@pytest.mark.timeout(900)  # two launches of 2 processes each: ~40 s alone, minutes on a loaded 2-core machine
def test_tdrl_train_world_size_2_writes_one_folder_and_resumes(tmp_path):
    out = tdrl("train", *_E2E, "run_dir=run", "--no-progress", cwd=tmp_path, timeout=420)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "2 data-parallel learners, gloo" in out.stdout
    run = tmp_path / "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # rank 1 wrote nothing of its own
    assert {"config.yaml", "checkpoint.pt", "summary.json", "logs"} <= {p.name for p in run.iterdir()}
    assert json.loads((run / "summary.json").read_text())["frames"] == 256  # frames of both ranks
    assert load_checkpoint(run / "checkpoint.pt")["state"]["collected_frames"] == 256
    # one more global batch: resume spawns both ranks again, each loads checkpoint.pt
    cfg = OmegaConf.load(run / "config.yaml")
    cfg.collector.total_frames = 384
    OmegaConf.save(cfg, run / "config.yaml")
    out = tdrl("resume", str(run), "--no-progress", cwd=tmp_path, timeout=420)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming" in out.stdout and "at 256 frames (2 data-parallel learners)" in out.stdout
    assert json.loads((run / "summary.json").read_text())["frames"] == 384
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
