"""PPO on CartPole-v1, assembled from tdrl parts and trained with :class:`tdrl.trainers.algorithms.PPOTrainer`.

Run:  python examples/ppo/ppo_cartpole.py [--frames 102400] [--seed 0]

This is what ``tdrl train`` (the default preset) does, written out top to bottom: 8 gymnasium envs, a
64x64 Tanh MLP actor (categorical policy) and critic, clipped PPO with GAE (gamma 0.98, lambda 0.8),
5 epochs of 256-sample minibatches per 1024-frame batch, Adam at 1e-3 annealed to 0, then a
deterministic evaluation.
"""

from __future__ import annotations

import argparse
import functools

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from tdrl.envs import GymEnv, RewardSum, TransformedEnv
from tdrl.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from tdrl.objectives import ClipPPOLoss
from tdrl.trainers import LogEpisodeReturn
from tdrl.trainers.algorithms import PPOTrainer
from tdrl.trainers.evaluation import Evaluator


def make_env(num_envs: int) -> TransformedEnv:
    # RewardSum writes ("next", "episode_reward"): the return of the episode so far, for logging.
    base = GymEnv("CartPole-v1", num_envs=num_envs) if num_envs > 1 else GymEnv("CartPole-v1")
    return TransformedEnv(base, RewardSum())


def make_actor_critic(env: TransformedEnv) -> tuple[ProbabilisticActor, ValueOperator]:
    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.shape[-1]
    mlp = functools.partial(MLP, num_cells=[64, 64], activation_class=nn.Tanh)
    logits = TensorDictModule(mlp(in_features=n_obs, out_features=n_act), ["observation"], ["logits"])
    actor = ProbabilisticActor(logits, in_keys=["logits"], distribution_class=OneHotCategorical,
                               spec=env.action_spec, return_log_prob=True)
    critic = ValueOperator(mlp(in_features=n_obs, out_features=1), in_keys=["observation"])
    return actor, critic


def evaluate(actor: ProbabilisticActor, episodes: int = 10) -> list[float]:
    # The library's one evaluation path (the same as `tdrl eval`): deterministic actions, up to 500 steps.
    env = make_env(1)
    env.set_seed(1234)
    returns = Evaluator(env, actor, max_steps=500).episode_returns(episodes)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=102_400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # Tiny networks: one thread avoids the thread-pool overhead that dominates at this size.
    torch.set_num_threads(1)

    frames_per_batch, minibatch = 1024, 256
    env = make_env(num_envs=8)
    actor, critic = make_actor_critic(env)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.0, loss_critic_type="l2",
                       normalize_advantage=True)
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.0, total_iters=args.frames // frames_per_batch)
    collector = Collector(env, actor, frames_per_batch=frames_per_batch, total_frames=args.frames)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames_per_batch), sampler=SamplerWithoutReplacement(),
                          batch_size=minibatch)

    trainer = PPOTrainer(
        collector=collector,
        total_frames=args.frames,
        frame_skip=1,
        optim_steps_per_batch=frames_per_batch // minibatch,
        loss_module=loss,
        optimizer=optimizer,
        lr_scheduler=scheduler,
        replay_buffer=buffer,
        num_epochs=5,
        gamma=0.98,
        lmbda=0.8,
        clip_norm=0.5,
        seed=args.seed,
        episode_reward_key="episode_reward",
        log_actions=False,
    )
    LogEpisodeReturn(log_pbar=True).register(trainer)  # mean return of finished episodes on the progress bar
    trainer.train()

    returns = evaluate(actor)
    print(f"deterministic return over {len(returns)} episodes: {sum(returns) / len(returns):.1f} "
          f"(min {min(returns):.0f}, max {max(returns):.0f})")


if __name__ == "__main__":
    main()
