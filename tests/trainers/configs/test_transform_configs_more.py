"""The transform configs of ``transforms_more`` build working transforms from YAML (TorchRL's field names)."""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tdrl.envs import PendulumEnv, TransformedEnv

_MORE = "tdrl.trainers.algorithms.configs.transforms_more."


def _build(yaml: str):
    return instantiate(OmegaConf.create(yaml))


def test_multi_action_and_batch_size_from_yaml_run_in_an_env():
    t = _build("{_target_: tdrl.envs.MultiAction, stack_rewards: true, dim: 1}")
    env = TransformedEnv(PendulumEnv(), t)
    out = env.step(env.reset().set("action", torch.zeros(2, 1)))
    assert out["next", "reward"].shape == (2, 1)
    bs = _build("{_target_: tdrl.envs.BatchSizeTransform, batch_size: [3]}")
    assert bs.batch_size == (3,)


def test_stack_takes_torchrl_out_keys_and_rejects_several():
    t = _build(f"{{_target_: {_MORE}make_stack, in_keys: [a, b], out_keys: [ab]}}")
    assert t.out_keys == ["ab"]
    with pytest.raises(Exception, match="exactly one key"):
        _build(f"{{_target_: {_MORE}make_stack, in_keys: [a, b], out_keys: [x, y]}}")


def test_keyless_transforms_reject_torchrl_key_fields():
    for factory in ("make_pin_memory", "make_finite_tensordict_check", "make_vec_gym_env_transform"):
        with pytest.raises(Exception, match="takes no in_keys"):
            _build(f"{{_target_: {_MORE}{factory}, in_keys: [observation]}}")


def test_expand_as_nested_yaml_keys_and_conditional_skip_callable():
    t = _build(f"{{_target_: {_MORE}make_expand_as, in_key: [done], ref_key: [next, observation]}}")
    assert t.ref_key == ("next", "observation") and t.in_key == "done"
    skip = _build(f"{{_target_: {_MORE}make_conditional_skip, cond: {{_target_: builtins.bool, _partial_: true}}}}")
    assert callable(skip.cond)
    with pytest.raises(Exception, match="cond is required"):
        _build(f"{{_target_: {_MORE}make_conditional_skip}}")


def test_next_observation_delta_dtype_names():
    t = _build(f"{{_target_: {_MORE}make_next_observation_delta, in_keys: [observation], delta_dtype: float32}}")
    assert t.delta_dtype == torch.float32
