"""DiffusionActor: keys, spec wrapping, the reverse chain's modes, the dtype guard and the kept schedule
(values against TorchRL in tests/objectives/test_golden_torchrl_imitation.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type
from torch import nn

from tdrl.data import Bounded, Composite
from tdrl.modules import DiffusionActor


def _td() -> TensorDict:
    return TensorDict(observation=torch.randn(4, 3), batch_size=[4])


def test_default_network_is_lazy_without_obs_dim() -> None:
    actor = DiffusionActor(action_dim=2, num_steps=3)
    assert isinstance(actor.module.score_network[0], nn.LazyLinear)
    assert actor(_td())["action"].shape == (4, 2)
    sized = DiffusionActor(action_dim=2, obs_dim=3, num_steps=3)
    assert sized.module.score_network[0].in_features == 2 + 3 + 1
    assert actor.in_keys == ["observation"] and actor.out_keys == ["action"]


def test_leaf_spec_is_wrapped_under_action() -> None:
    actor = DiffusionActor(action_dim=2, obs_dim=3, num_steps=3, spec=Bounded(-1, 1, (2,)))
    assert isinstance(actor.spec, Composite) and "action" in actor.spec.keys()


def test_deterministic_mode_is_repeatable_and_random_mode_is_not() -> None:
    actor = DiffusionActor(action_dim=2, obs_dim=3, num_steps=4)
    td = _td()
    with set_interaction_type(InteractionType.DETERMINISTIC):
        a, b = actor(td.clone())["action"], actor(td.clone())["action"]
    torch.testing.assert_close(a, b)
    with set_interaction_type(InteractionType.RANDOM):
        c, d = actor(td.clone())["action"], actor(td.clone())["action"]
    assert not torch.allclose(c, d)


def test_add_noise_follows_the_schedule() -> None:
    actor = DiffusionActor(action_dim=2, obs_dim=3, num_steps=5)
    ddpm = actor.module
    x0 = torch.ones(3, 2)
    t = torch.tensor([0, 2, 4])
    torch.manual_seed(0)
    noisy, noise = ddpm.add_noise(x0, t)
    ab = ddpm.alphas_cumprod[t].unsqueeze(-1)
    torch.testing.assert_close(noisy, ab.sqrt() * x0 + (1 - ab).sqrt() * noise)
    torch.testing.assert_close(ddpm.alphas_cumprod, torch.cumprod(1 - torch.linspace(1e-4, 0.02, 5), 0))


def test_half_precision_keeps_a_float32_schedule_and_guards_steps() -> None:
    actor = DiffusionActor(action_dim=2, obs_dim=3, num_steps=300).to(torch.bfloat16)
    assert actor.module.alphas_cumprod.dtype == torch.float32
    assert actor.module.score_network[0].weight.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="num_steps=300.*bfloat16"):
        actor(TensorDict(observation=torch.randn(2, 3, dtype=torch.bfloat16), batch_size=[2]))
    with pytest.raises(ValueError, match="num_steps must be at least 1"):
        DiffusionActor(action_dim=2, obs_dim=3, num_steps=0)
