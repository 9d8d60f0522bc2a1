"""TorchRL call styles of the losses: keyword calls without a TensorDict, ``functional=False`` and value
estimator aliases (golden values from TorchRL 0.14.1, ``call_styles_torchrl_0_14_1.json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from tdrl.data import Bounded
from tdrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import A2CLoss, ClipPPOLoss, PPOLoss, ReinforceLoss, SACLoss, ValueEstimators
from tdrl.objectives.value import TDLambdaEstimator

sys.path.insert(0, str(Path(__file__).parent))
from _call_style_scenario import LOSSES, keyword_inputs, networks, outputs  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "call_styles_torchrl_0_14_1.json").read_text())


@pytest.mark.parametrize("functional", [True, False])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_keyword_call_matches_torchrl(name, functional):
    key = name if functional else f"{name}_nonfunctional"
    torch.testing.assert_close(torch.tensor(outputs("tdrl", name, functional)), torch.tensor(GOLDEN[key]))


def test_keyword_call_equals_tensordict_call():
    actor, critic = networks("tdrl")
    loss = ClipPPOLoss(actor, critic, entropy_bonus=False)
    kwargs = keyword_inputs()
    torch.manual_seed(0)
    values = loss(**kwargs)
    names = {"_".join(k) if isinstance(k, tuple) else k: k for k in loss.in_keys}
    td = TensorDict({names[k]: v for k, v in kwargs.items()}, batch_size=[4])
    torch.manual_seed(0)
    out = loss(td)
    assert len(values) == len(loss.out_keys)
    for key, value in zip(loss.out_keys, values):
        torch.testing.assert_close(value, out[key])
    values[0].backward()
    assert actor.module[0].module[0].weight.grad is not None


def test_keyword_call_unknown_name():
    actor, critic = networks("tdrl")
    with pytest.raises(TypeError, match="next_reward"):
        PPOLoss(actor, critic)(observation=torch.zeros(2, 3), reward=torch.zeros(2, 1))


def test_functional_false_flag_and_running_stats():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
    )
    critic = ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    for cls in (PPOLoss, A2CLoss, ReinforceLoss):
        assert cls(actor, critic, functional=False).functional is False
        assert cls(actor, critic).functional is True
    loss = PPOLoss(actor, critic, functional=False, entropy_bonus=False)
    before = net[1].running_mean.clone()
    kwargs = keyword_inputs()
    loss(**kwargs)[0].backward()
    assert not torch.equal(before, net[1].running_mean)  # the user's module itself ran
    assert net[0].weight.grad is not None
    with pytest.raises(ValueError, match="delay_actor"):
        PPOLoss(actor, critic, functional=False, delay_actor=True)


def _sac():
    actor = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()), ["observation"], ["loc", "scale"]
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
    )

    class Q(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(5, 1)

        def forward(self, obs, action):
            return self.linear(torch.cat([obs, action], -1))

    return SACLoss(
        actor, ValueOperator(Q(), in_keys=["observation", "action"]), action_spec=Bounded(-1.0, 1.0, (2,))
    )


@pytest.mark.parametrize("alias", ["tdlambda", "TDLambda", "TDLAMBDA"])
def test_value_estimator_aliases(alias):
    loss = _sac().make_value_estimator(alias, gamma=0.9, lmbda=0.5)
    assert loss.value_type is ValueEstimators.TDLambda
    assert isinstance(loss.value_estimator, TDLambdaEstimator)


def test_value_estimator_alias_errors():
    with pytest.raises(ValueError, match="GAE"):
        _sac().make_value_estimator("gae")  # TorchRL 0.14.1 refuses GAE for SAC too
    with pytest.raises(KeyError, match="known"):
        _sac().make_value_estimator("td_zero")
