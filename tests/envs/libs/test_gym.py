"""GymEnv / GymWrapper on gymnasium >= 1.0: specs, rollouts, vector envs and their autoreset modes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.data import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
)
from tdrl.envs import GymEnv, GymWrapper, check_env_specs, default_info_dict_reader, set_gym_backend


def test_cartpole_specs_and_rollout():
    env = GymEnv("CartPole-v1")
    assert isinstance(env.action_spec, OneHot) and env.action_spec.dtype == torch.int64
    assert env.observation_spec["observation"].shape == (4,)
    assert env.observation_spec["observation"].dtype == torch.float32
    assert env.reward_spec.shape == (1,) and env.reward_spec.dtype == torch.float32
    assert env.done_keys == ["done", "terminated", "truncated"]
    env.set_seed(0)
    data = env.rollout(500)
    assert data["next", "done"][-1].item()
    assert data["next", "terminated"][-1].item() != data["next", "truncated"][-1].item()
    assert (data["next", "observation"][:-1] == data["observation"][1:]).all()


def test_categorical_encoding():
    env = GymEnv("CartPole-v1", categorical_action_encoding=True)
    assert isinstance(env.action_spec, Categorical) and env.action_spec.shape == ()
    assert env.rollout(3)["action"].shape == (3,)


def test_pendulum_bounded_action_and_seed():
    envs = [GymEnv("Pendulum-v1") for _ in range(2)]
    assert isinstance(envs[0].action_spec, Bounded)
    outs = []
    for env in envs:
        env.set_seed(7)
        torch.manual_seed(0)
        outs.append(env.rollout(5))
    assert torch.equal(outs[0]["next", "observation"], outs[1]["next", "observation"])


def test_time_limit_is_truncation():
    env = GymEnv("Pendulum-v1", max_episode_steps=4)
    data = env.rollout(10)
    assert data.batch_size == (4,)
    assert data["next", "truncated"][-1].item() and not data["next", "terminated"][-1].item()


def test_frame_skip_sums_rewards():
    base, skip = GymEnv("CartPole-v1"), GymEnv("CartPole-v1", frame_skip=2)
    for env in (base, skip):
        env.set_seed(1)
    td = skip.reset()
    td["action"] = torch.tensor([1, 0])
    assert skip.step(td)["next", "reward"].item() == 2.0


def test_space_conversions():
    class Spaces(gym.Env):
        observation_space = gym.spaces.Dict(
            pos=gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float64),
            img=gym.spaces.Box(0, 255, (3, 3, 3), dtype=np.uint8),
            flags=gym.spaces.MultiBinary(3),
        )
        action_space = gym.spaces.MultiDiscrete([2, 3])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {"extra": 1.0}

        def step(self, action):
            assert action.shape == (2,)
            return self.observation_space.sample(), 1.0, False, False, {"extra": 2.0}

    env = GymWrapper(Spaces())
    obs = env.observation_spec
    assert obs["pos"].dtype == torch.float64 and isinstance(obs["pos"], Bounded)
    assert isinstance(obs["img"], Unbounded) and obs["img"].dtype == torch.uint8
    assert isinstance(obs["flags"], Binary)
    assert isinstance(env.action_spec, MultiOneHot)
    assert isinstance(GymWrapper(Spaces(), categorical_action_encoding=True).action_spec, MultiCategorical)
    env.set_info_dict_reader(default_info_dict_reader(["extra"]))
    data = env.rollout(3)
    assert data["next", "extra"].squeeze(-1).tolist() == [2.0, 2.0, 2.0]
    assert set(data["next"].keys()) >= {"pos", "img", "flags", "extra", "reward"}


def test_set_gym_backend():
    with set_gym_backend("gymnasium"):
        pass
    with pytest.raises(ValueError, match="gymnasium"):
        set_gym_backend("gym")


def test_set_gym_backend_set_method_like_torchrl():
    # TorchRL scripts call ``set_gym_backend(cfg.env.backend).set()`` once at the top.
    import gymnasium

    set_gym_backend("gymnasium").set()
    set_gym_backend(gymnasium).set()
    with pytest.raises(ValueError, match="gymnasium"):
        set_gym_backend("gym").set()


def test_unknown_id():
    with pytest.raises(ValueError, match="unknown gymnasium env 'CartPole-v9'.*CartPole-v1"):
        GymEnv("CartPole-v9")


def test_vector_env_num_envs():
    env = GymEnv("CartPole-v1", num_envs=3)
    assert env.batch_size == (3,)
    assert env.action_spec.shape == (3, 2)
    data = env.rollout(50, break_when_any_done=False)
    assert data.batch_size == (3, 50)
    check_env_specs(env)


def _reference_run(seed: int, n: int, actions: torch.Tensor) -> list[list[np.ndarray]]:
    """Replays ``actions`` on independent single envs seeded like the vector env's sub-envs."""
    trajs = []
    for i in range(n):
        env = gym.make("CartPole-v1")
        env.reset(seed=seed + i)
        obs, _ = env.reset()
        seq = [obs]
        for a in actions[i]:
            obs, _, term, trunc, _ = env.step(int(a.argmax()))
            seq.append(obs)
            if term or trunc:
                obs, _ = env.reset()
                seq.append(obs)
        trajs.append(seq)
    return trajs


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_vector_autoreset_no_lost_or_duplicated_frames(mode):
    n, steps, seed = 3, 80, 5
    vec = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * n, autoreset_mode=gym.vector.AutoresetMode(mode)
    )
    env = GymWrapper(vec)
    env.set_seed(seed)
    data = env.rollout(steps, break_when_any_done=False)
    done = data["next", "done"].squeeze(-1)
    assert done.sum() >= n  # several episodes ended during the rollout
    assert (data["next", "reward"] == 1).all()  # no zero-reward "reset step" leaked in
    reference = _reference_run(seed, n, data["action"])
    for i in range(n):
        # rebuild the sequence seen by the agent: root obs, then next obs, then reset obs after a done
        seen = [data["observation"][i, 0].numpy()]
        for t in range(steps):
            seen.append(data["next", "observation"][i, t].numpy())
            if done[i, t] and t + 1 < steps:
                seen.append(data["observation"][i, t + 1].numpy())
            elif t + 1 < steps:
                assert torch.equal(data["observation"][i, t + 1], data["next", "observation"][i, t])
        ref = reference[i][: len(seen)]
        assert len(ref) == len(seen)
        np.testing.assert_allclose(np.stack(seen), np.stack(ref), rtol=0, atol=0)


