"""GPU checks that the CPU-only CI cannot run: losses under CUDA graphs, devices in collectors/buffers.

Run on a machine with a CUDA GPU (from the repository root)::

    PYTHONPATH=src python benchmarks/gpu/gpu_checks.py [--out DIR]

Each check prints one ``PASS``/``FAIL`` line; timings are printed as ``TIME`` lines (median of CUDA-synchronised
calls). The exit status is the number of failed checks. Written to run in a few minutes on one GPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "objectives"))
sys.path.insert(0, str(ROOT / "benchmarks"))

RESULTS: dict[str, object] = {}
FAILED: list[str] = []
# GPU_CHECK_DEVICE=cpu dry-runs the logic on a machine without a GPU.
DEV = torch.device(os.environ.get("GPU_CHECK_DEVICE", "cuda:0"))


def _sync() -> None:
    if DEV.type == "cuda":
        torch.cuda.synchronize()


def check(name: str) -> Callable[[Callable[[], object]], Callable[[], object]]:
    def deco(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> None:
            t0 = time.perf_counter()
            try:
                info = fn()
            except Exception as err:  # noqa: BLE001 - a report, every failure is printed
                FAILED.append(name)
                RESULTS[name] = {"ok": False, "error": repr(err)}
                print(f"FAIL {name}: {err!r}", flush=True)
                traceback.print_exc()
                return
            RESULTS[name] = {"ok": True, "info": info, "s": round(time.perf_counter() - t0, 1)}
            print(f"PASS {name} ({time.perf_counter() - t0:.1f} s) {info if info is not None else ''}", flush=True)

        run.__name__ = fn.__name__
        CHECKS.append(run)
        return run

    return deco


CHECKS: list[Callable[[], None]] = []


def _median_ms(fn: Callable[[], object], n: int = 30, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    _sync()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


@check("losses: eager / compile / reduce-overhead (CUDA graphs) match on CUDA, no cudagraph skips")
def losses_on_cuda() -> dict:
    from _cases import CASES, renamed  # tests/objectives/_cases.py
    from torch._dynamo.utils import counters

    torch._inductor.config.fallback_random = True
    report = {}
    bad = []
    only = os.environ.get("GPU_CHECK_CASES")
    for case in CASES:
        if only and case.name not in only.split(","):
            continue
        try:
            report[case.name] = _loss_case_on_cuda(case, renamed, counters, bad)
        except Exception as err:  # noqa: BLE001 - one broken case must not hide the others
            bad.append(f"{case.name}: {type(err).__name__}: {str(err).splitlines()[0]}")
            print(f"  {case.name}: {err!r}"[:2000], flush=True)
    if bad:
        raise AssertionError("; ".join(bad))
    return report


def _loss_case_on_cuda(case, renamed, counters, bad: list[str]) -> dict:
    loss = case.make().to(DEV)
    td = case.data()
    if case.rename:
        if hasattr(loss, "set_keys"):
            loss.set_keys(**case.rename)
        td = renamed(td, case.rename)
    td = td.to(DEV)
    twin, twin_ro = copy.deepcopy(loss), copy.deepcopy(loss)
    torch.manual_seed(3)
    eager = loss(td.clone())
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(twin, fullgraph=True)
    torch.manual_seed(3)
    out = compiled(td.clone())
    row = {}
    for key in eager.keys(True, True):  # leaves: composite losses nest per-head entries
        if not torch.allclose(eager[key].float(), out[key].float(), rtol=1e-3, atol=1e-4):
            bad.append(f"{case.name}:{key} compiled != eager")
    ro = torch.compile(twin_ro, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):
        ro(td.clone())
    skips = dict(counters["inductor"]).get("cudagraph_skips", 0)
    row["cudagraph_skips"] = skips
    if not case.stochastic and not case.name.startswith("klpen"):  # KL-penalty beta changes every call
        ro_out = ro(td.clone())
        for key in eager.keys():
            if isinstance(key, str) and key.startswith("loss") and not torch.allclose(eager[key].float(), ro_out[key].float(), rtol=1e-3,
                                                             atol=1e-4):
                bad.append(f"{case.name}:{key} reduce-overhead != eager")
    return row


@check("benchmark-size losses on CUDA: eager vs compile vs reduce-overhead forward (ms)")
def loss_timings() -> dict:
    import test_objectives_benchmarks as tob

    out = {}
    for name in os.environ.get("GPU_CHECK_LOSSES", "dqn,ppo,sac,td3,iql").split(","):
        try:
            loss, td = _bench_case(tob, name)
            out[name] = _time_modes(loss.to(DEV), td.to(DEV))
        except Exception as err:  # noqa: BLE001 - report and go on with the next loss
            out[name] = f"error: {type(err).__name__}: {str(err).splitlines()[0]}"
        print(f"TIME {name}: {out[name]}", flush=True)
    errors = [f"{k}: {v}" for k, v in out.items() if isinstance(v, str)]
    if errors:
        raise AssertionError("; ".join(errors))
    return out


def _time_modes(loss: torch.nn.Module, td) -> dict:
    row = {"eager": round(_median_ms(lambda: loss(td)), 3)}
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        fn = torch.compile(loss, fullgraph=True, mode=None if mode == "default" else mode)
        row[mode] = round(_median_ms(lambda fn=fn: fn(td)), 3)
    torch._dynamo.reset()
    bw = torch.compile(loss, fullgraph=True)

    def fwd_bwd() -> None:
        losses = bw(td)
        sum(v for k, v in losses.items() if k.startswith("loss")).backward()

    row["compile+backward"] = round(_median_ms(fwd_bwd), 3)
    return row


def _bench_case(tob, name: str):
    """The benchmark file's workload for ``name`` (its builders, without pytest-benchmark)."""
    captured = {}

    class _Grab:
        def __call__(self, fn, *args, **kwargs):
            captured["fn"], captured["args"] = fn, args

        def pedantic(self, fn, args=(), **kwargs):
            captured["fn"], captured["args"] = fn, args

    import unittest.mock as mock

    with mock.patch.object(tob, "_run_loss", lambda bench, loss, td, *a, **k: captured.update(loss=loss, td=td)):
        getattr(tob, f"test_{name}_speed")(_Grab(), None, False)
    return captured["loss"], captured["td"]


