"""The loop benchmark with Stable-Baselines3: the same hyperparameters as ``rl_api.py`` (``common.py``).

Runs in a venv with stable-baselines3 (``run.py --sb3-python``, or ``run.py --make-sb3-venv DIR`` to build
one with this machine's CPU torch). Prints one ``LOOP_RESULT`` line.

    python benchmarks/loop/sb3.py ppo_cartpole [--seed 0] [--set total_frames=2048]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import stable_baselines3
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PhaseTimer, emit, parse_overrides, workload  # noqa: E402 - the sibling module


def _timed(timer: PhaseTimer, phase: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with timer.phase(phase):
            return fn(*args, **kwargs)
    return wrapper


def ppo(hp: Any, seed: int) -> tuple[Any, PhaseTimer, int]:
    env = make_vec_env(hp.env, n_envs=hp.num_envs, seed=seed)
    model = PPO(
        "MlpPolicy", env, n_steps=hp.frames_per_batch // hp.num_envs, batch_size=hp.minibatch_size,
        n_epochs=hp.num_epochs, gamma=hp.gamma, gae_lambda=hp.lmbda, learning_rate=lambda left: hp.lr * left,
        clip_range=hp.clip_epsilon, ent_coef=0.0, vf_coef=hp.critic_coef, max_grad_norm=hp.max_grad_norm,
        policy_kwargs={"net_arch": {"pi": [hp.hidden] * 2, "vf": [hp.hidden] * 2}, "activation_fn": nn.Tanh,
                       # SB3's own Adam eps for PPO (its default when no optimizer_kwargs are given), plus fused
                       "optimizer_kwargs": {"eps": 1e-5, **({"fused": True} if hp.fused_adam else {})}},
        seed=seed, device="cpu", verbose=0,
    )
    timer = PhaseTimer()
    timer.watch_policy(model.policy)
    model.collect_rollouts = _timed(timer, "collect", model.collect_rollouts)
    model.train = _timed(timer, "update", model.train)
    buf = model.rollout_buffer
    buf.compute_returns_and_advantage = _timed(timer, "advantage", buf.compute_returns_and_advantage)
    model.learn(total_timesteps=hp.total_frames)
    return model, timer, model.num_timesteps


def sac(hp: Any, seed: int) -> tuple[Any, PhaseTimer, int]:
    env = make_vec_env(hp.env, n_envs=1, seed=seed)
    model = SAC(
        "MlpPolicy", env, learning_rate=hp.lr, buffer_size=hp.buffer_size, learning_starts=hp.init_random_frames,
        batch_size=hp.batch_size, tau=hp.tau, gamma=hp.gamma, train_freq=1, gradient_steps=1,
        policy_kwargs={"net_arch": [hp.hidden] * 2}, seed=seed, device="cpu", verbose=0,
    )
    timer = PhaseTimer()
    timer.watch_policy(model.actor)
    model.collect_rollouts = _timed(timer, "collect", model.collect_rollouts)
    model.train = _timed(timer, "update", model.train)
    model.learn(total_timesteps=hp.total_frames)
    return model, timer, model.num_timesteps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["ppo_cartpole", "sac_pendulum"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a hyperparameter")
    args = parser.parse_args(argv)
    hp = workload(args.workload, parse_overrides(args.set))
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model, timer, frames = (ppo if args.workload == "ppo_cartpole" else sac)(hp, args.seed)
    split = timer.split(advantage_inside_collect=True)
    eval_env = make_vec_env(hp.env, n_envs=1, seed=args.seed + 10_000)
    returns, _ = evaluate_policy(model, eval_env, n_eval_episodes=hp.eval_episodes, deterministic=True,
                                 return_episode_rewards=True)
    emit(impl="sb3", name=args.workload, hp=hp, frames=frames, split=split, returns=[float(r) for r in returns],
         versions={"stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__})
    return 0


if __name__ == "__main__":
    sys.exit(main())
