"""Hot-path transforms added for drop-in compatibility, on a cheap torch env: a 64-step rollout each.

Run with ``--backend tdrl`` (default) or ``--backend torchrl`` from the TorchRL venv.
"""

from __future__ import annotations

import pytest
import torch
from _backend import sub
from tensordict import TensorDict

envs = sub("envs")


def _rollout_env(make_transform):
    env = envs.TransformedEnv(envs.GymEnv("Pendulum-v1"), make_transform())
    env.set_seed(0)
    env.rollout(3)
    return env


_TRANSFORMS = {
    "TrajCounter": lambda: envs.Compose(envs.StepCounter(16), envs.TrajCounter()),
    "SignTransform": lambda: envs.SignTransform(in_keys=["observation"], out_keys=["obs_sign"]),
    "BinarizeReward": lambda: envs.BinarizeReward(),
    "PermuteTransform": lambda: envs.Compose(envs.UnsqueezeTransform(-1, in_keys=["observation"]),
                                             envs.PermuteTransform((-1, -2), in_keys=["observation"])),
    "VecNormV2": lambda: envs.VecNormV2(in_keys=["observation", "reward"], decay=0.99),
    "ActionDiscretizer": lambda: envs.ActionDiscretizer(7),
    "NextObservationDelta": lambda: envs.NextObservationDelta(),
    "Stack": lambda: envs.Compose(envs.RenameTransform(["observation"], ["obs2"], create_copy=True),
                                  envs.Stack(in_keys=["observation", "obs2"], out_key="stacked", dim=-2)),
    "ExpandAs": lambda: envs.ExpandAs("done", ref_key="observation", out_key="done_wide"),
    "ActionScaling": lambda: envs.ActionScaling(),
    "TerminateTransform": lambda: envs.TerminateTransform(lambda td: td["observation"][..., 0] > 0.999),
    "FiniteTensorDictCheck": lambda: envs.FiniteTensorDictCheck(),
}


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
def test_transform_rollout(benchmark, name):
    env = _rollout_env(_TRANSFORMS[name])
    benchmark(env.rollout, 64, break_when_any_done=False)
    env.close()


@pytest.mark.parametrize("T", [16, 256])
def test_random_crop_tensordict(benchmark, T):
    data = TensorDict({"obs": torch.randn(32, T, 8), ("next", "obs"): torch.randn(32, T, 8),
                       "done": torch.zeros(32, T, 1, dtype=torch.bool)}, [32, T])
    crop = envs.RandomCropTensorDict(8)
    benchmark(crop, data)


@pytest.mark.parametrize("n_steps", [3])
def test_multi_step_transform_extend(benchmark, n_steps):
    """Writes of 8 envs x 64 steps into a replay buffer that computes n-step returns."""
    data_mod = sub("data")
    T = 64
    chunk = TensorDict({"obs": torch.randn(8, T, 4), ("next", "obs"): torch.randn(8, T, 4),
                        ("next", "reward"): torch.randn(8, T, 1),
                        ("next", "done"): torch.rand(8, T, 1) < 0.05}, [8, T])
    chunk["next", "terminated"] = chunk["next", "done"].clone()
    rb = data_mod.ReplayBuffer(storage=data_mod.LazyTensorStorage(100_000, ndim=2),
                               transform=envs.MultiStepTransform(n_steps, 0.99))
    rb.extend(chunk)
    benchmark(rb.extend, chunk)


def test_next_state_reconstructor(benchmark):
    """Rebuilds ("next", "observation") for a 1024-row sample of 64-step trajectories."""
    data = TensorDict({"observation": torch.randn(1024, 8), ("next", "done"): torch.rand(1024, 1) < 0.02,
                       ("collector", "traj_ids"): torch.arange(1024) // 64}, [1024])
    rebuild = envs.transforms.NextStateReconstructor()
    benchmark(rebuild, data)
