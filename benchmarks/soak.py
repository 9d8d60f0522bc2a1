"""Soak run: collect and train continuously, recording memory, open files and throughput every 10 s.

The workload exercises every long-lived part at once: a ``MultiSyncCollector`` with two worker processes (gymnasium ``Pendulum-v1``)
(shared-memory batches, weight updates after every optimizer step), a ``ReplayBuffer`` that fills and then
wraps around, GAE, ``ClipPPOLoss`` forward/backward and Adam. Each ``--interval`` seconds a CSV row records
the parent's RSS, the workers' RSS, the parent's open file descriptors (``/proc/self/fd``), the number of
child processes and the frames per second over the interval. A leak shows up as a column that keeps
growing; :func:`verdict` compares the last third of the run with the first third.

Usage::

    # the documented 30-minute soak (docs/reliability.md)
    OMP_NUM_THREADS=1 python benchmarks/soak.py --minutes 30 --out soak.csv
    # what CI runs (tests/reliability/test_soak.py, marked slow): 2.5 minutes
    OMP_NUM_THREADS=1 python benchmarks/soak.py --minutes 2.5 --out soak-ci.csv

The script exits non-zero when :func:`verdict` finds a problem. ``--check soak.csv`` prints the verdict of an
existing CSV (a run cut short still has every row it wrote).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor
from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq
from tensordict.nn import TensorDictModule as Mod

from tdrl.collectors import MultiSyncCollector
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import GymEnv
from tdrl.modules import TanhNormal
from tdrl.objectives import ClipPPOLoss

FIELDS = ["elapsed_s", "iterations", "frames", "frames_per_s", "rss_mb", "workers_rss_mb", "open_fds", "children"]

# Tolerances of :func:`verdict`, last third of the samples vs first third (the first sample is warm-up).
RSS_GROWTH = 1.10  # +10%: allocator and glibc arenas wobble by a few MB; a leak grows without bound
RSS_SLACK_MB = 20.0  # ... and never flag less than 20 MB on a ~300 MB process
THROUGHPUT_FLOOR = 0.5  # the machine is shared: halving is load; a collapse is worse than that


def _rss_mb(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _children() -> list[int]:
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _env() -> GymEnv:
    return GymEnv("Pendulum-v1")


def _policy() -> ProbSeq:
    return ProbSeq(
        Mod(torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2)),
            ["observation"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal,
                return_log_prob=True),
    )


def _build() -> tuple[MultiSyncCollector, ReplayBuffer, ClipPPOLoss, torch.optim.Optimizer]:
    torch.manual_seed(0)
    policy = _policy()
    critic = Mod(torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)),
                 ["observation"], ["state_value"])
    collector = MultiSyncCollector([_env, _env], policy, frames_per_batch=200, total_frames=-1)
    buffer = ReplayBuffer(storage=LazyTensorStorage(5_000), batch_size=256)
    loss = ClipPPOLoss(policy, critic)
    loss.make_value_estimator(gamma=0.99, lmbda=0.95)
    optim = torch.optim.Adam(loss.parameters(), lr=3e-4)
    return collector, buffer, loss, optim


def _train_step(batch: TensorDict, buffer: ReplayBuffer, loss: ClipPPOLoss, optim: torch.optim.Optimizer) -> None:
    with torch.no_grad():
        loss.value_estimator(batch)
    buffer.extend(batch.reshape(-1))
    sample = buffer.sample()
    out = loss(sample)
    total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
    optim.zero_grad()
    total.backward()
    optim.step()


def run(minutes: float, interval: float, out: Path) -> list[dict]:
    """Runs the workload for ``minutes``, writing a row every ``interval`` seconds to ``out``; returns the rows."""
    collector, buffer, loss, optim = _build()
    rows: list[dict] = []
    t0 = last = time.monotonic()
    frames = frames_at_last = iterations = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        try:
            for batch in collector:
                _train_step(batch, buffer, loss, optim)
                collector.update_policy_weights_()
                frames += batch.numel()
                iterations += 1
                now = time.monotonic()
                if now - last >= interval:
                    workers = collector.worker_pids
                    row = {
                        "elapsed_s": round(now - t0, 1), "iterations": iterations, "frames": frames,
                        "frames_per_s": round((frames - frames_at_last) / (now - last), 1),
                        "rss_mb": round(_rss_mb(), 1),
                        "workers_rss_mb": round(sum(_rss_mb(p) for p in workers), 1),
                        "open_fds": _open_fds(), "children": len(_children()),
                    }
                    writer.writerow(row)
                    f.flush()
                    rows.append(row)
                    last, frames_at_last = now, frames
                if now - t0 >= minutes * 60:
                    break
        finally:
            collector.shutdown()
    return rows


def verdict(rows: list[dict]) -> dict:
    """Compares the last third of the samples with the first third (after one warm-up sample).

    Returns a dict of the compared medians/maxima and a list of ``problems`` (empty when flat):

    * parent and worker RSS: last-third median <= first-third median * 1.10 (+ 20 MB slack);
    * open fds and children: last-third max <= first-third max (exactly flat: any growth is a leak);
    * throughput: last-third median >= half the first-third median.

    Examples:
        >>> rows = [{"rss_mb": 300 + 10 * i, "workers_rss_mb": 400, "open_fds": 20, "children": 2,
        ...          "frames_per_s": 1000} for i in range(10)]
        >>> verdict(rows)["problems"]
        ['rss_mb grew from 320.0 to 380.0 MB']
    """
    samples = rows[1:]
    if len(samples) < 3:
        return {"problems": [f"only {len(samples)} samples after warm-up: run longer"]}
    third = max(1, len(samples) // 3)
    first, last = samples[:third], samples[-third:]
    result: dict = {"samples": len(samples), "problems": []}
    for col in ("rss_mb", "workers_rss_mb"):
        a, b = statistics.median(r[col] for r in first), statistics.median(r[col] for r in last)
        result[col] = (a, b)
        if b > max(a * RSS_GROWTH, a + RSS_SLACK_MB):
            result["problems"].append(f"{col} grew from {a:.1f} to {b:.1f} MB")
    for col in ("open_fds", "children"):
        a, b = max(r[col] for r in first), max(r[col] for r in last)
        result[col] = (a, b)
        if b > a:
            result["problems"].append(f"{col} grew from {a} to {b}")
    a = statistics.median(r["frames_per_s"] for r in first)
    b = statistics.median(r["frames_per_s"] for r in last)
    result["frames_per_s"] = (a, b)
    if b < THROUGHPUT_FLOOR * a:
        result["problems"].append(f"throughput fell from {a:.0f} to {b:.0f} frames/s")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between two CSV rows")
    parser.add_argument("--out", type=Path, default=Path("soak.csv"))
    parser.add_argument("--check", type=Path, default=None, help="only print the verdict of an existing CSV")
    args = parser.parse_args(argv)
    if args.check is not None:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(args.check.open())]
    else:
        rows = run(args.minutes, args.interval, args.out)
    result = verdict(rows)
    print(json.dumps(result))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
