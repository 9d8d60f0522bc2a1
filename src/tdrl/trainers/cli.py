"""The ``tdrl`` command.

``tdrl train [KEY=VALUE ...]`` trains from a built-in preset (default: PPO on CartPole-v1) or a user YAML,
``tdrl resume RUN_DIR`` continues a run from its last checkpoint, ``tdrl eval RUN_DIR`` measures the
deterministic policy, ``tdrl plot RUN_DIR...`` overlays learning curves, and ``tdrl rollout`` runs random
episodes in an environment and prints what it saw (a quick check that an env works, and how fast it steps).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from tdrl import __version__
from tdrl.envs import DMControlEnv, EnvBase, GymEnv, PendulumEnv, check_env_specs
from tdrl.record import plot_runs
from tdrl.trainers import cli_compare, cli_enjoy, cli_export
from tdrl.trainers.algorithms.configs import describe
from tdrl.trainers.algorithms.configs.llm import compose_grpo_config, train_grpo
from tdrl.trainers.run import PLOT_KEYS, build_run, evaluate_run, resume_run, train_built_run
from tdrl.trainers.run_parts import compose_run

__all__ = ["main", "make_env_from_name"]


def make_env_from_name(name: str, *, num_envs: int = 1) -> EnvBase:
    """Builds an env from a short name.

    ``pendulum`` is tdrl's pure-torch ``PendulumEnv``; ``dmc:DOMAIN/TASK`` (e.g. ``dmc:cheetah/run``) is a
    dm_control task; anything else is a gymnasium id (``CartPole-v1``).
    """
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


def _print_summary(summary: dict) -> None:
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(summary["time_per_phase_s"].items(), key=lambda kv: -kv[1]))
    unit = "gradient steps" if summary.get("offline") else "frames"
    print(
        f"done: {summary['algo']} on {summary['env']}, {summary['frames']} {unit} in {summary['wall_time_s']:.1f}s "
        f"({summary['frames_per_s']:,.0f} {unit}/s)\n"
        f"eval return: {summary['eval_return_mean']:.1f} +- {summary['eval_return_std']:.1f} "
        f"over {summary['eval_episodes']} episodes (deterministic); best training return: "
        f"{summary['best_train_return']}\ntime per phase: {phases}",
        flush=True,
    )


def _train(args: argparse.Namespace) -> int:
    if getattr(args, "seeds", None) is not None:  # one run per seed, then a comparison (cli_compare.py)
        return cli_compare.train_seeds_command(args, _train)
    if "algo=grpo" in args.overrides or "preset=grpo_sums" in args.overrides:  # the LLM stack: its own config
        return _train_grpo(args)
    # One path for both formats: compose + validate (nothing is built or written before this passes),
    # build, then the run folder (config, logs, checkpoints, summary, plot).
    cfg = compose_run(args.overrides, config_path=args.config_path, config_name=args.config_name)
    progress = False if args.no_progress else None
    run = build_run(cfg, progress_bar=progress)
    print(f"run folder: {run.run_dir}", flush=True)
    summary = train_built_run(run, cfg)
    frames = summary["frames"]
    print(f"done: {type(run.trainer).__name__}, {frames} frames in {summary['wall_time_s']:.1f}s")
    _print_summary(summary)
    return 0


def _train_grpo(args: argparse.Namespace) -> int:
    """``tdrl train algo=grpo ...``: the built-in GRPO task (``trainers/algorithms/configs/llm.py``)."""
    preset = Path(args.config_path) / f"{args.config_name or 'config'}.yaml" if args.config_path else None
    s = train_grpo(compose_grpo_config(args.overrides, preset=preset))
    print(f"done: GRPO on sums, {int(s['iterations'])} iterations in {s['wall_time_s']:.1f}s; mean reward first "
          f"{int(s['k'])} iterations {s['first']:.3f} -> last {int(s['k'])} {s['last']:.3f}")
    return 0


def _resume(args: argparse.Namespace) -> int:
    summary = resume_run(args.run_dir, progress_bar=False if args.no_progress else None)
    _print_summary(summary)
    return 0


def _eval(args: argparse.Namespace) -> int:
    mean, std, returns = evaluate_run(args.run_dir, episodes=args.episodes, policy=args.policy)
    print(f"eval {args.run_dir} ({args.policy} policy): mean return {mean:.2f} +- {std:.2f} over {len(returns)} episodes (deterministic)")
    if args.json:
        print(json.dumps({"mean": mean, "std": std, "returns": returns}))
    return 0


def _plot(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(args.run_dirs[0]) / "learning_curve.png"
    # Without --key: the episode return, else (no RewardSum in the env, or an offline run) the first scalar
    # that every run folder has, as the run's own learning_curve.png does.
    keys = [args.key] if args.key else list(PLOT_KEYS)
    for i, key in enumerate(keys):
        try:
            plot_runs(args.run_dirs, out=out, key=key)
            break
        except ValueError:
            if i == len(keys) - 1:
                raise
    print(f"wrote {out}")
    return 0


def _add_run_commands(sub: argparse._SubParsersAction) -> None:
    tr = sub.add_parser(
        "train", help="train from a preset (default: PPO on CartPole-v1) with KEY=VALUE overrides",
        description="Train an agent. With no argument: PPO on CartPole-v1 until solved.",
        epilog=describe(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                    help="e.g. algo=a2c env=CartPole-v1 collector.total_frames=50000 run_dir=runs/x preset=ppo_pendulum")
    tr.add_argument("--config-path", default=None, help="folder of a user YAML config")
    tr.add_argument("--config-name", default=None, help="name of the YAML (without .yaml) in --config-path")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar")
    cli_compare.add_train_arguments(tr)
    tr.set_defaults(func=_train)
    rs = sub.add_parser("resume", help="continue a run from its last checkpoint")
    rs.add_argument("run_dir")
    rs.add_argument("--no-progress", action="store_true", help="no progress bar")
    rs.set_defaults(func=_resume)
    ev = sub.add_parser("eval", help="evaluate a run's policy deterministically")
    ev.add_argument("run_dir")
    ev.add_argument("--episodes", type=int, default=10)
    ev.add_argument("--json", action="store_true", help="also print the returns as JSON")
    ev.add_argument("--policy", choices=("best", "last"), default="best",
                    help="best evaluated policy (best.pt, when the run kept one) or the last checkpoint")
    ev.set_defaults(func=_eval)
    pl = sub.add_parser("plot", help="overlay the learning curves of runs in one PNG")
    pl.add_argument("run_dirs", nargs="+")
    pl.add_argument("--out", default=None, help="PNG path (default: RUN_DIR/learning_curve.png)")
    pl.add_argument("--key", default=None, help="scalar to draw (default: r_episode, else r_training, else "
                                                "r_eval_periodic)")
    pl.set_defaults(func=_plot)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tdrl", description="tdrl: fast, TensorDict-native RL with TorchRL's API")
    parser.add_argument("--version", action="version", version=f"tdrl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    ro = sub.add_parser("rollout", help="run random actions in an env and report what it saw and how fast")
    ro.add_argument("--env", default="Pendulum-v1", help="gymnasium id, 'pendulum' (pure torch) or dmc:DOMAIN/TASK")
    ro.add_argument("--steps", type=int, default=1000, help="steps per env (default 1000)")
    ro.add_argument("--num-envs", type=int, default=1, help="vectorised copies of the env (default 1)")
    ro.add_argument("--seed", type=int, default=0)
    ro.add_argument("--check", action="store_true", help="run check_env_specs first")
    ro.set_defaults(func=_rollout)
    _add_run_commands(sub)
    for command in (cli_enjoy, cli_export, cli_compare):  # each module: its parser and a lazily importing command
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tdrl`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, ImportError, KeyError, FileNotFoundError) as err:
        print(f"tdrl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