def _assert_acted_with(policy, batch) -> None:
    """The batch's actions are what ``policy`` outputs for its observations (the pushed weights were used)."""
    with torch.no_grad():
        want = policy(batch.select("observation").clone())["action"]
    torch.testing.assert_close(batch["action"], want, rtol=1e-4, atol=1e-4)


def _pendulum():
    from tdrl.envs import GymEnv

    return GymEnv("Pendulum-v1")


@check("collector: CPU env, CUDA policy; batches land on the storing device; weights pushed from a CUDA copy")
def collector_devices() -> dict:
    from tensordict.nn import TensorDictModule
    from torch import nn

    from tdrl.collectors import MultiSyncDataCollector, SyncDataCollector
    from tdrl.envs import GymEnv

    policy = TensorDictModule(nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)), ["observation"],
                              ["action"])
    trained = copy.deepcopy(policy).to(DEV)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(0.5)
    expected = copy.deepcopy(trained).to("cpu")
    coll = SyncDataCollector(GymEnv("Pendulum-v1"), copy.deepcopy(policy), frames_per_batch=64,
                             total_frames=256, policy_device=DEV, env_device="cpu", storing_device=DEV)
    batches = []
    for i, batch in enumerate(coll):
        assert batch.device == DEV, batch.device
        batches.append(batch)
        if i == 0:
            coll.update_policy_weights_(trained)
    coll.shutdown()
    _assert_acted_with(expected, batches[-1].to("cpu"))
    try:  # the comparison can fail: the first batch was collected with the old weights
        _assert_acted_with(expected, batches[0].to("cpu"))
    except AssertionError:
        pass
    else:
        raise AssertionError("the first batch matched the new weights: the check cannot tell")
    multi = MultiSyncDataCollector([_pendulum] * 2, copy.deepcopy(policy),
                                   frames_per_batch=64, total_frames=192, policy_device=DEV, env_device="cpu",
                                   storing_device="cpu")
    last = None
    for i, batch in enumerate(multi):
        assert batch.device == torch.device("cpu")
        if i == 0:
            multi.update_policy_weights_(trained)
        last = batch
    multi.shutdown()
    _assert_acted_with(expected, last)
    return {"sync_batches": len(batches)}


