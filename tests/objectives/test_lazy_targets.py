"""Losses with target networks accept lazy layers (TorchRL's getting-started-5 builds DQN on a lazy MLP)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from tdrl.modules import MLP, QValueModule
from tdrl.objectives import DQNLoss, HardUpdate, SACLoss, SoftUpdate


def _data(n: int = 8) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.nn.functional.one_hot(torch.randint(2, (n,)), 2),
            ("next", "observation"): torch.randn(n, 4),
            ("next", "reward"): torch.randn(n, 1),
            ("next", "done"): torch.zeros(n, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(n, 1, dtype=torch.bool),
        },
        [n],
    )


def _lazy_dqn() -> DQNLoss:
    mlp = MLP(out_features=2, num_cells=[16])  # no in_features: LazyLinear layers
    policy = Seq(Mod(mlp, ["observation"], ["action_value"]), QValueModule(action_space="one-hot"))
    return DQNLoss(policy, action_space="one-hot", delay_value=True)


@pytest.mark.parametrize("updater", [lambda loss: SoftUpdate(loss, eps=0.5), lambda loss: HardUpdate(loss, value_network_update_interval=0)])
def test_targets_of_a_lazy_network_are_made_at_the_first_call(updater) -> None:
    loss = _lazy_dqn()
    up = updater(loss)  # built before the parameters exist, as in TorchRL's tutorial
    td = _data()
    out = loss(td)
    params, target = loss.value_network_params, loss.target_value_network_params
    for key, value in params.items(True, True):
        assert target.get(key).shape == value.shape and torch.equal(target.get(key), value.data), key
        assert target.get(key).data_ptr() != value.data_ptr(), key
    out["loss"].backward()
    with torch.no_grad():
        for p in params.values(True, True):
            p.add_(1.0)
    up.step()
    moved = [not torch.equal(target.get(k), v.data - 1.0) for k, v in params.items(True, True)]
    assert all(moved), "the update did not move the targets"
    assert torch.isfinite(loss(_data())["loss"])


def test_updater_step_before_any_call_names_the_problem() -> None:
    loss = _lazy_dqn()
    up = SoftUpdate(loss, eps=0.9)
    with pytest.raises(RuntimeError, match="call the loss on a batch before the first step"):
        up.step()


def test_an_expanded_lazy_network_is_refused() -> None:
    actor = Mod(torch.nn.LazyLinear(2), ["observation"], ["loc"])
    q = Mod(MLP(out_features=1, num_cells=[8]), ["observation", "action"], ["state_action_value"])
    with pytest.raises(ValueError, match="lazy"):
        SACLoss(actor, q, num_qvalue_nets=2, target_entropy=-1.0)
