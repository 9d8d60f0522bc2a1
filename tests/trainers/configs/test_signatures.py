"""Every registered config matches its ``_target_``'s signature, so configs and classes cannot drift apart."""

from __future__ import annotations

import dataclasses

import pytest
from hydra.core.config_store import ConfigStore

from tdrl.trainers.algorithms.configs import REGISTRY, signature_of
from tdrl.trainers.algorithms.configs.validation import TargetSignature

_SPECIAL = {"_target_", "_partial_", "_convert_", "_recursive_"}
# Arguments a partial config gets from the trainer factory, per group.
# DreamerV3Optimizer names its first argument `parameters`, as TorchRL 0.14.1 does
_COMPLETED_LATER = {"optimizer": {"params", "parameters"}, "lr_scheduler": {"optimizer"}}
# TorchRL's config names per group (from its ConfigStore registrations) that tdrl must provide.
_TORCHRL_NAMES = {
    "env": {"gym", "batched_env", "transformed_env", "dm_control"},
    "network": {"mlp", "convnet", "tensordict_module"},
    "model": {"tanh_normal", "value", "qvalue"},
    "transform": {"noop_reset", "step_counter", "compose", "double_to_float", "reward_sum", "init_tracker",
                  "cat_frames", "observation_norm", "vec_norm", "reward_scaling", "exclude", "select"},
    "loss": {"ppo", "a2c", "reinforce", "sac", "dqn", "ddpg", "td3"},
    "value": {"gae"},
    "target_net_updater": {"soft", "hard"},
    "replay_buffer": {"base", "tensordict"},
    "storage": {"list", "lazy_tensor", "lazy_memmap"},
    "sampler": {"random", "without_replacement", "prioritized", "slice", "slice_without_replacement"},
    "writer": {"round_robin"},
    "collector": {"sync", "async", "multi_sync", "multi_async"},
    "trainer": {"ppo", "a2c", "reinforce", "sac", "dqn", "ddpg", "td3"},
    "optimizer": {"adam", "adamw", "sgd", "rmsprop", "adagrad", "adamax", "radam", "nadam"},
    "logger": {"csv", "tensorboard", "wandb"},
}

CASES = [(group, name, cls) for group, configs in REGISTRY.items() for name, cls in configs.items()]


def _fields(cls: type) -> tuple[set[str], dict[str, dataclasses.Field]]:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    return set(fields) - _SPECIAL, fields


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


@pytest.mark.parametrize(("group", "name", "cls"), CASES, ids=[f"{g}/{n}" for g, n, _ in CASES])
def test_fields_match_target_signature(group: str, name: str, cls: type) -> None:
    names, fields = _fields(cls)
    target = _default(fields["_target_"])
    sig: TargetSignature = signature_of(target)
    assert not sig.open, f"{target} takes **kwargs that cannot be checked: give the config a factory"
    unknown = names - sig.accepted
    assert not unknown, f"{group}/{name}: fields {sorted(unknown)} are not parameters of {target}"
    partial = bool(_default(fields["_partial_"])) if "_partial_" in fields else False
    missing = sig.required - names - (_COMPLETED_LATER.get(group, set()) if partial else set())
    assert not missing, f"{group}/{name}: required parameters {sorted(missing)} of {target} have no field"


@pytest.mark.parametrize("group", sorted(_TORCHRL_NAMES))
def test_torchrl_names_are_registered(group: str) -> None:
    stored = {n.removesuffix(".yaml") for n in ConfigStore.instance().list(group)}
    assert _TORCHRL_NAMES[group] <= stored, sorted(_TORCHRL_NAMES[group] - stored)


def test_drift_is_detected() -> None:
    @dataclasses.dataclass
    class Drifted:
        in_features: int = 2
        out_feature: int = 3  # renamed by mistake
        _target_: str = "torch.nn.Linear"

    names, _ = _fields(Drifted)
    sig = signature_of(Drifted._target_)
    assert names - sig.accepted == {"out_feature"}
    assert sig.required - names == {"out_features"}
