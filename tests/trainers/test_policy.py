"""tdrl.load_policy: a run folder's policy maps observations to env-format actions (tensor or TensorDict)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

import tdrl
from tdrl.envs import ExplorationType, set_exploration_type
from tdrl.trainers.builders import build_env
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.policy import RunPolicy, load_policy

pytestmark = pytest.mark.integration


def test_import_tdrl_stays_light_and_load_policy_is_lazy():
    code = ("import sys, tdrl; assert 'tdrl.trainers' not in sys.modules, 'import tdrl loaded the trainers'; "
            "f = tdrl.load_policy; assert f.__module__ == 'tdrl.trainers.policy'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-1000:]
    assert "load_policy" in tdrl.__all__ and tdrl.load_policy is load_policy


def test_discrete_actions_are_indices_for_tensors_arrays_and_batches(cartpole_run):
    policy = tdrl.load_policy(cartpole_run)
    assert isinstance(policy, RunPolicy) and not policy.training
    assert policy.source == cartpole_run / "best.pt"
    obs = torch.randn(7, 4)
    actions = policy(obs)
    assert actions.shape == (7,) and actions.dtype == torch.int64 and set(actions.tolist()) <= {0, 1}
    single = policy(obs[3])
    assert single.shape == () and int(single) == int(actions[3])
    assert torch.equal(policy(obs.numpy().astype(np.float64)), actions)  # gymnasium's arrays, any float dtype
    assert torch.equal(policy(obs), actions)  # deterministic


def test_actions_match_the_trained_networks_argmax(cartpole_run):
    policy = load_policy(cartpole_run, "last")
    assert policy.source == cartpole_run / "checkpoint.pt"
    saved = load_checkpoint(cartpole_run / "checkpoint.pt")["loss_module"]
    weights = {k.removeprefix("actor_network_params.module.0.module."): v for k, v in saved.items()
               if k.startswith("actor_network_params.module.0.module.")}
    assert weights, sorted(saved)[:10]
    # the actor MLP (Linear, Tanh, Linear, Tanh, Linear), rebuilt by hand from the checkpoint's tensors
    layers = sorted({k.split(".")[0] for k in weights}, key=int)
    obs = torch.randn(32, 4)
    x = obs
    for i, layer in enumerate(layers):
        x = x @ weights[f"{layer}.weight"].T + weights[f"{layer}.bias"]
        if i < len(layers) - 1:
            x = torch.tanh(x)
    assert torch.equal(policy(obs), x.argmax(-1))


def test_a_tensordict_gets_the_tdrl_env_action_and_drives_a_rollout(cartpole_run):
    policy = load_policy(cartpole_run)
    env = build_env({"name": "CartPole-v1"}, num_envs=1)
    env.set_seed(0)
    data = env.rollout(20, policy)
    env.close()
    assert data["action"].shape[-1] == 2  # one-hot, as GymEnv reads it
    td = policy(TensorDict({"observation": torch.randn(3, 4)}, [3]))
    assert torch.equal(td["action"].argmax(-1), policy(td["observation"]))
    with pytest.raises(KeyError, match=r"lacks \['observation'\]"):
        policy(TensorDict({"obs": torch.randn(4)}, []))


def test_a_gymnasium_episode_runs_on_the_returned_actions(cartpole_run):
    policy = load_policy(cartpole_run)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    for _ in range(10):
        obs, _, terminated, truncated, _ = env.step(int(policy(obs)))  # a plain int, as gymnasium wants
        if terminated or truncated:
            break
    env.close()


def test_stochastic_policy_samples_and_loading_leaves_the_callers_rng_alone(cartpole_run):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    policy = load_policy(cartpole_run, deterministic=False)
    assert torch.equal(torch.rand(3), expected)  # building the parts seeded with the run's seed, then restored
    assert policy.exploration_type == ExplorationType.RANDOM
    obs = torch.zeros(2000, 4)
    sampled = policy(obs)
    assert 0 < sampled.float().mean() < 1  # the policy's probabilities at obs 0 are not 0/1 after 512 frames
    with set_exploration_type(ExplorationType.RANDOM):  # the caller's context does not change a deterministic one
        assert len(set(load_policy(cartpole_run)(obs).tolist())) == 1


def test_wrong_observation_shape_names_the_expected_one(cartpole_run):
    with pytest.raises(ValueError, match=r"observation of shape \(3,\): expected \(\*batch, 4\)"):
        load_policy(cartpole_run)(torch.zeros(3))


def test_missing_run_or_checkpoint_names_the_path_and_what_exists(cartpole_run, tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"no run folder at {tmp_path / 'nope'} \(run folders in {tmp_path}: none\)"):
        load_policy(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=r"no run folder at .*run folders in .*: run\b"):
        load_policy(cartpole_run.parent / "runn")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"empty is not a run folder: it has no config.yaml \(it holds: notes.txt\)"):
        load_policy(empty)
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(cartpole_run / "config.yaml", bare / "config.yaml")
    with pytest.raises(FileNotFoundError, match=r"bare has no best.pt nor checkpoint.pt \(it holds: config.yaml\)"):
        load_policy(bare)
    with pytest.raises(FileNotFoundError, match=r"bare has no checkpoint.pt \(it holds"):
        load_policy(bare, "last")
    with pytest.raises(ValueError, match="which must be 'best' or 'last', got 'first'"):
        load_policy(cartpole_run, "first")  # type: ignore[arg-type]
