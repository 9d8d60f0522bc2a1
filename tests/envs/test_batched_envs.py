"""SerialEnv / ParallelEnv: layout, seeding, partial resets, kwargs, lifecycle, start methods, faults."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

import pytest
import torch

from tdrl.envs import ParallelEnv, PendulumEnv, SerialEnv, StepCounter, TransformedEnv

from .transforms._envs import VectorEnv

BATCHED = [SerialEnv, ParallelEnv]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): look at its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _shm_entries(pids: list[int]) -> set[str]:
    """Shared-memory files named after our processes (other users' entries on this machine are ignored)."""
    if not os.path.isdir("/dev/shm"):
        return set()
    marks = [f"_{pid}_" for pid in pids]
    return {name for name in os.listdir("/dev/shm") if any(m in name for m in marks)}


@pytest.mark.parametrize("cls", BATCHED)
def test_layout_and_specs(cls):
    env = cls(3, VectorEnv)
    try:
        assert env.batch_size == torch.Size([3])
        assert env.observation_spec["observation"].shape == (3, 3)
        assert env.full_action_spec["action"].shape == (3, 2)
        td = env.rollout(4, break_when_any_done=False)
        assert td.batch_size == (3, 4)
        assert td["next", "observation"].shape == (3, 4, 3)
    finally:
        env.close()
    assert env.is_closed


@pytest.mark.parametrize("cls", BATCHED)
def test_lazy_start_and_restart(cls):
    env = cls(2, VectorEnv)
    assert env.is_closed  # nothing built yet
    env.start()
    assert not env.is_closed
    env.close()
    assert env.is_closed
    td = env.reset()  # restarts
    assert td.batch_size == (2,)
    env.close()


@pytest.mark.parametrize("cls", BATCHED)
def test_seeds_chain_like_single_envs(cls):
    env = cls(3, VectorEnv)
    try:
        out_seed = env.set_seed(7)
        first = env.reset()["observation"]
    finally:
        env.close()
    seed, expected = 7, []
    for _ in range(3):
        single = VectorEnv()
        seed_next = single.set_seed(seed)
        expected.append(single.reset()["observation"])
        seed = seed_next
    torch.testing.assert_close(first, torch.stack(expected))
    assert out_seed == seed
    assert not torch.allclose(first[0], first[1])


def test_serial_and_parallel_agree():
    def run(cls):
        env = cls(2, lambda: TransformedEnv(VectorEnv(episode_len=3), StepCounter(2)))
        try:
            env.set_seed(3)
            torch.manual_seed(0)
            return env.rollout(7, break_when_any_done=False)
        finally:
            env.close()

    serial, parallel = run(SerialEnv), run(ParallelEnv)
    for key in [("next", "observation"), ("next", "step_count"), ("next", "done"), "observation", "step_count"]:
        torch.testing.assert_close(serial[key], parallel[key])
    assert (serial["next", "step_count"] <= 2).all()  # auto-resets happened inside the workers


@pytest.mark.parametrize("cls", BATCHED)
def test_partial_reset(cls):
    env = cls(3, VectorEnv)
    try:
        td = env.reset()
        td = env.rand_step(td)
        td = env.step_mdp(td)
        before = td["observation"].clone()
        td["_reset"] = torch.tensor([[True], [False], [False]])
        out = env.reset(td)
        assert (out["t"][1:] == 1).all() and (out["t"][0] == 0).all()
        torch.testing.assert_close(out["observation"][1:], before[1:])
        assert not torch.allclose(out["observation"][0], before[0])
    finally:
        env.close()


@pytest.mark.parametrize("cls", BATCHED)
def test_create_env_kwargs_per_worker_and_update(cls):
    env = cls(2, VectorEnv, create_env_kwargs=[{"episode_len": 2}, {"episode_len": 4}])
    try:
        td = env.rollout(4, break_when_any_done=False)
        assert td["next", "t"][0].max() == 2 and td["next", "t"][1].max() == 4
    finally:
        env.close()
    env.update_kwargs({"episode_len": 3})
    try:
        td = env.rollout(4, break_when_any_done=False)
        assert td["next", "t"].max() == 3
    finally:
        env.close()


@pytest.mark.timeout(180)
def test_parallel_spawn_start_method():
    # One worker: a spawned process re-imports torch and tdrl, which is most of this test's time.
    env = ParallelEnv(1, PendulumEnv, mp_start_method="spawn")
    try:
        td = env.rollout(3, lambda t: env.rand_action(t))
        assert td.batch_size == (1, 3)
        assert env.rollout(3, break_when_any_done=False).batch_size == (1, 3)
    finally:
        env.close()
    assert not mp.active_children()


def test_serial_for_single():
    env = ParallelEnv(1, VectorEnv, serial_for_single=True)
    assert isinstance(env, SerialEnv)
    assert env.rollout(2).batch_size == (1, 2)
    env.close()


def test_transform_over_parallel_resets_partially():
    env = TransformedEnv(ParallelEnv(2, VectorEnv, create_env_kwargs=[{"episode_len": 2}, {"episode_len": 5}]),
                         StepCounter())
    try:
        td = env.rollout(6, break_when_any_done=False)
        assert td["next", "step_count"][0].max() == 2 and td["next", "step_count"][1].max() == 5
    finally:
        env.close()


@pytest.mark.timeout(60)
def test_worker_exception_is_reported():
    env = ParallelEnv(2, VectorEnv, create_env_kwargs=[{}, {"fail_at": 3}])
    try:
        env.reset()
        with pytest.raises(RuntimeError, match="(?s)worker 1 raised.*deliberate failure"):
            env.rollout(10, break_when_any_done=False)
    finally:
        env.close()
    assert not mp.active_children()


@pytest.mark.timeout(60)
def test_killed_worker_is_detected_and_cleaned_up():
    env = ParallelEnv(3, VectorEnv)
    env.reset()
    pids = env.worker_pids
    os.kill(pids[1], signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="worker 1 .* died"):
        env.rollout(50, break_when_any_done=False)
    assert time.monotonic() - t0 < 30  # reported promptly, never a hang
    assert env.is_closed
    for pid in pids:
        assert not _alive(pid), f"worker {pid} left behind"
    assert not mp.active_children()
    assert not _shm_entries([os.getpid(), *pids])


@pytest.mark.timeout(60)
def test_close_releases_everything():
    env = ParallelEnv(2, VectorEnv)
    env.rollout(3)
    pids = env.worker_pids
    env.close()
    for pid in pids:
        assert not _alive(pid)
    assert not mp.active_children()
    assert not _shm_entries([os.getpid(), *pids])
    with pytest.raises(RuntimeError, match="closed"):
        env._command([0], b"s", "step")


def test_bad_create_env_fn_count():
    with pytest.raises(ValueError, match="3 callables"):
        SerialEnv(3, [VectorEnv, VectorEnv])
    with pytest.raises(ValueError, match="num_workers"):
        ParallelEnv(0, VectorEnv)


@pytest.mark.timeout(60)
def test_worker_construction_error_is_reported():
    def broken():
        raise OSError("no such simulator")

    env = ParallelEnv(2, broken)
    with pytest.raises(RuntimeError, match="no such simulator"):
        env.start()
    assert not mp.active_children()


@pytest.mark.parametrize("cls", BATCHED)
def test_random_rollout_fast_path_matches_stepwise_layout(cls):
    env = cls(2, lambda: TransformedEnv(VectorEnv(episode_len=3), StepCounter()))
    try:
        torch.manual_seed(1)
        fast = env.rollout(6, break_when_any_done=False)
        torch.manual_seed(1)
        again = env.rollout(6, break_when_any_done=False)
        slow = env.rollout(6, lambda td: env.rand_action(td), break_when_any_done=False)
    finally:
        env.close()
    torch.testing.assert_close(fast["action"], again["action"])  # reproducible via the global torch seed
    assert fast.batch_size == slow.batch_size == (2, 6)
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    assert fast.names == slow.names == [None, "time"]
    for td in (fast, slow):
        nxt = td["next", "step_count"]
        assert (nxt == td["step_count"] + 1).all() and nxt.max() == 3
        assert (td["next", "t"] == nxt).all()


@pytest.mark.timeout(120)
def test_dm_control_parallel_with_transforms():
    pytest.importorskip("dm_control")
    from tdrl.envs import DMControlEnv, DoubleToFloat
    from tdrl.envs.utils import check_env_specs

    env = TransformedEnv(
        ParallelEnv(2, lambda: TransformedEnv(DMControlEnv("cheetah", "run"), StepCounter(5))), DoubleToFloat()
    )
    try:
        check_env_specs(env)
        td = env.rollout(12, break_when_any_done=False)
        assert td["next", "position"].dtype == torch.float32 and td["action"].dtype == torch.float32
        assert td["next", "step_count"].max() == 5 and td["next", "truncated"].any()
        td = env.rollout(4, lambda t: env.rand_action(t), break_when_any_done=False)
        assert td.batch_size == (2, 4)
    finally:
        env.close()


def test_vecnorm_statistics_shared_by_parallel_workers():
    from tdrl.envs import VecNorm

    stats = VecNorm.build_td_for_shared_vecnorm(VectorEnv(), ["observation"])
    lock = mp.get_context("fork").Lock()
    env = ParallelEnv(
        2, lambda: TransformedEnv(VectorEnv(), VecNorm(in_keys=["observation"], shared_td=stats, lock=lock))
    )
    try:
        env.rollout(10, break_when_any_done=False)
    finally:
        env.close()
    # Both workers updated the parent's shared statistics: 2 x (2 resets + 10 steps; episodes last 7
    # steps), with a decay of 0.9999 per update.
    assert 23.9 < float(stats["observation_count"]) <= 24
