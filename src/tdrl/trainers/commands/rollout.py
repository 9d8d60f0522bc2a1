"""``tdrl rollout``: random actions in an env, what it saw and how fast it stepped (does an env work?)."""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["make_env_from_name", "register"]


def make_env_from_name(name: str, *, num_envs: int = 1) -> Any:
    """Builds an env from a short name.

    ``pendulum`` is tdrl's pure-torch ``PendulumEnv``; ``dmc:DOMAIN/TASK`` (e.g. ``dmc:cheetah/run``) is a
    dm_control task; anything else is a gymnasium id (``CartPole-v1``).

    Examples:
        >>> make_env_from_name("pendulum", num_envs=2).batch_size
        torch.Size([2])
    """
    # tdrl.envs (torch) loads when an env is built, not when `tdrl --help` parses its arguments
    from tdrl.envs import DMControlEnv, GymEnv, PendulumEnv

    if name == "pendulum":
        return PendulumEnv(batch_size=[num_envs] if num_envs > 1 else [])
    if name.startswith("dmc:"):
        domain, _, task = name[4:].partition("/")
        if not task:
            raise ValueError(f"dm_control envs are named 'dmc:DOMAIN/TASK' (e.g. dmc:cheetah/run), got {name!r}")
        return DMControlEnv(domain, task)
    if num_envs > 1:
        return GymEnv(name, num_envs=num_envs)
    return GymEnv(name)


def _rollout(args: argparse.Namespace) -> int:
    import torch

    from tdrl.envs import check_env_specs

    env = make_env_from_name(args.env, num_envs=args.num_envs)
    torch.manual_seed(args.seed)
    env.set_seed(args.seed)
    if args.check:
        check_env_specs(env)
        print(f"check_env_specs({args.env}): ok")
    env.rollout(3)  # warm-up
    t0 = time.perf_counter()
    data = env.rollout(args.steps, break_when_any_done=False)
    elapsed = time.perf_counter() - t0
    reward = data["next", "reward"]
    done = data["next", "done"]
    frames = data.numel()
    print(f"env: {args.env}  batch_size: {list(env.batch_size)}")
    print(f"action_spec: {type(env.action_spec).__name__}{tuple(env.action_spec.shape)}")
    print(f"observation keys: {sorted(str(k) for k in env.observation_spec.keys(True, True))}")
    print(f"frames: {frames}  episodes ended: {int(done.sum())}  mean reward per step: {reward.float().mean():.4f}")
    print(f"time: {elapsed * 1000:.1f} ms  ({frames / elapsed:,.0f} frames/s)")
    env.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``tdrl rollout``."""
    ro = sub.add_parser("rollout", help="run random actions in an env and report what it saw and how fast",
                        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ro.add_argument("--env", default="Pendulum-v1", help="gymnasium id, 'pendulum' (pure torch) or dmc:DOMAIN/TASK")
    ro.add_argument("--steps", type=int, default=1000, help="steps per env")
    ro.add_argument("--num-envs", type=int, default=1, help="vectorised copies of the env")
    ro.add_argument("--seed", type=int, default=0, help="seed of torch and the env")
    ro.add_argument("--check", action="store_true", help="run check_env_specs first")
    ro.set_defaults(func=_rollout)