def test_pixels():
    env = GymEnv("CartPole-v1", from_pixels=True, pixels_only=False)
    assert set(env.observation_spec.keys()) == {"pixels", "observation"}
    td = env.reset()
    assert td["pixels"].dtype == torch.uint8 and td["pixels"].ndim == 3
    env = GymEnv("CartPole-v1", from_pixels=True)
    assert set(env.observation_spec.keys()) == {"pixels"}


def test_check_env_specs_on_gym():
    check_env_specs(GymEnv("Pendulum-v1"))
    check_env_specs(GymEnv("CartPole-v1"))


def test_bad_env_type():
    with pytest.raises(TypeError, match="gymnasium Env or VectorEnv"):
        GymWrapper(env=object())


def test_composite_obs_is_composite():
    env = GymEnv("CartPole-v1")
    assert isinstance(env.observation_spec, Composite)


def test_vector_env_pixels_and_info_reader():
    env = GymEnv("CartPole-v1", num_envs=2, from_pixels=True, pixels_only=False)
    data = env.rollout(2)
    assert data["next", "pixels"].shape[:2] == (2, 2) and data["next", "pixels"].dtype == torch.uint8
    vec = GymEnv("CartPole-v1", num_envs=2)
    vec.set_info_dict_reader()  # CartPole reports no info: nothing is added, nothing breaks
    assert vec.rollout(3).batch_size == (2, 3)
    with pytest.raises(ValueError, match="from_pixels on a vector env"):
        GymWrapper(gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2), from_pixels=True)


def test_vector_env_rollout_break_when_all_done_keeps_stepping_the_running_sub_envs():
    # gymnasium's vector env (autoreset disabled) asserts when a finished sub-env is stepped; the
    # rollout skips finished sub-envs with "_step" and GymEnv resets them aside (TorchRL runs this).
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(0)
    data = env.rollout(500, break_when_all_done=True)
    done = data["next", "done"].squeeze(-1)
    first_done = done.float().argmax(1)
    assert done.any(1).all(), "every sub-env finished"
    assert data.shape[1] == int(first_done.max()) + 1  # stops when the last sub-env finishes
    for i, t in enumerate(first_done.tolist()):  # a finished sub-env repeats its last transition
        assert done[i, t:].all()
        assert (data["next", "observation"][i, t:] == data["next", "observation"][i, t]).all()
    assert env.rollout(5, break_when_any_done=False).shape == (3, 5)  # the env is still usable


def _step_and_reset_run(env: GymEnv, actions: torch.Tensor) -> list:
    env.set_seed(3)
    td, seen = env.reset(), []
    for action in actions:
        td["action"] = action
        step, td = env.step_and_maybe_reset(td)
        seen.append((step["next"].clone(), td.clone()))
    return seen


def test_vector_partial_reset_short_path_matches_the_generic_reset(monkeypatch):
    n = 4
    actions = GymEnv("CartPole-v1", num_envs=n).full_action_spec["action"].rand((150,))
    fast = GymEnv("CartPole-v1", num_envs=n)
    assert fast._fast_reset_ok(fast.reset())
    got = _step_and_reset_run(fast, actions)
    generic = GymEnv("CartPole-v1", num_envs=n)
    monkeypatch.setattr(generic, "_fast_reset_ok", lambda td: False)
    want = _step_and_reset_run(generic, actions)
    resets = 0
    for (g_next, g_root), (w_next, w_root) in zip(got, want):
        assert (g_next == w_next).all() and (g_root == w_root).all()
        assert set(g_root.keys()) == set(w_root.keys())
        resets += int(g_next["done"].any() and not g_next["done"].all())
        assert not g_root["done"].any() and not g_root["terminated"].any()
    assert resets >= 3  # the partial resets were exercised


def test_vector_partial_reset_short_path_is_skipped_with_an_info_reader():
    env = GymEnv("CartPole-v1", num_envs=2)
    assert env._fast_reset_ok(env.reset())
    env.set_info_dict_reader(default_info_dict_reader())
    assert not env._fast_reset_ok(env.reset())
