"""DQN on CartPole-v1, top to bottom from tdrl parts: env, Q-network, epsilon-greedy, collector, buffer, loss, loop.

    python examples/dqn/train.py                      # 99,840 frames, seed 0 (see README.md)
    python examples/dqn/train.py --total-frames 2048  # smoke run

Hyperparameters: rl-zoo's CartPole DQN (256x256 ReLU, batch 64, 128 gradient steps per 256 frames, epsilon
1.0 -> 0.04 over the first 16% of training), with double DQN, lr 5e-4 and soft target updates (tau 0.01): the ``dqn_cartpole`` preset.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields

import torch
from tensordict.nn import TensorDictSequential
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, EGreedyModule, QValueActor
from tdrl.objectives import DQNLoss, SoftUpdate
from tdrl.trainers.evaluation import Evaluator


@dataclass
class Args:
    env: str = "CartPole-v1"
    seed: int = 0
    total_frames: int = 99_840
    num_envs: int = 8
    frames_per_batch: int = 256
    gradient_steps: int = 128  # per collected batch
    init_random_frames: int = 1024
    buffer_size: int = 100_000
    batch_size: int = 64
    lr: float = 5e-4
    gamma: float = 0.99
    tau: float = 0.01
    eps_end: float = 0.04
    exploration_fraction: float = 0.16
    max_grad_norm: float = 10.0
    hidden: int = 256
    eval_episodes: int = 10
    out: str = ""  # write the final figures to this JSON file


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args()))


def make_env(args: Args, num_envs: int) -> TransformedEnv:
    base = GymEnv(args.env, num_envs=num_envs) if num_envs > 1 else GymEnv(args.env)
    return TransformedEnv(base, RewardSum())  # ("next", "episode_reward") for logging


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env = make_env(args, args.num_envs)
    env.set_seed(args.seed)
    n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.space.n

    qnet = QValueActor(MLP(in_features=n_obs, out_features=n_act, num_cells=[args.hidden] * 2,
                           activation_class=nn.ReLU), in_keys=["observation"], spec=env.action_spec)
    greedy = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=args.eps_end,
                           annealing_num_steps=int(args.exploration_fraction * args.total_frames))
    loss_module = DQNLoss(qnet, action_space=env.action_spec, delay_value=True, double_dqn=True,
                          loss_function="smooth_l1")
    loss_module.make_value_estimator(gamma=args.gamma)
    target_updater = SoftUpdate(loss_module, tau=args.tau)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    # The collector acts with random actions for the first init_random_frames, then epsilon-greedily.
    collector = Collector(env, TensorDictSequential(qnet, greedy), frames_per_batch=args.frames_per_batch,
                          total_frames=args.total_frames, init_random_frames=args.init_random_frames)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(args.buffer_size), batch_size=args.batch_size)

    frames, start, recent = 0, time.perf_counter(), []
    for i, batch in enumerate(collector):
        frames += batch.numel()
        done = batch["next", "done"].squeeze(-1)
        recent = (recent + batch["next", "episode_reward"][done].flatten().tolist())[-20:]
        # Only what a transition needs: the policy's action values are recomputed from the stored state.
        buffer.extend(batch.reshape(-1).exclude("action_value", "chosen_action_value"))
        greedy.step(batch.numel())
        if frames < args.init_random_frames:
            continue
        for _ in range(args.gradient_steps):
            loss = loss_module(buffer.sample())["loss"]
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
            optimizer.step()
            target_updater.step()
        if recent and (i % 40 == 0 or frames >= args.total_frames):
            print(f"frames {frames:>7,}  training return (last 20 episodes) {sum(recent) / len(recent):6.1f}  "
                  f"epsilon {float(greedy.eps):.2f}  {frames / (time.perf_counter() - start):5.0f} frames/s", flush=True)
    wall = time.perf_counter() - start
    collector.shutdown()

    eval_env = make_env(args, num_envs=args.eval_episodes)
    eval_env.set_seed(args.seed + 10_000)
    returns = Evaluator(eval_env, qnet, max_steps=500).episode_returns(args.eval_episodes)  # greedy actions
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {"algo": "dqn", **asdict(args), "frames": frames, "wall_time_s": round(wall, 1),
              "eval_return_mean": mean, "eval_return_std": std, "eval_episodes": len(returns)}
    print(f"RESULT dqn {args.env} seed {args.seed}: last policy {mean:.1f} +- {std:.1f} over {len(returns)} "
          f"deterministic episodes, {frames:,} frames in {wall:.0f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
