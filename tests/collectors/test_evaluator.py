"""``tdrl.collectors.Evaluator``: metrics golden-tested against TorchRL 0.14.1, background evaluation bounded."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import Evaluator
from tdrl.collectors._evaluator import episode_metrics
from tdrl.envs import GymEnv, PendulumEnv, RewardSum, TransformedEnv

GOLDEN = Path(__file__).parent / "golden" / "evaluator_torchrl_0_14_1.json"
SCENARIO = {"num_trajectories": 3, "max_steps": 20, "seed": 0}  # kept identical to record_evaluator_golden.SCENARIO
WAIT = 60.0


class BalancePolicy(torch.nn.Module):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot((obs[..., 1] > 0).long(), 2)


def _cartpole_evaluator(*, torchrl_resets: bool = False, **kwargs) -> Evaluator:
    env = GymEnv("CartPole-v1")
    env.set_seed(SCENARIO["seed"])
    if torchrl_resets:
        # TorchRL's collector resets the env when it is built and its evaluator resets it again: one more
        # reset than tdrl's, so the seeded episodes start one later (docs/differences.md).
        env.reset()
    policy = TensorDictModule(BalancePolicy(), in_keys=["observation"], out_keys=["action"])
    return Evaluator(env, policy, num_trajectories=SCENARIO["num_trajectories"], max_steps=SCENARIO["max_steps"],
                     collector_kwargs={"auto_register_policy_transforms": False}, **kwargs)


@pytest.fixture
def evaluators():
    made: list[Evaluator] = []
    yield made
    for evaluator in made:
        evaluator.shutdown(timeout=WAIT)
        assert evaluator._thread is None


def test_metrics_match_torchrl(evaluators):
    evaluator = _cartpole_evaluator(torchrl_resets=True)
    evaluators.append(evaluator)
    result = evaluator.evaluate(step=7)
    golden = json.loads(GOLDEN.read_text())
    assert set(result) == set(golden) | {"eval/fps"}
    for key, expected in golden.items():
        assert result[key] == pytest.approx(expected), key
    assert result["eval/fps"] > 0


class ThetaPolicy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def forward(self, th: torch.Tensor, thdot: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.stack([th, thdot], -1)).clamp(-2, 2)


def _pendulum_evaluator(**kwargs) -> tuple[Evaluator, TensorDictModule]:
    policy = TensorDictModule(ThetaPolicy(), in_keys=["th", "thdot"], out_keys=["action"])
    env = TransformedEnv(PendulumEnv(), RewardSum())
    return Evaluator(env, policy, num_trajectories=2, max_steps=6, **kwargs), policy


def test_returns_are_episode_sums_and_weights_load(evaluators):
    evaluator, policy = _pendulum_evaluator(log_prefix="test")
    evaluators.append(evaluator)
    seen = []
    evaluator._on_result = seen.append
    evaluator._metrics_fn = lambda batch: {"frames": batch.numel()}
    first = evaluator.evaluate()
    assert first["test/num_episodes"] == 2 and first["test/episode_length"] == 6.0
    assert first["test/step"] == 0 and first["test/frames"] == 12
    zero = TensorDictModule(ThetaPolicy(), in_keys=["th", "thdot"], out_keys=["action"])
    for p in zero.parameters():
        p.data.zero_()
    second = evaluator.evaluate(weights=zero)
    assert second["test/step"] == 1
    assert all(float(p.detach().abs().sum()) == 0 for p in policy.parameters())  # the weights were loaded
    assert [float(td["test/step"]) for td in seen] == [0.0, 1.0]
    # the return formula: each episode's reward sum, averaged (on a batch of the same collector)
    collector = evaluator._collector
    collector.reset()
    batch = next(evaluator._iterator)
    sums = [float(batch[batch["collector", "traj_ids"] == i]["next", "reward"].sum())
            for i in batch["collector", "traj_ids"].unique()]
    assert episode_metrics(batch, ("next", "reward"))["reward"] == pytest.approx(sum(sums) / len(sums), rel=1e-5)


def test_background_evaluation_and_busy_policies(evaluators):
    evaluator, _ = _pendulum_evaluator(busy_policy="skip")
    evaluators.append(evaluator)
    assert evaluator.poll() is None and not evaluator.pending
    gate = threading.Event()
    evaluator._metrics_fn = lambda batch: gate.wait(WAIT) and {}
    assert evaluator.trigger_eval(step=3)
    assert evaluator.pending
    assert evaluator.trigger_eval(step=4) is False  # skipped while the first runs
    with pytest.raises(RuntimeError, match="pending"):
        evaluator.state_dict()
    gate.set()
    result = evaluator.wait(timeout=WAIT)
    assert result is not None and result["eval/step"] == 3
    assert not evaluator.pending
    evaluator._busy_policy = "error"
    gate.clear()
    assert evaluator.trigger_eval(step=5)
    with pytest.raises(RuntimeError, match="already pending"):
        evaluator.trigger_eval(step=6)
    gate.set()
    assert evaluator.wait(timeout=WAIT)["eval/step"] == 5
    evaluator._busy_policy = "queue"
    gate.clear()
    assert evaluator.trigger_eval(step=7) and evaluator.trigger_eval(step=8)
    gate.set()
    got = [evaluator.wait(timeout=WAIT)["eval/step"]]
    got.append((evaluator.poll(timeout=WAIT) or {}).get("eval/step"))
    assert got == [7, 8]
    assert evaluator.state_dict() == {"step_counter": 0}


def test_background_failure_is_raised_to_caller(evaluators):
    evaluator, _ = _pendulum_evaluator()
    evaluators.append(evaluator)
    evaluator._metrics_fn = lambda batch: 1 / 0
    evaluator.trigger_eval()
    with pytest.raises(RuntimeError, match="background evaluation failed"):
        evaluator.wait(timeout=WAIT)


def test_state_dict_round_trip_and_factory(evaluators):
    built = []

    def factory(env):
        built.append(env)
        return TensorDictModule(ThetaPolicy(), in_keys=["th", "thdot"], out_keys=["action"])

    evaluator = Evaluator(PendulumEnv, policy_factory=factory, num_trajectories=1, max_steps=3)
    evaluators.append(evaluator)
    assert not built  # built on the first evaluation
    evaluator.evaluate()
    assert len(built) == 1
    state = evaluator.state_dict()
    other = Evaluator(PendulumEnv(), num_trajectories=1, max_steps=3)
    evaluators.append(other)
    other.load_state_dict(state)
    assert other.evaluate()["eval/step"] == 1


def test_bad_arguments():
    with pytest.raises(ValueError, match="backend='ray'"):
        Evaluator(PendulumEnv(), backend="ray")
    with pytest.raises(ValueError, match="busy_policy must be"):
        Evaluator(PendulumEnv(), busy_policy="drop")
    with pytest.raises(ValueError, match="num_trajectories must be a positive int"):
        Evaluator(PendulumEnv(), num_trajectories=0)
    with pytest.raises(ValueError, match="collector_cls"):
        Evaluator(PendulumEnv(), collector_cls="MultiSyncCollector")
    with pytest.raises(ValueError, match="weight_sync_schemes"):
        Evaluator(PendulumEnv(), weight_sync_schemes={"policy": object()})
    with pytest.raises(TypeError, match="weights must be"):
        Evaluator(PendulumEnv(), num_trajectories=1, max_steps=2).evaluate(weights=3)
