"""DMControlEnv / DMControlWrapper: specs, rollouts, truncation at the time limit, seeding."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from tdrl.data import Bounded, Composite, Unbounded

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("dm_control") is None, reason="dm_control is not installed (the `dmc` extra)"
)


@pytest.fixture(scope="module")
def cheetah():
    from tdrl.envs import DMControlEnv

    env = DMControlEnv("cheetah", "run")
    yield env
    env.close()


def test_cheetah_specs(cheetah):
    action = cheetah.action_spec
    assert isinstance(action, Bounded)
    assert action.shape == (6,) and action.dtype == torch.float64
    assert (action.low == -1).all() and (action.high == 1).all()
    obs = cheetah.observation_spec
    assert isinstance(obs, Composite)
    assert obs["position"].shape == (8,) and obs["position"].dtype == torch.float64
    assert obs["velocity"].shape == (9,) and obs["velocity"].dtype == torch.float64
    assert isinstance(cheetah.reward_spec, Unbounded)
    assert cheetah.reward_spec.shape == (1,) and cheetah.reward_spec.dtype == torch.float64
    assert cheetah.done_keys == ["done", "terminated", "truncated"]
    for key in cheetah.done_keys:
        assert cheetah.full_done_spec[key].shape == (1,) and cheetah.full_done_spec[key].dtype == torch.bool


def test_cheetah_rollout(cheetah):
    data = cheetah.rollout(5)
    assert data.batch_size == (5,)
    assert data["next", "position"].shape == (5, 8)
    assert data["next", "reward"].dtype == torch.float64
    assert (data["next", "position"][:-1] == data["position"][1:]).all()
    assert cheetah.observation_spec.is_in(data["next"][0].select("position", "velocity"))


def test_time_limit_is_truncation():
    from tdrl.envs import DMControlEnv

    env = DMControlEnv("cartpole", "balance", time_limit=0.05)  # 5 control steps of 10 ms
    data = env.rollout(100)
    assert data.batch_size == (5,)
    last = data["next"][-1]
    assert last["truncated"].item() and last["done"].item() and not last["terminated"].item()
    data = env.rollout(12, break_when_any_done=False)
    # the step after the truncation starts from a reset: the done flags are cleared at the root
    assert not data["done"][5].item()


def test_seed_reproducible():
    from tdrl.envs import DMControlEnv

    envs = [DMControlEnv("cheetah", "run") for _ in range(2)]
    outs = []
    for env in envs:
        env.set_seed(3)
        torch.manual_seed(0)
        outs.append(env.rollout(4))
    assert (outs[0]["next", "position"] == outs[1]["next", "position"]).all()


def test_wrapper_and_frame_skip():
    from dm_control import suite

    from tdrl.envs import DMControlWrapper

    env = DMControlWrapper(suite.load("cartpole", "balance"), frame_skip=2)
    data = env.rollout(3)
    assert data["next", "position"].shape == (3, 3)
    with pytest.raises(TypeError, match="control.Environment"):
        DMControlWrapper(env=object())


def test_unknown_task_lists_the_tasks():
    from tdrl.envs import DMControlEnv

    with pytest.raises(ValueError, match=r"tasks of 'cheetah': \['run'\]"):
        DMControlEnv("cheetah", "fly")


def test_from_pixels_in_subprocess():
    """Rendering needs a GL backend chosen before mujoco is imported: run it in a fresh interpreter."""
    import os
    import subprocess
    import sys

    code = (
        "from tdrl.envs import DMControlEnv\n"
        "env = DMControlEnv('cartpole', 'balance', from_pixels=True, pixels_only=False,"
        " render_kwargs={'height': 32, 'width': 32})\n"
        "data = env.rollout(2)\n"
        "assert set(env.observation_spec.keys()) == {'position', 'velocity', 'pixels'}\n"
        "assert data['next', 'pixels'].shape == (2, 32, 32, 3), data['next', 'pixels'].shape\n"
        "print('ok')\n"
    )
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240)
    if proc.returncode != 0 and ("GL" in proc.stderr or "EGL" in proc.stderr or "render" in proc.stderr.lower()):
        pytest.skip(f"no offscreen GL rendering here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
