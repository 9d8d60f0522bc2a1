"""TorchRL's private ``_make_*`` config factories resolve under ``tdrl.`` (a TorchRL YAML after the import swap).

A TorchRL script that calls ``hydra.utils.instantiate`` itself on its YAML reaches these names directly; tdrl's
own compose path rewrites them to the public factories.
"""

from __future__ import annotations

import json
import pathlib

import pytest
import torch
from hydra.utils import get_method, instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict

from tdrl.modules import TanhModule
from tdrl.trainers.algorithms.configs.torchrl_targets import rewrite_torchrl_targets

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torchrl_configstore.json").read_text())
_TARGETS = sorted({c["target"] for g in FIXTURE["groups"].values() for c in g.values()
                   if c.get("target") and "._make_" in c["target"]})
# TorchRL factories of components tdrl does not have (see test_torchrl_configstore_parity.MISSING_CONFIGS)
_ABSENT = {"_make_qmixer_loss",
           "_make_trackio_logger", "_make_grpo_trainer", "_make_offline_to_online_trainer",
           "_make_expand_as_transform"}
PROVIDED = [t for t in _TARGETS if t.rpartition(".")[2] not in _ABSENT]


def test_fixture_lists_torchrl_factories() -> None:
    assert len(PROVIDED) >= 28


@pytest.mark.parametrize("target", PROVIDED)
def test_swapped_private_factory_resolves(target: str) -> None:
    swapped = "tdrl." + target.removeprefix("torchrl.")
    assert callable(get_method(swapped))


@pytest.mark.parametrize("target", PROVIDED)
def test_compose_path_rewrites_it_to_the_public_factory(target: str) -> None:
    cfg = OmegaConf.create({"x": {"_target_": "tdrl." + target.removeprefix("torchrl.")}})
    rewrite_torchrl_targets(cfg)
    public = cfg.x._target_
    assert not public.rpartition(".")[2].startswith("_"), public
    assert get_method(public) is get_method("tdrl." + target.removeprefix("torchrl."))


def test_plain_instantiate_of_a_swapped_torchrl_yaml_node() -> None:
    node = OmegaConf.create({
        "_target_": "tdrl.trainers.algorithms.configs.modules._make_tanh_module",
        "in_keys": ["param"], "out_keys": ["action"], "low": -2.0, "high": 2.0,
    })
    module = instantiate(node)
    assert isinstance(module, TanhModule)
    out = module(TensorDict({"param": torch.full((3, 1), 50.0)}, [3]))
    assert torch.allclose(out["action"], torch.full((3, 1), 2.0))


def test_reward_sum_factory_reads_nested_keys() -> None:
    node = OmegaConf.create({"_target_": "tdrl.trainers.algorithms.configs.transforms._make_reward_sum_transform",
                             "in_keys": [["agents", "reward"]]})
    assert instantiate(node).in_keys == [("agents", "reward")]
