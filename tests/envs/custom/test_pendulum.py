"""PendulumEnv: batched stateless dynamics, partial resets, seeding, state resets."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch

from tdrl.envs import PendulumEnv, check_env_specs


def test_batched_rollout_from_params():
    env = PendulumEnv(seed=0)
    td = env.reset(env.gen_params(batch_size=[5]))
    data = env.rollout(4, auto_reset=False, tensordict=td)
    assert data.batch_size == (5, 4)
    assert data["next", "reward"].shape == (5, 4, 1)
    assert (data["next", "th"].abs() <= math.pi).all()


def test_fixed_batch_size():
    env = PendulumEnv(seed=0, batch_size=[3])
    assert env.action_spec.shape == (3, 1)
    check_env_specs(env)


def test_matches_gymnasium_dynamics():
    gym_env = gym.make("Pendulum-v1").unwrapped
    gym_env.reset(seed=0)
    env = PendulumEnv(seed=0)
    td = env.reset()
    gym_env.state = np.array([td["th"].item(), td["thdot"].item()])
    for u in (0.5, -2.0, 3.0):
        td["action"] = torch.tensor([u])
        td = env.step(td)
        _, reward, *_ = gym_env.step(np.array([u], dtype=np.float32))
        assert abs(td["next", "reward"].item() - reward) < 1e-4
        assert abs(td["next", "thdot"].item() - gym_env.state[1]) < 1e-4
        td = env.step_mdp(td)


def test_partial_reset_keeps_state():
    env = PendulumEnv(seed=0, batch_size=[3])
    td = env.reset()
    before = td["th"].clone()
    td["_reset"] = torch.tensor([True, False, False]).unsqueeze(-1)
    out = env.reset(td)
    assert (out["th"][1:] == before[1:]).all()
    assert out["th"][0] != before[0]


def test_seed_reproducible_and_set_state():
    a, b = PendulumEnv(seed=3), PendulumEnv(seed=3)
    assert torch.equal(a.reset()["th"], b.reset()["th"])
    state = a.reset()
    state["th"] = torch.tensor(0.25)
    assert a.reset(state.clone(), set_state=True)["th"].item() == 0.25
