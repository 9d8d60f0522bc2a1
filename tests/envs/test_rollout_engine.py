"""The rollout engine (``tdrl.envs.rollout_engine``): one loop for rollouts, collectors and workers."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import tdrl.envs.rollout_engine as engine
from tdrl.collectors import Collector
from tdrl.envs import PendulumEnv, SerialEnv, StepCounter, TransformedEnv
from tdrl.envs.rollout_engine import RolloutLoop, Trajectory, run_rollout


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = engine._run_nonstop

    def spy(env, td, loop):
        calls.append(loop.max_steps)
        return original(env, td, loop)

    monkeypatch.setattr(engine, "_run_nonstop", spy)
    return calls


def test_rollout_collector_and_batched_workers_share_the_engine(engine_calls: list[int]) -> None:
    PendulumEnv(seed=0).rollout(4, break_when_any_done=False)
    assert engine_calls == [4]
    collector = Collector(PendulumEnv(seed=0), frames_per_batch=6, total_frames=6)
    assert [b.shape for b in collector] == [torch.Size([6])]
    collector.shutdown()
    assert engine_calls == [4, 6]
    env = SerialEnv(2, PendulumEnv)
    try:
        assert env.rollout(5, break_when_any_done=False).shape == (2, 5)  # policy-free: inside each sub-env
    finally:
        env.close()
    assert engine_calls == [4, 6, 5, 5]


@pytest.mark.parametrize(
    ("final", "carry_step"), [("none", None), ("step_mdp", 3), ("maybe_reset", 0)]
)
def test_final_carry_modes(final: str, carry_step: int | None) -> None:
    env = TransformedEnv(PendulumEnv(seed=0), StepCounter(max_steps=3))
    traj = run_rollout(env, env.reset(), RolloutLoop(max_steps=3, final_carry=final))
    assert isinstance(traj, Trajectory)
    assert traj.data["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3]
    if carry_step is None:
        assert traj.carry is None
    else:
        assert int(traj.carry["step_count"]) == carry_step  # done at step 3: maybe_reset starts over


def test_on_step_fill_and_interrupt() -> None:
    env = PendulumEnv(seed=0)
    seen: list[float] = []
    fill = TensorDict({"extra": torch.ones(2)}, [])
    loop = RolloutLoop(
        max_steps=10,
        fill=fill,
        on_step=lambda data: seen.append(float(data["next", "reward"])),
        interrupt=lambda: len(seen) == 4,
        final_carry="maybe_reset",
    )
    traj = run_rollout(env, env.reset(), loop)
    assert traj.data.shape == (4,) and len(seen) == 4
    assert traj.data["extra"].shape == (4, 2)
    assert traj.data["next", "reward"].squeeze(-1).tolist() == pytest.approx(seen)


def test_stop_modes_match_rollout_arguments() -> None:
    env = TransformedEnv(PendulumEnv(seed=0, batch_size=[2]), StepCounter(max_steps=3))
    any_done = run_rollout(env, env.reset(), RolloutLoop(max_steps=10, stop="any_done")).data
    assert any_done.shape == (2, 3)
    never = run_rollout(env, env.reset(), RolloutLoop(max_steps=7)).data
    assert never.shape == (2, 7)
    assert never["next", "step_count"][0].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3, 1]


def test_run_rollout_rejects_no_steps() -> None:
    env = PendulumEnv()
    with pytest.raises(ValueError, match="max_steps must be >= 1, got 0"):
        run_rollout(env, env.reset(), RolloutLoop(max_steps=0))


def test_rollout_loop_is_frozen() -> None:
    loop = RolloutLoop(max_steps=2)
    with pytest.raises(AttributeError):
        loop.max_steps = 3  # type: ignore[misc]
