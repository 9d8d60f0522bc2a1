"""evaluate_policy: batched envs play the episodes side by side, each counted up to its first end."""

from __future__ import annotations

import pytest

from tdrl.trainers.builders import build_env
from tdrl.trainers.checkpoint import save_checkpoint
from tdrl.trainers.policy import policy_checkpoint
from tdrl.trainers.run import evaluate_policy, policy_source


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


def test_policy_source_and_load_policy_pick_the_same_checkpoint(tmp_path):
    # Only the previous copy of best.pt survives (a crash during its rewrite): load_checkpoint falls back
    # to it, so the evaluated policy is still the best one, and both selectors must say so.
    (tmp_path / "config.yaml").write_text("algo: ppo\n")
    save_checkpoint({"frames": 256}, tmp_path / "best.pt")
    (tmp_path / "best.pt").rename(tmp_path / "best.pt.prev")
    save_checkpoint({"state": {"collected_frames": 512}}, tmp_path / "checkpoint.pt")
    source = policy_source(tmp_path, "best")
    assert source["path"] == policy_checkpoint(tmp_path, "best") == tmp_path / "best.pt"
    assert source["policy"] == "best" and source["frames"] == 256
    last = policy_source(tmp_path, "last")
    assert last["path"] == policy_checkpoint(tmp_path, "last") and last["frames"] == 512
    (tmp_path / "best.pt.prev").unlink()
    assert policy_source(tmp_path, "best")["label"] == "last policy (checkpoint.pt, frame 512; the run kept no best.pt)"
    with pytest.raises(ValueError, match="which must be"):
        policy_source(tmp_path, "newest")