@check("replay buffers on CUDA: LazyTensorStorage + Prioritized/Slice samplers, update_priority")
def buffers_on_cuda() -> dict:
    from tensordict import TensorDict

    from tdrl.data import (
        LazyTensorStorage,
        PrioritizedSampler,
        ReplayBuffer,
        SliceSampler,
        TensorDictReplayBuffer,
    )

    n = 1_000_000
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(n, device=DEV),
                                sampler=PrioritizedSampler(n, alpha=0.7, beta=0.5), batch_size=256)
    data = TensorDict({"obs": torch.randn(n, 8), "reward": torch.randn(n, 1)}, [n])
    rb.extend(data)
    sample = rb.sample()
    assert sample["obs"].device == DEV and sample["index"].shape == (256,)

    def step() -> None:
        s = rb.sample()
        s.set("td_error", s["reward"].abs().squeeze(-1) + 0.1)
        rb.update_tensordict_priority(s)

    t = _median_ms(step)
    print(f"TIME prioritized 1M on CUDA: sample(256)+update_priority {t:.3f} ms", flush=True)
    traj = torch.arange(1000).repeat_interleave(100)
    slice_rb = ReplayBuffer(storage=LazyTensorStorage(100_000, device=DEV),
                            sampler=SliceSampler(slice_len=10, traj_key="traj"), batch_size=320)
    slice_rb.extend(TensorDict({"obs": torch.randn(100_000, 4), "traj": traj}, [100_000]))
    s = slice_rb.sample()
    assert s["obs"].device == DEV and s.shape == (320,)
    assert (s["traj"].view(32, 10) == s["traj"].view(32, 10)[:, :1]).all(), "slice crosses trajectories"
    return {"prb_ms": round(t, 3)}


@check("value estimators on CUDA: vec GAE / TD(lambda) == loop forms, compiled GAE == eager")
def values_on_cuda() -> dict:
    from tdrl.objectives.value.functional import (
        generalized_advantage_estimate,
        td_lambda_return_estimate,
        vec_generalized_advantage_estimate,
        vec_td_lambda_return_estimate,
    )

    b, t = 64, 200
    reward, value, next_value = (torch.randn(b, t, 1, device=DEV) for _ in range(3))
    done = torch.rand(b, t, 1, device=DEV) < 0.02
    term = done & (torch.rand(b, t, 1, device=DEV) < 0.5)
    adv, ret = generalized_advantage_estimate(0.99, 0.95, value, next_value, reward, done=done, terminated=term)
    vadv, vret = vec_generalized_advantage_estimate(0.99, 0.95, value, next_value, reward, done=done,
                                                    terminated=term)
    torch.testing.assert_close(adv, vadv, rtol=1e-4, atol=1e-4)
    lam = td_lambda_return_estimate(0.99, 0.9, next_value, reward, done=done, terminated=term)
    vlam = vec_td_lambda_return_estimate(0.99, 0.9, next_value, reward, done=done, terminated=term)
    torch.testing.assert_close(lam, vlam, rtol=1e-4, atol=1e-4)
    fn = torch.compile(vec_generalized_advantage_estimate, fullgraph=True)
    cadv, _ = fn(0.99, 0.95, value, next_value, reward, done=done, terminated=term)
    torch.testing.assert_close(cadv, vadv, rtol=1e-4, atol=1e-4)
    return {"gae_vec_ms": round(_median_ms(lambda: vec_generalized_advantage_estimate(
        0.99, 0.95, value, next_value, reward, done=done, terminated=term)), 3)}


@check("specs on CUDA: rand/zero/is_in/project/to(device) for every leaf spec")
def specs_on_cuda() -> dict:
    from tdrl.data import (
        Binary,
        Bounded,
        Categorical,
        Composite,
        MultiCategorical,
        MultiOneHot,
        OneHot,
        Unbounded,
    )

    specs = Composite(
        a=Bounded(-1, 1, (3,), device=DEV), b=Unbounded((2,), device=DEV), c=Categorical(4, device=DEV),
        d=OneHot(5, device=DEV), e=MultiOneHot([2, 3], device=DEV), f=MultiCategorical([2, 3], device=DEV),
        g=Binary(4, device=DEV), shape=(), device=DEV,
    )
    sample = specs.rand()
    assert sample.device == DEV and specs.is_in(sample)
    assert specs.zero().device == DEV
    cpu = specs.to("cpu")
    assert cpu.device == torch.device("cpu") and cpu.rand().device == torch.device("cpu")
    proj = specs["a"].project(torch.full((3,), 5.0, device=DEV))
    assert proj.device == DEV and (proj <= 1).all()
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("-k", default=None, help="run only checks whose function name contains this")
    args = parser.parse_args()
    assert DEV.type != "cuda" or torch.cuda.is_available(), "no CUDA device"
    name = torch.cuda.get_device_name() if DEV.type == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {name}", flush=True)
    for run in CHECKS:
        if args.k is None or args.k in run.__name__:
            run()
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "gpu_checks.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    print(f"{len(FAILED)} failed: {FAILED}", flush=True)
    return len(FAILED)


if __name__ == "__main__":
    raise SystemExit(main())
