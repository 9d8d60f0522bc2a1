"""What the three implementations of the loop benchmark share: hyperparameters, the phase timer, the result line.

Standard library only, so that the tdrl venv, the TorchRL anchor venv and the Stable-Baselines3 venv can all
import it. A run prints one ``LOOP_RESULT {json}`` line that ``run.py`` collects.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class PPOCartPole:
    """rl-zoo's CartPole-v1 PPO: 8 envs x 32 steps, 20 epochs of one 256-sample minibatch."""

    env: str = "CartPole-v1"
    total_frames: int = 99_840  # 390 batches of 256, as the default `tdrl train` preset
    num_envs: int = 8
    frames_per_batch: int = 256
    num_epochs: int = 20
    minibatch_size: int = 256
    lr: float = 1e-3  # annealed linearly to 0 over the run
    gamma: float = 0.98
    lmbda: float = 0.8
    clip_epsilon: float = 0.2
    critic_coef: float = 0.5  # SB3's vf_coef
    max_grad_norm: float = 0.5
    hidden: int = 64  # two tanh layers, separate actor and critic networks
    eval_episodes: int = 10
    fused_adam: bool = True  # torch.optim.Adam(fused=True) in all three implementations (one kernel per step)


@dataclass(frozen=True)
class SACPendulum:
    """SAC on Pendulum-v1: one env, one gradient step of a 256-sample batch per frame, 256x256 ReLU MLPs."""

    env: str = "Pendulum-v1"
    total_frames: int = 20_000
    init_random_frames: int = 1_000  # uniform random actions before the first update (SB3's learning_starts)
    batch_size: int = 256
    buffer_size: int = 100_000
    lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    hidden: int = 256
    eval_episodes: int = 10


WORKLOADS: dict[str, type] = {"ppo_cartpole": PPOCartPole, "sac_pendulum": SACPendulum}
PHASES = ("env", "policy", "advantage", "update", "other")


def workload(name: str, overrides: dict[str, Any] | None = None) -> Any:
    """The hyperparameters of ``name`` with ``overrides`` (e.g. a smaller ``total_frames`` for a smoke run)."""
    if name not in WORKLOADS:
        raise SystemExit(f"unknown workload {name!r}; expected one of {sorted(WORKLOADS)}")
    hp = WORKLOADS[name]()
    known = {f.name: f.type for f in fields(hp)}
    bad = sorted(set(overrides or {}) - set(known))
    if bad:
        raise SystemExit(f"unknown {name} hyperparameters {bad}; expected some of {sorted(known)}")
    return replace(hp, **{k: _parse(type(getattr(hp, k)), v) for k, v in (overrides or {}).items()})


def _parse(kind: type, value: Any) -> Any:
    if kind is bool and isinstance(value, str):
        if value.lower() not in ("0", "1", "true", "false"):
            raise SystemExit(f"a boolean hyperparameter takes 0/1/true/false, got {value!r}")
        return value.lower() in ("1", "true")
    return kind(value)


def parse_overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"override {item!r} must read KEY=VALUE")
        out[key] = value
    return out


class PhaseTimer:
    """Wall-clock per phase. ``collect`` covers env + policy; the policy's own share is timed by hooks
    that count only while collecting (the loss calls the same module during updates)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(("collect", "policy", "advantage", "update"), 0.0)
        self.collecting = False
        self._policy_start = 0.0
        self._start = time.perf_counter()

    @contextmanager
    def phase(self, name: str):
        t0, outer = time.perf_counter(), self.collecting
        self.collecting = name == "collect"
        try:
            yield
        finally:
            self.collecting = outer  # phases nest (SB3 computes advantages inside its rollout collection)
            self.seconds[name] += time.perf_counter() - t0

    def watch_policy(self, module: Any) -> None:
        """Times ``module``'s forward calls made while collecting (works on any ``torch.nn.Module``)."""

        def before(*_: Any) -> None:
            if self.collecting:
                self._policy_start = time.perf_counter()

        def after(*_: Any) -> None:
            if self.collecting:
                self.seconds["policy"] += time.perf_counter() - self._policy_start

        module.register_forward_pre_hook(before)
        module.register_forward_hook(after)

    def split(self, *, advantage_inside_collect: bool = False) -> dict[str, float]:
        total = time.perf_counter() - self._start
        s = dict(self.seconds)
        if advantage_inside_collect:
            s["collect"] -= s["advantage"]
        env = s["collect"] - s["policy"]
        other = total - s["collect"] - s["advantage"] - s["update"]
        return {"total": total, "env": env, "policy": s["policy"], "advantage": s["advantage"],
                "update": s["update"], "other": other}


def emit(*, impl: str, name: str, hp: Any, frames: int, split: dict[str, float], returns: list[float],
         versions: dict[str, str]) -> None:
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    # CPU seconds of the process as well: on a shared machine they move less with other jobs than wall-clock.
    result = {"impl": impl, "workload": name, "hp": asdict(hp), "frames": frames, "seconds": split,
              "cpu_seconds": time.process_time(),
              "frames_per_s": frames / split["total"], "eval_return_mean": mean, "eval_return_std": std,
              "eval_episodes": len(returns), "versions": versions}
    print("LOOP_RESULT " + json.dumps(result), flush=True)
