"""Ensemble vmap randomness is decided at construction (compiled code then only reads an attribute)."""

import pytest
import torch
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from tdrl.data import Bounded
from tdrl.objectives import TD3Loss


def _loss(dropout: bool) -> TD3Loss:
    layers = [nn.Linear(5, 8), nn.Dropout(0.1), nn.Linear(8, 1)] if dropout else [nn.Linear(5, 1)]
    actor = Mod(nn.Linear(3, 2), ["observation"], ["action"])
    q = Mod(_Cat(nn.Sequential(*layers)), ["observation", "action"], ["state_action_value"])
    return TD3Loss(actor, q, action_spec=Bounded(-1, 1, (2,)))


class _Cat(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


@pytest.mark.parametrize(("dropout", "expected"), [(False, "error"), (True, "different")])
def test_decided_at_construction(dropout, expected):
    loss = _loss(dropout)
    assert loss._vmap_randomness == expected and loss.vmap_randomness == expected


def test_user_choice_wins():
    loss = _loss(True)
    loss.set_vmap_randomness("same")
    assert loss.vmap_randomness == "same"
    with pytest.raises(ValueError, match="'error', 'same' or 'different'"):
        loss.set_vmap_randomness("sometimes")
