"""TorchRL's import paths for the modules resolve to the same tdrl objects."""

from __future__ import annotations

import importlib

import pytest

import tdrl.modules

PATHS = [
    ("tdrl.modules.distributions", "NormalParamExtractor"),
    ("tdrl.modules.distributions", "TanhNormal"),
    ("tdrl.modules.distributions", "OneHotCategorical"),
    ("tdrl.modules.models", "MLP"),
    ("tdrl.modules.models", "ConvNet"),
    ("tdrl.modules.models", "DuelingCnnDQNet"),
    ("tdrl.modules.tensordict_module", "QValueActor"),
    ("tdrl.modules.tensordict_module", "ProbabilisticActor"),
    ("tdrl.modules.tensordict_module.actors", "QValueActor"),
    ("tdrl.modules.tensordict_module.actors", "TanhModule"),
    ("tdrl.modules.tensordict_module.actors", "ValueOperator"),
    ("tdrl.modules.tensordict_module.common", "SafeModule"),
    ("tdrl.modules.tensordict_module.exploration", "EGreedyModule"),
    ("tdrl.modules.tensordict_module.probabilistic", "SafeProbabilisticModule"),
    ("tdrl.modules.tensordict_module.rnn", "LSTMModule"),
    ("tdrl.modules.tensordict_module.sequence", "SafeSequential"),
    ("tdrl.modules.utils", "mappings"),
    ("tdrl.modules.value_norm", "ValueNorm"),
    ("tdrl.modules.tensordict_module.rnn", "GRUCell"),
    ("tdrl.modules.tensordict_module.rnn", "LSTMCell"),
    ("tdrl.modules.models.exploration", "ConsistentDropout"),
    ("tdrl.modules.models.exploration", "ConsistentDropoutModule"),
    ("tdrl.modules.models", "DistributionalDQNnet"),
    ("tdrl.modules.models.models", "MLP"),
    ("tdrl.modules.tensordict_module.actors", "MultiStepActorWrapper"),
    ("tdrl.modules.tensordict_module.actors", "QValueHook"),
    ("tdrl.modules.tensordict_module.exploration", "AdditiveGaussianWrapper"),
    ("tdrl.modules.distributions.continuous", "NormalParamWrapper"),
    ("tdrl.modules.value_norm", "RunningValueNorm"),
]


@pytest.mark.parametrize("module,name", PATHS)
def test_torchrl_import_paths(module, name):
    obj = getattr(importlib.import_module(module), name)
    assert getattr(tdrl.modules, name) is obj


def test_all_exports_resolve_and_are_unique():
    assert len(tdrl.modules.__all__) == len(set(tdrl.modules.__all__))
    assert [name for name in tdrl.modules.__all__ if not hasattr(tdrl.modules, name)] == []
