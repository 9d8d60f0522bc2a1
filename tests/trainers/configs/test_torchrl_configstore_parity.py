"""tdrl's ConfigStore mirrors TorchRL 0.14.1's: every (group, name) and every field, or a reason in the lists below.

``fixtures/torchrl_configstore.json`` is recorded from TorchRL by ``tools/record_torchrl_configstore.py``
(run with the TorchRL interpreter). The allow-lists are exact: an entry that tdrl now provides fails the test,
so they shrink as configs are added.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import pytest

from tdrl.trainers.algorithms.configs import REGISTRY

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torchrl_configstore.json").read_text())
TORCHRL = FIXTURE["groups"]

_NO_LIB = "tdrl has no wrapper for this env library (not installable here: no wheel for this platform/CPU setup)"
_NO_TRANSFORM = "tdrl has no such transform class"
_ABSTRACT = "TorchRL's abstract parent config (no _target_): nothing to instantiate"
_REMOTE = "remote/cluster transport (Ray, RPC, torch.distributed, vLLM) that tdrl's single-machine runtime lacks"

# (group, name) TorchRL registers and tdrl does not, with the reason.
MISSING_CONFIGS: dict[tuple[str, str], str] = {
    **{("env", lib): _NO_LIB for lib in (
        "brax", "habitat", "isaac_gym", "jumanji", "meltingpot", "mjlab", "openml",
        "openspiel", "robohive", "smacv2", "unity_mlagents")},
    ("hydra", "config"): "Hydra's own HydraConf node, registered by Hydra itself when its app runs",
    ("logger", "base"): _ABSTRACT, ("loss", "base"): _ABSTRACT, ("trainer", "base"): _ABSTRACT,
    ("weight_sync_scheme", "base"): _ABSTRACT, ("weight_updater", "base"): _ABSTRACT,
    ("logger", "trackio"): "tdrl has no trackio logger",
    ("loss", "mixer"): "tdrl has no QMixer loss (the QMixer/VDNMixer networks are provided)",
    ("optimizer", "lion"): "torch.optim.Lion does not exist in the torch this project pins (2.13)",
    ("sample_unit", "sequence"): "tdrl's replay buffers have no sample_unit option",
    ("sample_unit", "transition"): "tdrl's replay buffers have no sample_unit option",
    ("sampler", "consuming"): "tdrl has no ConsumingSampler",
    ("sampler", "streaming_slice"): "tdrl has no StreamingSliceSampler",
    ("trainer", "grpo"): "tdrl's GRPO runs from its own LLM entry points, not a trainer config",
    ("trainer", "offline_to_online"): "tdrl has no offline-to-online trainer",
    **{("transform", t): _NO_TRANSFORM for t in (
        "flatten_tensordict", "kl_reward", "r3m", "vc1", "vip", "vip_reward")},
    **{("weight_sync_scheme", n): _REMOTE for n in (
        "distributed", "ray_module_transform", "rpc", "vllm", "vllm_double_buffer")},
    **{("weight_updater", n): _REMOTE for n in ("distributed", "remote_module", "rpc", "vllm")},
}

_TRAJ = "trajectory-level collection (traj_format, trajs_per_batch/write, compact_obs) is not implemented"
_MULTI = ("multi-process options tdrl's collectors handle internally (worker_idx, init_fn, "
          "weight_recv_schemes for nested collectors, auto-registered policy transforms)")
_HOOKS = "pre/post-collect hooks: not implemented in tdrl's collectors"
_OWN_CLASS = "a TorchRL config field that TorchRL's own class rejects (tdrl's class has the same signature)"

# TorchRL fields that tdrl's config of the same name lacks, with the reason.
MISSING_FIELDS: dict[tuple[str, str], dict[str, str]] = {
    ("collector", "sync"): {
        **dict.fromkeys(("traj_format", "trajs_per_batch", "trajs_per_write", "compact_obs"), _TRAJ),
        **dict.fromkeys(("weight_recv_schemes", "worker_idx"), _MULTI),
        **dict.fromkeys(("pre_collect_hook", "post_collect_hook"), _HOOKS),
        "backend": "TorchRL's collector-backend switch (thread/process/ray): use the async/multi_* configs",
        "backend_options": "see backend", "num_collectors": "see backend", "sync": "see backend",
        "interruptor": "tdrl's preemption is the multi_sync preemptive_threshold",
    },
    **{("collector", n): {
        **dict.fromkeys(("traj_format", "trajs_per_batch", "trajs_per_write", "compact_obs"), _TRAJ),
        **dict.fromkeys(("weight_recv_schemes", "worker_idx", "init_fn"), _MULTI),
        **dict.fromkeys(("pre_collect_hook", "post_collect_hook"), _HOOKS),
        "auto_register_policy_transforms": "the multi-process collectors do not forward it to their workers yet "
                                           "(Collector takes it; pass an env that already has the transforms)",
    } for n in ("multi_sync", "multi_async")},
    ("collector", "async"): dict.fromkeys(
        ("num_sub_threads", "preemptive_threshold", "update_at_each_batch"),
        "TorchRL copies multi-collector fields onto the one-worker async config; tdrl's takes Collector's"),
    ("env", "batched_env"): dict.fromkeys(
        ("backend", "envs_per_worker", "exchange", "stack", "worker_affinity"),
        "tdrl's ParallelEnv has one process backend with shared-memory exchange; these TorchRL knobs do not apply"),
    ("env", "gym"): {"num_workers": "TorchRL's gym config field that GymEnv itself rejects; use env/batched_env"},
    ("optimizer", "lbfgs"): {"maximize": "torch.optim.LBFGS (torch 2.13) takes no maximize argument"},
    **{("replay_buffer", n): {
        "consume_after_n_samples": "tdrl has no consuming replay buffers",
        "delayed_init": "tdrl's lazy storages already allocate on the first write",
        "sample_unit": "tdrl's replay buffers have no sample_unit option",
        "service_backend": _REMOTE, "service_backend_options": _REMOTE,
        **({"transport": _REMOTE, "transport_options": _REMOTE} if n == "base" else {}),
    } for n in ("base", "tensordict")},
    ("sampler", "slice_without_replacement"): dict.fromkeys(
        ("cache_values", "span"), "tdrl's SliceSamplerWithoutReplacement has no cache/span options"),
    ("trainer", "dqn"): dict.fromkeys(
        ("aggregated_episode_reward_key", "aggregated_reward_key", "mixing_strategy"),
        "multi-agent (mixer) DQN options; tdrl has no mixer loss"),
    ("transform", "action_mask"): dict.fromkeys(("in_keys", "out_keys"), _OWN_CLASS),
    ("transform", "frame_skip"): dict.fromkeys(("in_keys", "out_keys"), _OWN_CLASS),
    ("transform", "multi_step"): dict.fromkeys(("in_keys", "out_keys"), _OWN_CLASS),
    ("transform", "discrete_action_projection"): dict.fromkeys(("in_keys", "num_actions", "out_keys"), _OWN_CLASS),
    ("transform", "rename"): {"key_mapping": _OWN_CLASS},
    ("transform", "random_crop_tensordict"): dict.fromkeys(("in_keys", "out_keys"), _OWN_CLASS),
    ("transform", "tensordict_primer"): dict.fromkeys(("in_keys", "out_keys"), _OWN_CLASS),
    ("transform", "time_max_pool"): {"dim": _OWN_CLASS},
    ("transform", "tokenizer"): {"vocab_size": _OWN_CLASS},
    ("transform", "reward_scaling"): {"eps": _OWN_CLASS},
    ("value", "gae"): dict.fromkeys(
        ("group_key", "num_chunk", "num_chunks", "shifted_budget", "value_chunk_dim", "value_chunk_size"),
        "chunked/grouped value evaluation options of TorchRL's GAE that tdrl's GAE does not take"),
}

PAIRS = [(g, n) for g, names in TORCHRL.items() for n in names]


def test_fixture_is_torchrl_0_14_1() -> None:
    assert FIXTURE["torchrl_version"] == "0.14.1"
    assert len(PAIRS) > 150  # the recorder walked the whole store


@pytest.mark.parametrize(("group", "name"), PAIRS, ids=[f"{g}/{n}" for g, n in PAIRS])
def test_torchrl_config_exists_in_tdrl(group: str, name: str) -> None:
    provided = name in REGISTRY.get(group, {})
    if (group, name) in MISSING_CONFIGS:
        assert not provided, f"{group}/{name} is now provided: drop it from MISSING_CONFIGS"
        return
    assert provided, f"TorchRL registers {group}/{name} ({TORCHRL[group][name]['class']}); tdrl does not"
    ours = {f.name for f in dataclasses.fields(REGISTRY[group][name])}
    allowed = MISSING_FIELDS.get((group, name), {})
    missing = [f for f in TORCHRL[group][name]["fields"] if f not in ours and f not in allowed]
    assert not missing, f"{group}/{name}: TorchRL fields {missing} are not fields of the tdrl config"
    stale = sorted(f for f in allowed if f in ours)
    assert not stale, f"{group}/{name}: {stale} are now fields: drop them from MISSING_FIELDS"


def test_allow_lists_only_name_torchrl_configs() -> None:
    unknown = [k for k in [*MISSING_CONFIGS, *MISSING_FIELDS] if k[1] not in TORCHRL.get(k[0], {})]
    assert not unknown, unknown
    for key, fields in MISSING_FIELDS.items():
        assert set(fields) <= set(TORCHRL[key[0]][key[1]]["fields"]), key
