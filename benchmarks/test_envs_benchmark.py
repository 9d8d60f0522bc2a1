"""Environment benchmarks, with the workload names and sizes of TorchRL's ``test_envs_benchmark.py``.

Run with ``--backend tdrl`` (default) or ``--backend torchrl`` from the TorchRL venv.
"""

from __future__ import annotations

import functools
import importlib.util

import pytest
import torch
from _backend import has, sub
from tensordict import TensorDict

envs = sub("envs")

_HAS_DMC = importlib.util.find_spec("dm_control") is not None
_needs_dmc = pytest.mark.skipif(not _HAS_DMC, reason="dm_control is not installed (the `dmc` extra)")
_DEVICE = "cuda:0" if torch.cuda.device_count() else "cpu"


def make_simple_env():
    env = envs.DMControlEnv("cheetah", "run", device=_DEVICE)
    env.rollout(3)
    return env


def make_transformed_env():
    env = envs.TransformedEnv(envs.DMControlEnv("cheetah", "run", device=_DEVICE), envs.StepCounter(50))
    env.rollout(3)
    return env


def make_serial_env():
    env = envs.SerialEnv(3, lambda: envs.DMControlEnv("cheetah", "run", device=_DEVICE))
    env.rollout(3)
    return env


def make_parallel_env():
    env = envs.ParallelEnv(3, lambda: envs.DMControlEnv("cheetah", "run", device=_DEVICE))
    env.rollout(3)
    return env


def execute_env(env):
    env.rollout(1000, break_when_any_done=False)


@_needs_dmc
def test_simple(benchmark):
    benchmark(execute_env, make_simple_env())


@_needs_dmc
@pytest.mark.skipif(
    not has("envs", "TransformedEnv"), reason="TransformedEnv/StepCounter not implemented yet"
)
def test_transformed(benchmark):
    benchmark(execute_env, make_transformed_env())


@_needs_dmc
@pytest.mark.skipif(not has("envs", "SerialEnv"), reason="SerialEnv not implemented yet")
def test_serial(benchmark):
    _bench_and_close(benchmark, make_serial_env())


@_needs_dmc
@pytest.mark.skipif(not has("envs", "ParallelEnv"), reason="ParallelEnv not implemented yet")
def test_parallel(benchmark):
    _bench_and_close(benchmark, make_parallel_env())


def _policy_rollout(env):
    # A policy forces the step-by-step path (the parent samples actions, workers step), which is what a
    # collector or a trained policy does; policy-free rollouts of batched envs run inside each sub-env.
    policy = sub("collectors").RandomPolicy(env.action_spec)
    env.rollout(1000, policy, break_when_any_done=False)


@_needs_dmc
@pytest.mark.skipif(not has("envs", "SerialEnv"), reason="SerialEnv not implemented yet")
def test_serial_with_policy(benchmark):
    env = make_serial_env()
    try:
        benchmark(_policy_rollout, env)
    finally:
        env.close()


@_needs_dmc
@pytest.mark.skipif(not has("envs", "ParallelEnv"), reason="ParallelEnv not implemented yet")
def test_parallel_with_policy(benchmark):
    env = make_parallel_env()
    try:
        benchmark(_policy_rollout, env)
    finally:
        env.close()


def _bench_and_close(benchmark, env):
    try:
        benchmark(execute_env, env)
    finally:
        env.close()


@_needs_dmc
def test_raw_dm_control(benchmark):
    """Library-independent floor: 1000 steps of a plain dm_control loop with random actions."""
    import numpy as np
    from dm_control import suite

    env = suite.load("cheetah", "run")
    spec = env.action_spec()
    rng = np.random.default_rng(0)

    def loop():
        env.reset()
        for _ in range(1000):
            ts = env.step(rng.uniform(spec.minimum, spec.maximum))
            if ts.last():
                env.reset()

    benchmark(loop)


def _step_mdp_input(nested: bool) -> tuple[TensorDict, dict]:
    def key(name):
        return ("agent", name) if nested else name

    root = {key("action"): 0, key("done"): 0, key("obs"): 0, key("other"): 0}
    nxt = {key("action"): 1, key("reward"): 1, key("done"): 1, key("obs"): 1}
    td = TensorDict(batch_size=[])
    for k, v in root.items():
        td.set(k, torch.tensor(v))
    for k, v in nxt.items():
        td.set(("next", *((k,) if isinstance(k, str) else k)), torch.tensor(v))
    keys = {"action_keys": key("action"), "reward_keys": key("reward"), "done_keys": key("done")}
    return td, keys


# Decorators stack: the pytest ID lists the bottom one first, as in TorchRL's suite.
@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("keep_other", [True, False])
@pytest.mark.parametrize("exclude_reward", [True, False])
@pytest.mark.parametrize("exclude_done", [True, False])
@pytest.mark.parametrize("exclude_action", [True, False])
def test_step_mdp_speed(benchmark, exclude_action, exclude_done, exclude_reward, keep_other, nested):
    td, keys = _step_mdp_input(nested)
    benchmark(
        envs.step_mdp,
        td,
        keep_other=keep_other,
        exclude_reward=exclude_reward,
        exclude_done=exclude_done,
        exclude_action=exclude_action,
        **keys,
    )


# Decorators as in TorchRL's suite (so the IDs match): the functional frame stacking on a batch of
# trajectories (batch, time, channels).
@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("N", [4, 16])
def test_cat_frames_functional(benchmark, padding, N):
    cat_frames = sub("envs.transforms.functional").cat_frames
    tensor = torch.randn(32, 200, 8, device=_DEVICE)
    benchmark(cat_frames, tensor, N, dim=-1, padding=padding, time_dim=-2)


def _startup_factory(kind: str):
    if kind == "dm_control":
        return functools.partial(envs.DMControlEnv, "cheetah", "run")
    return functools.partial(envs.GymEnv, "Pendulum-v1")


# Not in TorchRL's suite: the cost of bringing up 3 workers (build each env, exchange specs, allocate the
# shared buffers) until the first reset has returned.
@pytest.mark.parametrize("kind", ["dm_control", "gym"])
def test_parallel_startup(benchmark, kind):
    if kind == "dm_control" and not _HAS_DMC:
        pytest.skip("dm_control is not installed (the `dmc` extra)")
    if not has("envs", "ParallelEnv") or (kind == "gym" and not has("envs", "GymEnv")):
        pytest.skip("ParallelEnv/GymEnv not available in this backend")
    factory = _startup_factory(kind)
    opened = []

    def close_previous():
        while opened:
            opened.pop().close()
        return (), {}

    def start():
        env = envs.ParallelEnv(3, factory)
        opened.append(env)
        env.reset()

    try:
        benchmark.pedantic(start, setup=close_previous, rounds=3, iterations=1)
    finally:
        close_previous()
