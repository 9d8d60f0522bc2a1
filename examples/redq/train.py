"""REDQ on Pendulum-v1, top to bottom from tdrl parts: env, TanhNormal actor, 10 Q-nets, collector, buffer, loss, loop.

    python examples/redq/train.py                      # 10,000 frames, seed 0 (see README.md)
    python examples/redq/train.py --total-frames 1200 --init-random-frames 1000   # smoke run

REDQ (Chen et al. 2021, https://arxiv.org/abs/2101.05982): SAC with an ensemble of 10 Q-networks whose
target takes the minimum of 2 sampled members, so that many gradient steps per frame (``--utd-ratio``) stay
unbiased. Batch 256, lr 3e-4, tau 0.005, 128x128 networks.
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
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import REDQLoss, SoftUpdate
from tdrl.trainers.evaluation import Evaluator


@dataclass
class Args:
    env: str = "Pendulum-v1"
    seed: int = 0
    total_frames: int = 10_000
    frames_per_batch: int = 200
    utd_ratio: float = 1.0  # gradient steps per collected frame (the paper: 20)
    num_qvalue_nets: int = 10
    sub_sample_len: int = 2
    init_random_frames: int = 1_000
    buffer_size: int = 100_000
    batch_size: int = 256
    lr: float = 3e-4
    gamma: float = 0.99
    tau: float = 0.005
    hidden: int = 128
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

    # The actor outputs (loc, scale) of a Normal squashed by tanh into the action bounds.
    actor = ProbabilisticActor(
        TensorDictModule(nn.Sequential(mlp(n_obs, 2 * n_act), NormalParamExtractor()), ["observation"],
                         ["loc", "scale"]),
        in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=spec, return_log_prob=True,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high})
    qvalue = ValueOperator(mlp(n_obs + n_act, 1), in_keys=["observation", "action"])  # REDQLoss makes the ensemble
    loss_module = REDQLoss(actor, qvalue, num_qvalue_nets=args.num_qvalue_nets, sub_sample_len=args.sub_sample_len,
                           action_spec=spec, loss_function="l2")
    loss_module.make_value_estimator(gamma=args.gamma)
    target_updater = SoftUpdate(loss_module, tau=args.tau)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch, total_frames=args.total_frames,
                          init_random_frames=args.init_random_frames)
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
        for _ in range(int(args.utd_ratio * batch.numel())):
            losses = loss_module(buffer.sample())
            loss = losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_alpha"]
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
    returns = Evaluator(eval_env, actor, max_steps=200).episode_returns(args.eval_episodes)  # the tanh(mean)
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {"algo": "redq", **asdict(args), "frames": frames, "wall_time_s": round(wall, 1),
              "update_time_s": round(update_time, 1), "eval_return_mean": mean, "eval_return_std": std,
              "eval_episodes": len(returns)}
    print(f"RESULT redq {args.env} seed {args.seed}: last policy {mean:.1f} +- {std:.1f} over {len(returns)} "
          f"deterministic episodes, {frames:,} frames in {wall:.0f} s ({update_time:.0f} s in updates)", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
