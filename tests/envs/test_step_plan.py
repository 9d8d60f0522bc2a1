"""The step pipeline: ``StepPlan`` and the once-per-step post-processing stage (issue 15)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tdrl.data import Unbounded
from tdrl.envs import EnvBase, PendulumEnv, RewardSum, SerialEnv, StepCounter, TransformedEnv
from tdrl.envs.step_plan import StepPlan


@pytest.fixture
def count_complete_step(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = EnvBase.complete_step

    def spy(self, next_tensordict, plan=None):
        calls.append(type(self).__name__)
        return original(self, next_tensordict, plan)

    monkeypatch.setattr(EnvBase, "complete_step", spy)
    return calls


def test_post_processing_runs_once_per_step_of_a_transformed_env(count_complete_step: list[str]) -> None:
    env = TransformedEnv(PendulumEnv(seed=0), StepCounter(max_steps=5))
    env.append_transform(RewardSum())
    td = env.reset()
    count_complete_step.clear()
    env.step(env.rand_action(td))
    assert count_complete_step == ["PendulumEnv"]
    count_complete_step.clear()
    env.rollout(7, break_when_any_done=False)
    assert count_complete_step == ["PendulumEnv"] * 7


def test_post_processing_runs_once_per_sub_env_step_of_a_batched_env(count_complete_step: list[str]) -> None:
    env = SerialEnv(2, lambda: TransformedEnv(PendulumEnv(), StepCounter()))
    try:
        td = env.reset()
        count_complete_step.clear()
        env.step(env.rand_action(td))
        assert count_complete_step == ["PendulumEnv", "PendulumEnv"]
        count_complete_step.clear()
        env.step_and_maybe_reset(env.rand_action(td))
        assert count_complete_step == ["PendulumEnv", "PendulumEnv"]
    finally:
        env.close()


def test_transformed_env_output_is_completed_before_the_transforms_see_it() -> None:
    # The base writes only "terminated": its post-processing stage adds "done", which StepCounter reads.
    env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=2))
    data = env.rollout(4, break_when_any_done=False)
    assert data["next", "done"].squeeze(-1).tolist() == [False, True, False, True]
    assert data["next", "truncated"].squeeze(-1).tolist() == [False, True, False, True]


def test_step_plan_is_frozen_typed_and_rebuilt_after_a_spec_change() -> None:
    env = PendulumEnv()
    plan = env.step_plan
    assert isinstance(plan, StepPlan)
    assert env.step_plan is plan  # built once
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.simple_done = False  # type: ignore[misc]
    env.full_reward_spec = env.full_reward_spec.clone().set("bonus", Unbounded(shape=(1,)))
    rebuilt = env.step_plan
    assert rebuilt is not plan
    assert [k for k, _ in rebuilt.rewards] == ["bonus", "reward"] or [k for k, _ in rebuilt.rewards] == [
        "reward",
        "bonus",
    ]


def test_complete_step_reshapes_rewards_and_completes_done() -> None:
    env = PendulumEnv()
    out = env.reset().empty()
    out.set("reward", torch.zeros(()))  # scalar: the spec says (1,)
    out.set("terminated", torch.zeros(1, dtype=torch.bool))
    env.complete_step(out)
    assert out["reward"].shape == (1,)
    assert out["done"].tolist() == [False]


def test_complete_step_names_a_wrong_reward_size() -> None:
    env = PendulumEnv()
    out = env.reset().empty()
    out.set("reward", torch.zeros(3))
    out.set("terminated", torch.zeros(1, dtype=torch.bool))
    with pytest.raises(ValueError, match="reward 'reward'.*shape \\(3,\\)"):
        env.complete_step(out)


def test_check_step_input_names_the_missing_action() -> None:
    env = PendulumEnv()
    with pytest.raises(KeyError, match="no action entry 'action'"):
        env.check_step_input(env.reset())
