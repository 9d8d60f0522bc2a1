"""``Collector.start()``: background collection into the replay buffer, stopped by ``async_shutdown()``."""

from __future__ import annotations

import time

import pytest

from tdrl.collectors import Collector
from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import PendulumEnv


def _wait_for(predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_start_fills_the_buffer_until_total_frames() -> None:
    rb = ReplayBuffer(storage=LazyTensorStorage(100))
    collector = Collector(PendulumEnv(seed=0), frames_per_batch=10, total_frames=30, replay_buffer=rb)
    collector.start()
    _wait_for(lambda: not collector.is_running())
    assert len(rb) == 30
    collector.async_shutdown()


def test_async_shutdown_stops_an_endless_collection() -> None:
    rb = ReplayBuffer(storage=LazyTensorStorage(1000))
    collector = Collector(PendulumEnv(seed=0), frames_per_batch=5, total_frames=-1, replay_buffer=rb)
    collector.start()
    collector.start()  # already running: no second thread
    _wait_for(lambda: len(rb) >= 10)
    assert collector.is_running()
    collector.async_shutdown(timeout=30)
    assert not collector.is_running()
    n = len(rb)
    time.sleep(0.05)
    assert len(rb) == n and n % 5 == 0


def test_start_needs_a_replay_buffer() -> None:
    collector = Collector(PendulumEnv(), frames_per_batch=5, total_frames=5)
    with pytest.raises(RuntimeError, match="replay_buffer="):
        collector.start()
    collector.shutdown()


def test_background_error_is_raised_by_async_shutdown() -> None:
    def failing_policy(td):
        raise ValueError("policy exploded")

    rb = ReplayBuffer(storage=LazyTensorStorage(10))
    collector = Collector(PendulumEnv(), failing_policy, frames_per_batch=5, total_frames=10, replay_buffer=rb,
                          trust_policy=True)
    collector.start()
    _wait_for(lambda: not collector.is_running())
    with pytest.raises(ValueError, match="policy exploded"):
        collector.async_shutdown()
