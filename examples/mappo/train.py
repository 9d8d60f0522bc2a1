"""MAPPO on VMAS navigation, top to bottom from tdrl parts: vectorized multi-agent env, shared-parameter actor,
centralised critic, collector, MAPPOLoss (MultiAgentGAE inside), minibatch buffer, loop.

    python examples/mappo/train.py                      # 60,000 frames, seed 0 (see README.md)
    python examples/mappo/train.py --total-frames 1200 --frames-per-batch 600 --num-epochs 1  # smoke run

Needs the ``marl`` extra (vmas). Hyperparameters: TorchRL's ``multiagent_ppo`` tutorial (3 agents, 100-step
episodes, 6,000 frames per batch, 30 epochs of 400-frame minibatches, lr 3e-4, clip 0.2, gamma 0.99,
lambda 0.9, entropy 1e-4, 256x256 tanh MLPs with parameters shared by the agents).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from tdrl.envs import RewardSum, TransformedEnv
from tdrl.envs.libs.vmas import VmasEnv
from tdrl.envs.utils import ExplorationType, set_exploration_type
from tdrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
from tdrl.objectives import MAPPOLoss, ValueEstimators


@dataclass
class Args:
    scenario: str = "navigation"
    n_agents: int = 3
    max_steps: int = 100
    seed: int = 0
    total_frames: int = 60_000
    frames_per_batch: int = 6_000  # frames_per_batch // max_steps vectorized envs
    num_epochs: int = 30
    minibatch_size: int = 400
    lr: float = 3e-4
    gamma: float = 0.99
    lmbda: float = 0.9
    clip_epsilon: float = 0.2
    entropy_coeff: float = 1e-4
    max_grad_norm: float = 1.0
    hidden: int = 256
    eval_episodes: int = 10
    out: str = ""  # write the final figures (and the learning curve) to this JSON file


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args(argv)))


def make_env(args: Args, num_envs: int, seed: int) -> TransformedEnv:
    base = VmasEnv(
        args.scenario,
        num_envs=num_envs,
        continuous_actions=True,
        max_steps=args.max_steps,
        n_agents=args.n_agents,
        seed=seed,
    )
    # RewardSum writes ("agents", "episode_reward"): each agent's running return, reset with the episode.
    return TransformedEnv(base, RewardSum(in_keys=[base.reward_key], out_keys=[("agents", "episode_reward")]))


def make_actor_critic(env: TransformedEnv, args: Args) -> tuple[ProbabilisticActor, TensorDictModule]:
    n_obs = env.observation_spec["agents", "observation"].shape[-1]
    action_spec = env.full_action_spec_unbatched["agents", "action"]
    # Decentralised actor: each agent's loc/scale from its own observation, one set of parameters for all.
    policy_net = nn.Sequential(
        MultiAgentMLP(
            n_obs,
            2 * action_spec.shape[-1],
            args.n_agents,
            centralized=False,
            share_params=True,
            depth=2,
            num_cells=args.hidden,
            activation_class=nn.Tanh,
        ),
        NormalParamExtractor(),
    )
    actor = ProbabilisticActor(
        TensorDictModule(policy_net, [("agents", "observation")], [("agents", "loc"), ("agents", "scale")]),
        spec=env.full_action_spec_unbatched,
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True,
    )
    # Centralised critic: every agent's value from all the agents' observations.
    critic_net = MultiAgentMLP(
        n_obs,
        1,
        args.n_agents,
        centralized=True,
        share_params=True,
        depth=2,
        num_cells=args.hidden,
        activation_class=nn.Tanh,
    )
    critic = TensorDictModule(critic_net, [("agents", "observation")], [("agents", "state_value")])
    return actor, critic


def evaluate(actor: ProbabilisticActor, args: Args) -> list[float]:
    """Deterministic returns (summed over an episode, averaged over the agents) of ``eval_episodes`` envs."""
    env = make_env(args, args.eval_episodes, seed=args.seed + 10_000)
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        rollout = env.rollout(args.max_steps, actor, break_when_any_done=False)
    return rollout["next", "agents", "reward"].sum(1).mean((-2, -1)).tolist()


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # networks this small: thread-pool overhead outweighs parallelism
    num_envs = args.frames_per_batch // args.max_steps
    env = make_env(args, num_envs, seed=args.seed)
    actor, critic = make_actor_critic(env, args)

    loss_module = MAPPOLoss(
        actor,
        critic,
        clip_epsilon=args.clip_epsilon,
        entropy_coeff=args.entropy_coeff,
        loss_critic_type="smooth_l1",
        normalize_advantage=False,
    )
    loss_module.set_keys(
        reward=env.reward_key,
        action=env.action_key,
        value=("agents", "state_value"),
        sample_log_prob=("agents", "action_log_prob"),
        done="done",
        terminated="terminated",
    )
    loss_module.make_value_estimator(ValueEstimators.MAGAE, gamma=args.gamma, lmbda=args.lmbda)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=args.lr)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch, total_frames=args.total_frames)
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(args.frames_per_batch),
        sampler=SamplerWithoutReplacement(),
        batch_size=args.minibatch_size,
    )

    frames, start, curve = 0, time.perf_counter(), []
    for batch in collector:
        frames += batch.numel()
        done = batch["next", "done"].squeeze(-1)
        episode_reward = batch["next", "agents", "episode_reward"][done].mean().item() if done.any() else None
        with torch.no_grad():
            loss_module.value_estimator(batch)  # MultiAgentGAE: "advantage" and "value_target" per agent
        buffer.extend(batch.reshape(-1))
        for _ in range(args.num_epochs):
            for _ in range(args.frames_per_batch // args.minibatch_size):
                losses = loss_module(buffer.sample())
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                optimizer.step()
        curve.append({"frames": frames, "episode_reward_mean": episode_reward})
        shown = "n/a" if episode_reward is None else f"{episode_reward:6.3f}"
        print(
            f"frames {frames:>7,}  mean episode reward per agent {shown}  "
            f"{frames / (time.perf_counter() - start):5.0f} frames/s",
            flush=True,
        )
    wall = time.perf_counter() - start
    collector.shutdown()

    returns = evaluate(actor, args)
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    result = {
        "algo": "mappo",
        **asdict(args),
        "frames": frames,
        "wall_time_s": round(wall, 1),
        "eval_return_mean": mean,
        "eval_return_std": std,
        "eval_episodes": len(returns),
        "curve": curve,
    }
    print(
        f"RESULT mappo {args.scenario} seed {args.seed}: last policy {mean:.3f} +- {std:.3f} over {len(returns)} "
        f"deterministic episodes, {frames:,} frames in {wall:.0f} s",
        flush=True,
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
