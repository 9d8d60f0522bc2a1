"""TorchRL's historical module paths resolve to the same objects as the package-level names."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    ("module", "package", "names"),
    [
        ("tdrl.envs.transforms.transforms", "tdrl.envs.transforms", ["TransformedEnv", "Compose", "StepCounter",
                                                                   "TrajCounter", "CenterCrop"]),
        ("tdrl.modules.models.models", "tdrl.modules.models", ["MLP", "ConvNet", "DuelingCnnDQNet"]),
        ("tdrl.data.postprocs.postprocs", "tdrl.data.postprocs", ["MultiStep"]),
        ("tdrl.trainers.trainers", "tdrl.trainers", ["Trainer", "LogScalar", "ReplayBufferTrainer"]),
    ],
)
def test_historical_paths(module, package, names):
    mod, pkg = importlib.import_module(module), importlib.import_module(package)
    for name in names:
        assert getattr(mod, name) is getattr(pkg, name)
    for name in mod.__all__:
        assert getattr(mod, name) is getattr(pkg, name)
