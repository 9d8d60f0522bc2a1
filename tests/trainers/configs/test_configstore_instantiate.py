"""Every entry tdrl stores in Hydra's ConfigStore instantiates (defaults plus the values it leaves required).

Trainer entries are built end to end by ``tests/trainers/test_run_algorithms.py`` (each preset composes its
``trainer`` entry with a collector, a loss and a logger), so they are left out here.
"""

from __future__ import annotations

import pathlib

import pytest
import torch
from hydra.core.config_store import ConfigStore
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tdrl.collectors import BaseCollector
from tdrl.data import Bounded, ReplayBuffer, Sampler, Storage, Writer
from tdrl.envs import EnvBase, Transform
from tdrl.modules import RSSMPosteriorV3, RSSMPriorV3
from tdrl.objectives import LossModule, SACLoss, TargetNetUpdater
from tdrl.objectives.value import ValueEstimatorBase
from tdrl.record import Logger
from tdrl.trainers import TrainerHookBase
from tdrl.trainers.algorithms.configs import REGISTRY
from tdrl.trainers.algorithms.configs.modules import (
    make_qvalue_model,
    make_tanh_normal_model,
    make_value_model,
)
from tdrl.weight_update import WeightSyncScheme
from tests.envs.llm._tiny import tiny_tokenizer
from tests.objectives import _dreamer_v3_scenario as dreamer_v3_scenario

# what each group's entries build (partial entries build a callable completed later)
BUILDS: dict[str, type] = {
    "env": EnvBase, "network": torch.nn.Module, "model": torch.nn.Module, "exploration": torch.nn.Module,
    "transform": Transform, "loss": LossModule, "value": ValueEstimatorBase, "target_net_updater": TargetNetUpdater,
    "replay_buffer": ReplayBuffer, "storage": Storage, "sampler": Sampler, "writer": Writer,
    "collector": BaseCollector, "weight_sync_scheme": WeightSyncScheme, "hook": TrainerHookBase, "logger": Logger,
}

_GYM = {"_target_": "tdrl.envs.GymEnv", "env_name": "CartPole-v1"}
_MLP = {"_target_": "tdrl.modules.MLP", "in_features": 4, "out_features": 2, "num_cells": [8]}
_TD_MODULE = {"_target_": "tdrl.trainers.algorithms.configs.modules.make_tensordict_module", "module": _MLP,
              "in_keys": ["observation"], "out_keys": ["param"]}

