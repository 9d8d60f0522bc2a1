"""Offline CQL on Pendulum-v1, top to bottom from tdrl parts: a dataset, TanhNormal actor, twin Q, loss, loop.

    python examples/cql/train.py --dataset RUN_DIR    # a finished `tdrl train algo=sac env=Pendulum-v1` run
    python examples/cql/train.py --gradient-steps 50  # smoke run on a dataset of random actions

CQL (Kumar et al. 2020, https://arxiv.org/abs/2006.04779): SAC's losses plus a penalty that pushes down the
Q-values of actions outside the dataset. The dataset is any replay buffer tdrl wrote: an off-policy run
folder (its checkpoint holds the buffer) or a ``ReplayBuffer.dumps`` folder. Without ``--dataset`` the script
collects ``--dataset-frames`` transitions of random actions first. The settings of the ``cql_pendulum``
preset: batch 256, lr 3e-4, tau 0.005, 128x128 networks, 4 random actions per state in the penalty.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors import Collector, RandomPolicy
from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, NormalParamExtractor, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import CQLLoss, SoftUpdate
from tdrl.trainers.datasets import load_dataset
from tdrl.trainers.evaluation import Evaluator


@dataclass
class Args:
    env: str = "Pendulum-v1"
    seed: int = 0
    dataset: str = ""  # an off-policy run folder or a ReplayBuffer.dumps folder ("" = random actions)
    dataset_frames: int = 5_000  # without --dataset: transitions of random actions to collect
    gradient_steps: int = 5_000
    batch_size: int = 256
    lr: float = 3e-4
    gamma: float = 0.99
    tau: float = 0.005
    min_q_weight: float = 1.0
    num_random: int = 4
    hidden: int = 128
    eval_interval: int = 1_000  # gradient steps between evaluations
    eval_episodes: int = 10
    out: str = ""  # write the final figures to this JSON file


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args()))


def make_env(args: Args, num_envs: int = 1) -> TransformedEnv:
    base = GymEnv(args.env, num_envs=num_envs) if num_envs > 1 else GymEnv(args.env)
    return TransformedEnv(base, RewardSum())


def make_dataset(args: Args, env: TransformedEnv) -> TensorDictReplayBuffer:
    if args.dataset:
        return load_dataset(args.dataset, batch_size=args.batch_size)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(args.dataset_frames), batch_size=args.batch_size)
    collector = Collector(env, RandomPolicy(env.action_spec), frames_per_batch=1_000, total_frames=args.dataset_frames)
    for batch in collector:
        buffer.extend(batch.reshape(-1))
    collector.shutdown()
    return buffer


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env = make_env(args)
    env.set_seed(args.seed)
    spec = env.action_spec
    n_obs, n_act = env.observation_spec["observation"].shape[-1], spec.shape[-1]
    dataset = make_dataset(args, env)

    def mlp(n_in: int, n_out: int) -> MLP:
        return MLP(in_features=n_in, out_features=n_out, num_cells=[args.hidden] * 2, activation_class=nn.ReLU)

    actor = ProbabilisticActor(
        TensorDictModule(nn.Sequential(mlp(n_obs, 2 * n_act), NormalParamExtractor()), ["observation"],
                         ["loc", "scale"]),
        in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=spec, return_log_prob=True,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high})
    qvalue = ValueOperator(mlp(n_obs + n_act, 1), in_keys=["observation", "action"])
    loss_module = CQLLoss(actor, qvalue, action_spec=spec, loss_function="l2", min_q_weight=args.min_q_weight,
                          num_random=args.num_random, deterministic_backup=False)
    loss_module.make_value_estimator(gamma=args.gamma)
    target_updater = SoftUpdate(loss_module, tau=args.tau)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    eval_env = make_env(args, num_envs=args.eval_episodes)
    eval_env.set_seed(args.seed + 10_000)
    evaluator = Evaluator(eval_env, actor, max_steps=200)

    start, curve = time.perf_counter(), []
    for step in range(1, args.gradient_steps + 1):
        losses = loss_module(dataset.sample())
        loss = losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_cql"] + losses["loss_alpha"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        target_updater.step()
        if step % args.eval_interval == 0 or step == args.gradient_steps:
            returns = evaluator.episode_returns(args.eval_episodes)
            curve.append((step, sum(returns) / len(returns)))
            print(f"gradient step {step:>6,}  eval return {curve[-1][1]:7.1f}  "
                  f"{step / (time.perf_counter() - start):5.0f} steps/s", flush=True)
    wall = time.perf_counter() - start

    returns = evaluator.episode_returns(args.eval_episodes)  # the last policy, deterministic
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {"algo": "cql", **asdict(args), "dataset_size": len(dataset), "wall_time_s": round(wall, 1),
              "curve": curve, "eval_return_mean": mean, "eval_return_std": std, "eval_episodes": len(returns)}
    print(f"RESULT cql {args.env} seed {args.seed}: last policy {mean:.1f} +- {std:.1f} over {len(returns)} "
          f"deterministic episodes, {args.gradient_steps:,} gradient steps on {len(dataset):,} transitions "
          f"in {wall:.0f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
