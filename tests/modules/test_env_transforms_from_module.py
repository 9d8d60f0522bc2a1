"""``get_env_transforms_from_module``: the InitTracker (+ primers) a recurrent policy needs, as in TorchRL."""

from __future__ import annotations

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.envs import Compose, GymEnv, InitTracker, TensorDictPrimer, TransformedEnv
from tdrl.modules import GRUModule, get_env_transforms_from_module
from tdrl.modules.utils import get_env_transforms_from_module as from_utils


def test_plain_module_gets_a_bare_tracker():
    transforms = get_env_transforms_from_module(torch.nn.Linear(2, 2), init_key="first")
    assert isinstance(transforms, InitTracker) and transforms.out_keys == ["first"]
    assert from_utils is get_env_transforms_from_module


def test_recurrent_policy_runs_in_the_transformed_env():
    gru = GRUModule(input_size=3, hidden_size=8, in_key="observation", out_key="features")
    policy = TensorDictSequential(gru, TensorDictModule(torch.nn.Linear(8, 1), ["features"], ["action"]))
    transforms = get_env_transforms_from_module(policy)
    assert isinstance(transforms, Compose)
    assert [type(t) for t in transforms] == [InitTracker, TensorDictPrimer]
    env = TransformedEnv(GymEnv("Pendulum-v1"), transforms)
    rollout = env.rollout(4, policy)
    assert rollout["is_init"][:, 0].tolist() == [True, False, False, False]
    assert rollout["next", "recurrent_state"].shape == (4, 1, 8)
    env.close()