# (group, name) -> values for the fields the entry leaves required
REQUIRED: dict[tuple[str, str], dict] = {
    ("env", "gym"): {"env_name": "CartPole-v1"},
    ("env", "dm_control"): {"env_name": "cartpole", "task_name": "balance"},
    ("env", "batched_env"): {"create_env_fn": {**_GYM, "_partial_": True}, "batched_env_type": "serial"},
    ("env", "transformed_env"): {"base_env": _GYM, "transform": {"_target_": "tdrl.envs.StepCounter"}},
    ("network", "mlp"): {"in_features": 4, "out_features": 2},
    ("network", "convnet"): {"num_cells": [4]},
    ("network", "tensordict_module"): {"module": _MLP, "in_keys": ["observation"], "out_keys": ["param"]},
    ("network", "tensordict_sequential"): {"modules": [_TD_MODULE]},
    ("network", "qmixer"): {"state_shape": [3], "mixing_embed_dim": 4, "n_agents": 2},
    ("network", "vdn_mixer"): {"n_agents": 2},
    ("model", "tanh_normal"): {"network": {**_MLP, "out_features": 4}},
    ("model", "value"): {"network": {**_MLP, "out_features": 1}},
    ("model", "qvalue"): {"network": _MLP, "action_space": "one_hot"},
    ("model", "categorical"): {"network": _MLP},
    ("model", "tanh_module"): {"in_keys": ["param"], "low": -1.0, "high": 1.0},
    ("transform", "flatten_observation"): {"first_dim": -2, "last_dim": -1},
    ("transform", "rename"): {"in_keys": ["observation"], "out_keys": ["obs"]},
    ("transform", "clip"): {"low": -1.0},
    ("transform", "discrete_action_projection"): {"num_actions_effective": 2, "max_actions": 4},
    ("transform", "unary"): {"in_keys": ["observation"], "out_keys": ["obs_abs"],
                             "fn": {"_target_": "torch.abs", "_partial_": True}},
    ("transform", "linearise_rewards"): {"in_keys": ["reward"]},
    ("transform", "permute"): {"dims": [-1, -3, -2], "in_keys": ["pixels"]},
    ("transform", "random_crop_tensordict"): {"crop_size": 4},
    ("transform", "batch_size"): {"batch_size": [3]},
    ("transform", "stack"): {"in_keys": ["observation", "observation_copy"], "out_keys": ["both"]},
    ("transform", "burn_in"): {"burn_in": 2, "out_keys": ["hidden"], "modules": [{
        "_target_": "tensordict.nn.TensorDictModule", "in_keys": ["observation"], "out_keys": ["out", "hidden"],
        "module": {"_target_": "torch.nn.GRU", "input_size": 4, "hidden_size": 3, "batch_first": True}}]},
    ("transform", "conditional_skip"): {"cond": {"_target_": "builtins.bool", "_partial_": True}},
    ("transform", "conditional_policy_switch"): {"policy": {"_target_": "copy.copy", "_partial_": True},
                                                 "condition": {"_target_": "builtins.bool", "_partial_": True}},
    ("transform", "terminate"): {"stop": {"_target_": "builtins.bool", "_partial_": True}},
    ("transform", "module"): {"module": _TD_MODULE},
    ("transform", "expand_as"): {"in_key": ["done"], "ref_key": ["next", "observation"]},
    ("transform", "hash"): {"in_keys": ["observation"], "out_keys": ["hash"]},
    ("sampler", "slice"): {"num_slices": 2},
    ("sampler", "slice_without_replacement"): {"num_slices": 2},
    ("sampler", "prioritized"): {"max_capacity": 8, "alpha": 0.6, "beta": 0.4},
    ("value", "gae"): {"gamma": 0.99, "lmbda": 0.95},
    ("hook", "batch_subsampler"): {"batch_size": 4},
    ("hook", "clear_cuda_cache"): {"interval": 2},
    ("storage", "lazy_tensor"): {"max_size": 8},
    ("storage", "lazy_memmap"): {"max_size": 8},
    ("storage", "lazy_stack"): {"max_size": 8},
    ("storage", "list"): {"max_size": 8},
    ("storage", "tensor"): {"storage": {"_target_": "tensordict.TensorDict", "batch_size": [8],
                                        "source": {"x": {"_target_": "torch.zeros", "_args_": [8]}}}},
    **{("collector", n): {"create_env_fn": _GYM, "frames_per_batch": 8, "total_frames": 8}
       for n in ("sync", "async")},
    # a YAML list of env constructors, one per worker
    **{("collector", n): {"create_env_fn": [{**_GYM, "_partial_": True}], "frames_per_batch": 8,
                          "total_frames": 8} for n in ("multi_sync", "multi_async")},
    # one Ray actor from a YAML list of env constructors (a local Ray starts on first use: marked integration)
    ("collector", "ray"): {"create_env_fn": [{**_GYM, "_partial_": True}], "frames_per_batch": 8, "total_frames": 8,
                           "num_collectors": 1, "timeout": 300.0},
    ("env", "mo_gym"): {"env_name": "deep-sea-treasure-v0"},
    ("env", "multi_threaded"): {"env_name": "CartPole-v1", "num_workers": 2},
    ("env", "pettingzoo"): {"env_name": "classic/rps_v2", "parallel": True},
    ("env", "vmas"): {"scenario": "navigation", "num_envs": 2},
    ("network", "dreamer_v3_mlp"): {"in_features": 4, "out_features": 2, "depth": 1, "num_cells": 8},
    ("network", "dreamer_v3_discrete_actor"): {"in_features": 4, "out_features": 2, "depth": 1, "num_cells": 8},
    ("network", "dreamer_v3_image_decoder"): {"in_features": 8},
    ("network", "dreamer_v3_seeded_policy"): {"module": _TD_MODULE, "seed": 0},
    ("logger", "csv"): {"exp_name": "x"},
    ("logger", "tensorboard"): {"exp_name": "x"},
    ("logger", "wandb"): {"exp_name": "x", "offline": True},
}


