"""Slow: offline CQL/IQL learn from a noisy scripted CartPole dataset a policy far better than random."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import TensorDictModule

from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import GymEnv
from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.run import evaluate_run, train_run

#: random actions on CartPole-v1 last about 20 steps; the behaviour policy below, 157-168 (seeds 0-2).
RANDOM_RETURN = 22.0
#: the offline policies measured 484-500 (see the test's docstring): a wide margin under the lowest.
THRESHOLD = 400.0


class NoisyController(torch.nn.Module):
    """Pushes towards the pole's fall (``3 * angle + angular velocity``), a random action with prob ``eps``."""

    def __init__(self, eps: float, generator: torch.Generator) -> None:
        super().__init__()
        self.eps, self.generator = eps, generator

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        push = (3 * obs[..., 2] + obs[..., 3] > 0).long()
        noise = torch.rand(push.shape, generator=self.generator) < self.eps
        random = torch.randint(0, 2, push.shape, generator=self.generator)
        return torch.nn.functional.one_hot(torch.where(noise, random, push), 2)


def _dataset(path, *, frames: int, eps: float, seed: int) -> float:
    env = GymEnv("CartPole-v1")
    env.set_seed(seed)
    policy = TensorDictModule(NoisyController(eps, torch.Generator().manual_seed(seed)), ["observation"], ["action"])
    data = env.rollout(frames, policy, break_when_any_done=False)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(frames))
    buffer.extend(data)
    buffer.dumps(path)
    done = data["next", "done"].squeeze(-1)
    return float(data["next", "reward"].sum() / done.sum().clamp_min(1))


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["cql", "iql"])
@pytest.mark.parametrize("seed", [0])
def test_offline_policy_beats_random_and_the_behaviour_policy(algo, seed, tmp_path):
    """20k transitions of a half-random controller; 3k gradient steps of 64x64 networks.

    Measured (last policy, 10 episodes; behaviour policy 157.5 / 161.3 / 168.1 for seeds 0 / 1 / 2):
    CQL 484.4 +- 31.3 / 495.1 +- 14.7 / 500.0 +- 0.0; IQL 499.3 +- 2.1 / 486.1 +- 41.7 / 500.0 +- 0.0.
    """
    behaviour = _dataset(tmp_path / "data", frames=20_000, eps=0.5, seed=seed)
    cfg = compose_run_config([f"preset={algo}_cartpole", f"dataset.path={tmp_path / 'data'}", f"seed={seed}",
                          f"run_dir={tmp_path / 'run'}", "network.num_cells=[64,64]", "optim.gradient_steps=3000",
                          "trainer.optim_steps_per_batch=500", "eval.interval=0", "eval.episodes=1",
                          "trainer.progress_bar=false", "logger.tensorboard=false"])
    train_run(cfg, progress_bar=False)
    mean, _, _ = evaluate_run(tmp_path / "run", episodes=10, policy="last")
    assert behaviour < THRESHOLD
    assert mean >= THRESHOLD > 10 * RANDOM_RETURN, f"{algo} seed {seed}: {mean} (behaviour policy {behaviour:.1f})"
