"""``MultiThreadedEnv`` / ``MultiThreadedEnvWrapper`` (the `envpool` extra): TorchRL's keys and spec shapes,
rollouts equal to gymnasium's dynamics, partial resets of finished sub-envs, errors. (TorchRL 0.14.1's wrapper
cannot build here: it converts EnvPool's gymnasium spaces with its ``gym`` backend and raises, so there is no
golden recording.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

envpool = pytest.importorskip("envpool", reason="envpool is not installed (the `envpool` extra)")

import gymnasium  # noqa: E402

from tdrl.envs import MultiThreadedEnv, MultiThreadedEnvWrapper  # noqa: E402
from tdrl.envs.utils import check_env_specs  # noqa: E402


def test_specs_follow_torchrl() -> None:
    env = MultiThreadedEnv(3, "CartPole-v1", create_env_kwargs={"seed": 0})
    assert env.batch_size == (3,)
    assert env.observation_spec["observation"].shape == (3, 4)
    action = env.action_spec
    assert type(action).__name__ == "Categorical" and action.shape == (3,) and action.space.n == 2
    assert env.reward_spec.shape == (3,) and env.done_spec["done"].shape == (3,)
    assert sorted(env.done_keys) == ["done", "terminated", "truncated"]
    check_env_specs(env)


def test_cartpole_follows_gymnasium_dynamics() -> None:
    env = MultiThreadedEnv(2, "CartPole-v1", create_env_kwargs={"seed": 1})
    td = env.reset()
    ref = gymnasium.make("CartPole-v1").unwrapped
    ref.reset()
    ref.state = td["observation"][0].double().numpy()
    for t in range(5):
        td["action"] = torch.tensor([t % 2, 1])
        out = env.step(td)
        obs, reward, *_ = ref.step(t % 2)
        torch.testing.assert_close(out["next", "observation"][0], torch.as_tensor(obs, dtype=torch.float32))
        assert out["next", "reward"][0].item() == reward
        td = env.step_mdp(out)


def test_finished_sub_envs_are_reset_in_place() -> None:
    env = MultiThreadedEnv(2, "CartPole-v1", create_env_kwargs={"seed": 2})
    td = env.reset()
    ends = 0
    for _ in range(60):
        td["action"] = torch.tensor([1, 0])  # sub-env 0 always pushes right: it falls within ~10 steps
        out, td = env.step_and_maybe_reset(td)
        done = out["next", "done"]
        if done.any():
            ends += 1
            # the reset rows start near zero; the others keep the stepped observation
            assert (td["observation"][done].abs() <= 0.05).all()
            torch.testing.assert_close(td["observation"][~done], out["next", "observation"][~done])
            assert not td["done"].any()
    assert ends >= 2
    rollout = env.rollout(40, break_when_any_done=False)
    assert rollout.batch_size == (2, 40) and rollout["next", "reward"].eq(1).all()


def test_partial_reset_keeps_the_other_rows() -> None:
    env = MultiThreadedEnv(3, "Pendulum-v1", create_env_kwargs={"seed": 0})
    td = env.reset()
    td["action"] = torch.zeros(3, 1)
    td = env.step_mdp(env.step(td))
    before = td["observation"].clone()
    td["_reset"] = torch.tensor([False, True, False])
    reset = env.reset(td)
    torch.testing.assert_close(reset["observation"][[0, 2]], before[[0, 2]])
    assert not torch.equal(reset["observation"][1], before[1])



def test_wrapper_checks_its_input() -> None:
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2)
    assert MultiThreadedEnvWrapper(pool).batch_size == (2,)
    with pytest.raises(TypeError, match="EnvPool env"):
        MultiThreadedEnvWrapper(gymnasium.make("CartPole-v1"))
    with pytest.raises(ValueError, match="asynchronous EnvPool"):
        MultiThreadedEnvWrapper(envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, batch_size=2))
    with pytest.raises(ValueError, match="unknown EnvPool task"):
        MultiThreadedEnv(2, "CartPol-v9")
    assert np.asarray(pool.reset()[0]).shape == (2, 4)