def _networks() -> dict[str, torch.nn.Module]:
    actor = make_tanh_normal_model(torch.nn.Linear(3, 2))
    qvalue = make_value_model(torch.nn.Linear(4, 1), in_keys=["observation", "action"],
                              out_keys=["state_action_value"])
    return {"actor": actor, "qvalue": qvalue, "value": make_value_model(torch.nn.Linear(3, 1))}


def _dreamer_v3_kwargs(group: str, name: str) -> dict | None:
    """The runtime objects of the DreamerV3 entries (``None`` for every other entry)."""
    if (group, name) == ("loss", "dreamer_v3"):  # the three DreamerV3 losses of the golden scenario
        parts = dreamer_v3_scenario.build("tdrl")
        return {"model_loss": parts.model_loss, "actor_loss": parts.actor_loss, "value_loss": parts.value_loss}
    if (group, name) == ("network", "rssm_state_estimator_v3"):
        return {"prior": RSSMPriorV3(action_dim=2, hidden_dim=8, rnn_hidden_dim=8, num_categoricals=2, num_classes=2),
                "posterior": RSSMPosteriorV3(hidden_dim=8, rnn_hidden_dim=8, obs_embed_dim=4, num_categoricals=2,
                                             num_classes=2)}
    return None


def _runtime_kwargs(group: str, name: str, tmp_path: pathlib.Path) -> dict:
    """Objects a config gets at instantiate time in a script (networks, a loss, parameters)."""
    nets = _networks()
    if group == "loss":
        kwargs = {"actor_network": nets["actor"]}
        if name in ("ppo", "a2c", "reinforce"):
            kwargs["critic_network"] = nets["value"]
        elif name in ("sac", "td3", "cql", "iql"):
            kwargs["qvalue_network"] = nets["qvalue"]
        elif name == "tqc":
            kwargs["qvalue_network"] = make_value_model(torch.nn.Linear(4, 5), in_keys=["observation", "action"],
                                                        out_keys=["state_action_value"])
        elif name == "ddpg":
            kwargs["value_network"] = nets["qvalue"]
        elif name == "dqn":
            kwargs = {"value_network": make_qvalue_model(torch.nn.Linear(3, 2), action_space="one_hot")}
        if name == "iql":
            kwargs["value_network"] = nets["value"]
        if name in ("sac", "td3", "cql", "tqc"):
            kwargs["action_spec"] = Bounded(-1.0, 1.0, shape=(2,))
        return kwargs
    if group == "value":
        return {"value_network": nets["value"]}
    if group == "logger":
        return {"log_dir": str(tmp_path)}
    if (group, name) == ("transform", "tokenizer"):
        return {"tokenizer": tiny_tokenizer()}
    return {}


def _loss_for_updater() -> SACLoss:
    nets = _networks()
    return SACLoss(nets["actor"], nets["qvalue"], action_spec=Bounded(-1.0, 1.0, shape=(2,)))


CASES = [(g, n) for g in REGISTRY if g != "trainer" for n in sorted(REGISTRY[g])]
_PARAMS = [pytest.param(g, n, id=f"{g}/{n}", marks=[pytest.mark.integration] if (g, n) == ("collector", "ray") else [])
           for g, n in CASES]


def test_every_registry_entry_is_in_the_config_store() -> None:
    store = ConfigStore.instance()
    for group, names in REGISTRY.items():
        assert {f"{n}.yaml" for n in names} <= set(store.list(group)), group


@pytest.mark.parametrize(("group", "name"), _PARAMS)
def test_config_store_entry_instantiates(group: str, name: str, tmp_path: pathlib.Path) -> None:
    node = ConfigStore.instance().load(f"{group}/{name}.yaml").node
    cfg = OmegaConf.merge(node, REQUIRED.get((group, name), {}))
    kwargs = _dreamer_v3_kwargs(group, name) or _runtime_kwargs(group, name, tmp_path)
    if group == "target_net_updater":
        kwargs["loss_module"] = _loss_for_updater()
    obj = instantiate(cfg, **kwargs)
    if OmegaConf.select(cfg, "_partial_"):
        assert callable(obj) and not isinstance(obj, torch.nn.Module), (group, name, type(obj))
        return
    try:
        assert isinstance(obj, BUILDS[group]), f"{group}/{name} built a {type(obj).__name__}"
    finally:
        if isinstance(obj, BaseCollector):
            obj.shutdown()
        elif isinstance(obj, EnvBase):
            obj.close()
