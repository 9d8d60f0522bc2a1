"""Ray collector scaling: frames/s and learner utilisation for 1, 2 and 4 collector actors on a local Ray.

The env's step sleeps ``--step-ms`` (a stand-in for a simulator step that costs >= 1 ms); the learner does
a fixed amount of gradient work per batch (``--learner-ms`` worth of MLP steps, measured first) and pushes
its weights to every actor after each batch. Baselines: one local ``Collector`` and a ``MultiSyncCollector``
with as many worker processes as actors. From the measured per-actor rate, learner step and weight
broadcast times, the script projects the throughput of N machines.

    python benchmarks/ray_scaling.py                                   # prints the tables
    python benchmarks/ray_scaling.py --write-doc docs/distributed.md   # writes them between the markers
        # <!-- interleave:ray-scaling --> ... <!-- /interleave:ray-scaling -->
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
from interleave import write_section
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector, MultiSyncCollector
from tdrl.collectors.distributed import RayCollector
from tdrl.envs import PendulumEnv


class SleepyPendulum(PendulumEnv):
    """A pendulum whose every step also sleeps ``step_ms`` (an expensive simulator, without using a core)."""

    def __init__(self, step_ms: float = 1.0) -> None:
        super().__init__()
        self.step_s = step_ms / 1000

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        time.sleep(self.step_s)
        return PendulumEnv._step(tensordict)


class EnvMaker:
    """A picklable env constructor (sent to worker processes and Ray actors)."""

    def __init__(self, step_ms: float) -> None:
        self.step_ms = step_ms

    def __call__(self) -> SleepyPendulum:
        return SleepyPendulum(self.step_ms)


class Net(torch.nn.Module):
    """An MLP from the pendulum's angle and angular speed to its torque."""

    def __init__(self) -> None:
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))

    def forward(self, th: torch.Tensor, thdot: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.stack([th, thdot], -1)).clamp(-2.0, 2.0)


def make_policy() -> TensorDictModule:
    torch.manual_seed(0)
    return TensorDictModule(Net(), in_keys=["th", "thdot"], out_keys=["action"])


class Learner:
    """A learner that spends ``ms`` milliseconds of gradient steps per ``frames`` collected frames.

    Time-based rather than a fixed number of steps: on a machine shared with other work the cost of one step
    varies several-fold, while a learner on its own device has a steady speed.
    """

    def __init__(self, policy: TensorDictModule, ms: float, frames: int) -> None:
        self.policy, self.frames, self.seconds = policy, frames, ms / 1000
        self.opt = torch.optim.SGD(policy.parameters(), lr=1e-6)  # tiny: actions stay well-behaved
        self.x = torch.randn(256, 2)

    def step(self, frames: int) -> None:
        deadline = time.perf_counter() + self.seconds * frames / self.frames
        while time.perf_counter() < deadline:
            loss = self.policy.module.mlp(self.x).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


def run(collector, policy, learner: Learner, batches: int, warmup: int = 2) -> dict[str, float]:
    """Frames/s and the fraction of wall time spent learning, after ``warmup`` batches."""
    it = iter(collector)
    for _ in range(warmup):
        next(it)
    frames, learn, push = 0, 0.0, 0.0
    t0 = time.perf_counter()
    for _ in range(batches):
        batch = next(it)
        frames += batch.numel()
        t1 = time.perf_counter()
        learner.step(batch.numel())
        t2 = time.perf_counter()
        collector.update_policy_weights_(policy)
        learn, push = learn + t2 - t1, push + time.perf_counter() - t2
    wall = time.perf_counter() - t0
    return {"fps": frames / wall, "util": learn / wall, "push_ms": 1000 * push / batches}


def measure(args: argparse.Namespace) -> list[dict]:
    maker, rows = EnvMaker(args.step_ms), []
    policy = make_policy()
    learner = Learner(policy, args.learner_ms, args.frames_per_batch)
    fpb = args.frames_per_batch
    c = Collector(maker(), policy, frames_per_batch=fpb)
    rows.append({"setup": "local Collector", "n": 1, **run(c, policy, learner, args.batches)})
    c.shutdown()
    init = {"num_cpus": max(args.actors), "include_dashboard": False, "log_to_driver": False}
    for n in args.actors:
        if n > 1:
            c = MultiSyncCollector([maker] * n, policy, frames_per_batch=fpb * n)
            rows.append({"setup": "MultiSyncCollector", "n": n, **run(c, policy, learner, args.batches)})
            c.shutdown()
        c = RayCollector(maker, policy, num_collectors=n, frames_per_batch=fpb * n, sync=True,
                         ray_init_config=init, remote_configs={"num_cpus": 1})
        rows.append({"setup": "RayCollector", "n": n, **run(c, policy, learner, args.batches)})
        c.shutdown()
    return rows


