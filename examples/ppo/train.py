"""PPO on CartPole-v1, top to bottom from tdrl parts: env, actor-critic, collector, GAE, buffer, loss, loop.

    python examples/ppo/train.py                      # 99,840 frames, seed 0 (see README.md)
    python examples/ppo/train.py --total-frames 2048  # smoke run

Hyperparameters: rl-zoo's CartPole PPO (8 envs x 32 steps, 20 epochs, gamma 0.98, lambda 0.8, lr 1e-3
annealed to 0, clip 0.2, 64x64 tanh MLPs), the same as ``tdrl train``'s default preset.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from tdrl.objectives import ClipPPOLoss
from tdrl.objectives.value import GAE
from tdrl.trainers.evaluation import Evaluator


@dataclass
class Args:
    env: str = "CartPole-v1"
    seed: int = 0
    total_frames: int = 99_840
    num_envs: int = 8
    frames_per_batch: int = 256  # 8 envs x 32 steps
    num_epochs: int = 20
    minibatch_size: int = 256
    lr: float = 1e-3
    gamma: float = 0.98
    lmbda: float = 0.8
    clip_epsilon: float = 0.2
    max_grad_norm: float = 0.5
    hidden: int = 64
    eval_episodes: int = 10
    out: str = ""  # write the final figures to this JSON file


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args()))


def make_env(args: Args, num_envs: int) -> TransformedEnv:
    # RewardSum writes ("next", "episode_reward"), the running return of each episode, for logging.
    base = GymEnv(args.env, num_envs=num_envs) if num_envs > 1 else GymEnv(args.env)
    return TransformedEnv(base, RewardSum())


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # networks this small: thread-pool overhead outweighs parallelism
    env = make_env(args, args.num_envs)
    env.set_seed(args.seed)
    n_obs, n_act = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]

    # Actor: logits -> one-hot categorical; critic: state value. Separate 64x64 tanh MLPs.
    logits = MLP(in_features=n_obs, out_features=n_act, num_cells=[args.hidden] * 2, activation_class=nn.Tanh)
    actor = ProbabilisticActor(TensorDictModule(logits, ["observation"], ["logits"]), in_keys=["logits"],
                               distribution_class=OneHotCategorical, spec=env.action_spec, return_log_prob=True)
    value = MLP(in_features=n_obs, out_features=1, num_cells=[args.hidden] * 2, activation_class=nn.Tanh)
    critic = ValueOperator(value, in_keys=["observation"])

    advantage = GAE(gamma=args.gamma, lmbda=args.lmbda, value_network=critic)
    loss_module = ClipPPOLoss(actor, critic, clip_epsilon=args.clip_epsilon, entropy_coeff=0.0,
                              loss_critic_type="l2", normalize_advantage=True)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr, fused=True)  # one kernel for all tensors
    n_batches = args.total_frames // args.frames_per_batch
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.0, total_iters=n_batches)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch, total_frames=args.total_frames)
    buffer = ReplayBuffer(storage=LazyTensorStorage(args.frames_per_batch), sampler=SamplerWithoutReplacement(),
                          batch_size=args.minibatch_size)

    frames, start, recent = 0, time.perf_counter(), []
    for i, batch in enumerate(collector):
        frames += batch.numel()
        done = batch["next", "done"].squeeze(-1)
        recent = (recent + batch["next", "episode_reward"][done].flatten().tolist())[-20:]
        with torch.no_grad():
            advantage(batch)  # writes "advantage" and "value_target" on the [envs, time] batch
        buffer.extend(batch.reshape(-1))
        for _ in range(args.num_epochs):
            for _ in range(args.frames_per_batch // args.minibatch_size):
                losses = loss_module(buffer.sample())
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                optimizer.step()
        scheduler.step()
        if recent and (i % 40 == 0 or frames >= args.total_frames):
            print(f"frames {frames:>7,}  training return (last 20 episodes) {sum(recent) / len(recent):6.1f}  "
                  f"{frames / (time.perf_counter() - start):5.0f} frames/s", flush=True)
    wall = time.perf_counter() - start
    collector.shutdown()

    eval_env = make_env(args, num_envs=args.eval_episodes)  # the episodes played side by side
    eval_env.set_seed(args.seed + 10_000)
    returns = Evaluator(eval_env, actor, max_steps=500).episode_returns(args.eval_episodes)
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {"algo": "ppo", **asdict(args), "frames": frames, "wall_time_s": round(wall, 1),
              "eval_return_mean": mean, "eval_return_std": std, "eval_episodes": len(returns)}
    print(f"RESULT ppo {args.env} seed {args.seed}: last policy {mean:.1f} +- {std:.1f} over {len(returns)} "
          f"deterministic episodes, {frames:,} frames in {wall:.0f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
