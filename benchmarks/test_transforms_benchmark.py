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