def tables(rows: list[dict], args: argparse.Namespace) -> str:
    local = rows[0]["fps"]
    multi = {r["n"]: r["fps"] for r in rows if r["setup"] == "MultiSyncCollector"}
    lines = [
        "Measured by `python benchmarks/ray_scaling.py` on this machine: "
        f"{os.cpu_count()} cores shared with other work, env step {args.step_ms} ms (sleep), "
        f"{args.frames_per_batch} frames per actor per batch, learner {args.learner_ms:.0f} ms of gradient "
        f"steps per {args.frames_per_batch} frames, weights pushed to every actor after each batch, {args.batches} batches after 2 warm-up ones.",
        "",
        "| setup | collectors | frames/s | x local | vs MultiSync | learner utilisation | weight push (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vs = f"{r['fps'] / multi[r['n']]:.2f}" if r["setup"] == "RayCollector" and r["n"] in multi else "-"
        lines.append(f"| {r['setup']} | {r['n']} | {r['fps']:,.0f} | {r['fps'] / local:.2f} | {vs} | "
                     f"{100 * r['util']:.1f}% | {r['push_ms']:.1f} |")
    ray1 = next(r for r in rows if r["setup"] == "RayCollector" and r["n"] == 1)
    ray_rows = [r for r in rows if r["setup"] == "RayCollector"]
    # Model of one synchronous batch of A actors x fpb frames: the actors collect in parallel (fpb / rate),
    # then the learner trains on all A x fpb frames (A x t_learn, its work grows with the data) and pushes the
    # weights once (t_push: one ray.put, every actor reads the same object; measured flat in A here).
    fpb = args.frames_per_batch
    t_batch1 = fpb / ray1["fps"]
    t_learn = ray1["util"] * t_batch1
    t_push = sum(r["push_ms"] for r in ray_rows) / len(ray_rows) / 1000
    rate = fpb / max(1e-9, t_batch1 - t_learn - ray1["push_ms"] / 1000)
    lines += [
        "",
        f"Projection from these numbers: {rate:,.0f} frames/s of collection per actor, {1000 * t_learn:.0f} ms of "
        f"learner work per {fpb} frames, {1000 * t_push:.0f} ms per weight push (mean of the Ray rows), "
        f"{args.per_machine} actors per machine, synchronous batches. A batch of A actors takes "
        "fpb / rate + A x learner work + one push, so frames/s approach fpb / learner work (the learner's own "
        "throughput) as machines are added.",
        "",
        "| machines | actors | frames per batch | projected frames/s | learner share of a batch | bottleneck |",
        "|---|---|---|---|---|---|",
    ]
    for machines in (1, 2, 4, 8, 16, 32):
        actors = machines * args.per_machine
        parts = {"collection": fpb / rate, "learner": actors * t_learn, "weight broadcast": t_push}
        t_batch = sum(parts.values())
        share = (parts["learner"] + parts["weight broadcast"]) / t_batch
        lines.append(f"| {machines} | {actors} | {actors * fpb:,} | {actors * fpb / t_batch:,.0f} | "
                     f"{100 * share:.0f}% | {max(parts, key=parts.__getitem__)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-ms", type=float, default=2.0, help="sleep per env step")
    parser.add_argument("--frames-per-batch", type=int, default=200, help="frames per actor per batch")
    parser.add_argument("--learner-ms", type=float, default=50.0, help="gradient work per batch")
    parser.add_argument("--batches", type=int, default=8, help="measured batches per setup")
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--per-machine", type=int, default=4, help="actors per machine in the projection")
    parser.add_argument("--write-doc", metavar="MD", help="write the tables into MD's ray-scaling section")
    args = parser.parse_args(argv)
    if 1 not in args.actors:
        parser.error("--actors must include 1 (the projection starts from it)")
    text = tables(measure(args), args)
    print(text)
    if args.write_doc:
        write_section(Path(args.write_doc), "ray-scaling", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
