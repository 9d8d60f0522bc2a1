"""DDPG on Pendulum-v1, top to bottom from tdrl parts: env, tanh actor + Gaussian noise, Q-net, buffer, loss, loop.

    python examples/ddpg/train.py                      # 20,000 frames, seed 0 (see README.md)
    python examples/ddpg/train.py --total-frames 1400 --init-random-frames 1000   # smoke run

DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971): a deterministic actor trained through one
Q-network, both with soft-updated targets. One gradient step per frame after 1,000 random frames,
exploration noise of std 0.1, lr 1e-3, gamma 0.98 (rl-zoo's Pendulum settings), 256x256 networks: the
``ddpg_pendulum`` preset.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, AdditiveGaussianModule, TanhModule, ValueOperator
from tdrl.objectives import DDPGLoss, SoftUpdate
from tdrl.trainers.evaluation import Evaluator


@dataclass
class Args:
    env: str = "Pendulum-v1"
    seed: int = 0
    total_frames: int = 20_000
    frames_per_batch: int = 200
    init_random_frames: int = 1_000
    buffer_size: int = 100_000
    batch_size: int = 256
    lr: float = 1e-3
    gamma: float = 0.98
    tau: float = 0.005
    exploration_sigma: float = 0.1
    hidden: int = 256
    eval_episodes: int = 10
    out: str = ""  # write the final figures to this JSON file


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args()))


def make_env(args: Args, num_envs: int = 1) -> TransformedEnv:
    base = GymEnv(args.env, num_envs=num_envs) if num_envs > 1 else GymEnv(args.env)
    return TransformedEnv(base, RewardSum())  # ("next", "episode_reward") for logging


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env = make_env(args)
    env.set_seed(args.seed)
    spec = env.action_spec
    n_obs, n_act = env.observation_spec["observation"].shape[-1], spec.shape[-1]

    def mlp(n_in: int, n_out: int) -> MLP:
        return MLP(in_features=n_in, out_features=n_out, num_cells=[args.hidden] * 2, activation_class=nn.ReLU)

    # A deterministic actor squashed into the action bounds; the collector adds Gaussian noise to it.
    actor = TensorDictSequential(TensorDictModule(mlp(n_obs, n_act), ["observation"], ["param"]),
                                 TanhModule(["param"], ["action"], low=spec.space.low, high=spec.space.high))
    noise = AdditiveGaussianModule(spec, sigma_init=args.exploration_sigma, sigma_end=args.exploration_sigma)
    qvalue = ValueOperator(mlp(n_obs + n_act, 1), in_keys=["observation", "action"])
    loss_module = DDPGLoss(actor, qvalue, loss_function="l2")
    loss_module.make_value_estimator(gamma=args.gamma)
    target_updater = SoftUpdate(loss_module, tau=args.tau)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    collector = Collector(env, TensorDictSequential(actor, noise), frames_per_batch=args.frames_per_batch,
                          total_frames=args.total_frames, init_random_frames=args.init_random_frames)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(args.buffer_size), batch_size=args.batch_size)

    frames, start, recent, update_time = 0, time.perf_counter(), [], 0.0
    for batch in collector:
        frames += batch.numel()
        done = batch["next", "done"].squeeze(-1)
        recent = (recent + batch["next", "episode_reward"][done].flatten().tolist())[-5:]
        buffer.extend(batch.reshape(-1).select("observation", "action", ("next", "observation"),
                                               ("next", "reward"), ("next", "done"), ("next", "terminated")))
        if frames < args.init_random_frames:
            continue
        t0 = time.perf_counter()
        for _ in range(batch.numel()):
            losses = loss_module(buffer.sample())
            # The actor loss reads detached Q parameters: one backward through the sum trains each on its own.
            loss = losses["loss_actor"] + losses["loss_value"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            target_updater.step()
        update_time += time.perf_counter() - t0
        if recent and (frames % 2_000 == 0 or frames >= args.total_frames):
            print(f"frames {frames:>6,}  training return (last 5 episodes) {sum(recent) / len(recent):7.1f}  "
                  f"{frames / (time.perf_counter() - start):5.0f} frames/s", flush=True)
    wall = time.perf_counter() - start
    collector.shutdown()

    eval_env = make_env(args, num_envs=args.eval_episodes)
    eval_env.set_seed(args.seed + 10_000)
    returns = Evaluator(eval_env, actor, max_steps=200).episode_returns(args.eval_episodes)  # no noise
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {"algo": "ddpg", **asdict(args), "frames": frames, "wall_time_s": round(wall, 1),
              "update_time_s": round(update_time, 1), "eval_return_mean": mean, "eval_return_std": std,
              "eval_episodes": len(returns)}
    print(f"RESULT ddpg {args.env} seed {args.seed}: last policy {mean:.1f} +- {std:.1f} over {len(returns)} "
          f"deterministic episodes, {frames:,} frames in {wall:.0f} s ({update_time:.0f} s in updates)", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
