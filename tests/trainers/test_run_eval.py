"""evaluate_policy: batched envs play the episodes side by side, each counted up to its first end."""

from __future__ import annotations

from tdrl.trainers.builders import build_env
from tdrl.trainers.run import evaluate_policy


def _always_left(env):
    def policy(td):
        return td.set("action", env.action_spec.zero())

    return policy


def test_batched_eval_counts_each_copy_up_to_its_first_episode_end():
    env = build_env({"name": "CartPole-v1"}, num_envs=2)
    env.set_seed(0)
    returns = evaluate_policy(env, _always_left(env), episodes=5, max_steps=200)
    env.close()
    # Pushing left always ends an episode within ~8-12 steps; without the first-episode mask, the
    # autoreset copies would add up about 200 per copy.
    assert len(returns) == 5
    assert all(5 <= r <= 20 for r in returns), returns


def test_single_env_eval_matches_batched_figures():
    env = build_env({"name": "CartPole-v1"}, num_envs=1)
    env.set_seed(0)
    returns = evaluate_policy(env, _always_left(env), episodes=3, max_steps=200)
    env.close()
    assert len(returns) == 3 and all(5 <= r <= 20 for r in returns), returns
