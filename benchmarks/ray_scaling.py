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
    """Gradient steps on the policy, sized to take about ``ms`` milliseconds per batch."""

    def __init__(self, policy: TensorDictModule, ms: float) -> None:
        self.policy = policy
        self.opt = torch.optim.SGD(policy.parameters(), lr=1e-6)  # tiny: actions stay well-behaved
        self.x = torch.randn(256, 2)
        self._one()  # first-call overheads out of the timing
        t0 = time.perf_counter()
        for _ in range(20):
            self._one()
        per_step = (time.perf_counter() - t0) / 20
        self.steps = max(1, round(ms / 1000 / per_step))

    def _one(self) -> None:
        loss = self.policy.module.mlp(self.x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def step(self) -> None:
        for _ in range(self.steps):
            self._one()


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
        learner.step()
        t2 = time.perf_counter()
        collector.update_policy_weights_(policy)
        learn, push = learn + t2 - t1, push + time.perf_counter() - t2
    wall = time.perf_counter() - t0
    return {"fps": frames / wall, "util": learn / wall, "push_ms": 1000 * push / batches}


def measure(args: argparse.Namespace) -> list[dict]:
    maker, rows = EnvMaker(args.step_ms), []
    policy = make_policy()
    learner = Learner(policy, args.learner_ms)
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
        f"{args.frames_per_batch} frames per actor per batch, learner ~{args.learner_ms} ms of gradient steps "
        f"per batch, weights pushed to every actor after each batch, {args.batches} batches after 2 warm-up ones.",
        "",
        "| setup | collectors | frames/s | x local | vs MultiSync | learner utilisation | weight push (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vs = f"{r['fps'] / multi[r['n']]:.2f}" if r["setup"] == "RayCollector" and r["n"] in multi else "-"
        lines.append(f"| {r['setup']} | {r['n']} | {r['fps']:,.0f} | {r['fps'] / local:.2f} | {vs} | "
                     f"{100 * r['util']:.0f}% | {r['push_ms']:.1f} |")
    ray1 = next(r for r in rows if r["setup"] == "RayCollector" and r["n"] == 1)
    ray_rows = [r for r in rows if r["setup"] == "RayCollector"]
    # One synchronous batch = the actors' collection (in parallel) + the learner's step + one push per actor;
    # the 1-actor row splits its batch time into these three parts.
    fpb = args.frames_per_batch
    t_batch1 = fpb / ray1["fps"]
    t_learn = ray1["util"] * t_batch1
    per_actor = fpb / (t_batch1 - t_learn - ray1["push_ms"] / 1000)
    push_per_actor = max(r["push_ms"] / r["n"] for r in ray_rows) / 1000
    lines += [
        "",
        f"Projection (from the 1-actor row: {per_actor:,.0f} frames/s of collection per actor, "
        f"{1000 * t_learn:.0f} ms learner step per batch, {1000 * push_per_actor:.1f} ms weight push per actor; "
        f"{args.per_machine} actors per machine, synchronous batches of {fpb} frames per actor). In sync mode "
        "nothing overlaps: a batch of A actors takes fpb / rate + learner step + A pushes; more actors add "
        "frames per batch but also pushes, so the learner's share grows until it is the bottleneck.",
        "",
        "| machines | actors | frames per batch | projected frames/s | learner share of a batch | bottleneck |",
        "|---|---|---|---|---|---|",
    ]
    for machines in (1, 2, 4, 8, 16, 32):
        actors = machines * args.per_machine
        t_batch = fpb / per_actor + t_learn + actors * push_per_actor
        fps = actors * fpb / t_batch
        share = (t_learn + actors * push_per_actor) / t_batch
        neck = "collection" if fpb / per_actor > t_learn + actors * push_per_actor else (
            "weight broadcast" if actors * push_per_actor > t_learn else "learner")
        lines.append(f"| {machines} | {actors} | {actors * fpb:,} | {fps:,.0f} | {100 * share:.0f}% | {neck} |")
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
