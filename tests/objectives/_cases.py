"""Tiny loss instances and matching batches for the loss contract suite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
)
from tensordict.nn import (
    ProbabilisticTensorDictModule as ProbMod,
)
from tensordict.nn import (
    ProbabilisticTensorDictSequential as ProbSeq,
)
from tensordict.nn import (
    TensorDictModule as Mod,
)
from tensordict.nn import (
    TensorDictSequential as Seq,
)
from torch import nn

from tdrl.data import Unbounded
from tdrl.modules import OneHotCategorical, TanhNormal
from tdrl.objectives import (
    A2CLoss,
    ClipPPOLoss,
    CQLLoss,
    DDPGLoss,
    DiscreteCQLLoss,
    DiscreteIQLLoss,
    DiscreteSACLoss,
    DQNLoss,
    IQLLoss,
    KLPENPPOLoss,
    PPOLoss,
    REDQLoss,
    ReinforceLoss,
    SACLoss,
    TD3BCLoss,
    TD3Loss,
)

OBS, ACT, B, T = 3, 2, 8, 4


class _Cat(nn.Module):
    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.lin = nn.Linear(i, o)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.cat(xs, -1))


def actor() -> ProbSeq:
    return ProbSeq(
        Mod(nn.Linear(OBS, 2 * ACT), ["observation"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal),
    )


def critic() -> Mod:
    return Mod(nn.Linear(OBS, 1), ["observation"], ["state_value"])


def qvalue() -> Mod:
    return Mod(_Cat(OBS + ACT, 1), ["observation", "action"], ["state_action_value"])


def offpolicy_td(action: torch.Tensor | None = None) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(B, OBS),
            "action": torch.rand(B, ACT) * 1.8 - 0.9 if action is None else action,
            ("next", "observation"): torch.randn(B, OBS),
            ("next", "reward"): torch.randn(B, 1),
            ("next", "done"): torch.zeros(B, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(B, 1, dtype=torch.bool),
        },
        [B],
    )


def onpolicy_td() -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(B, T, OBS),
            "action": torch.rand(B, T, ACT) * 1.8 - 0.9,
            "action_log_prob": torch.randn(B, T),
            "sample_log_prob": torch.randn(B, T),
            "advantage": torch.randn(B, T, 1),
            "value_target": torch.randn(B, T, 1),
            "loc": torch.zeros(B, T, ACT),
            "scale": torch.ones(B, T, ACT),
            ("next", "observation"): torch.randn(B, T, OBS),
            ("next", "reward"): torch.randn(B, T, 1),
            ("next", "done"): torch.zeros(B, T, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(B, T, 1, dtype=torch.bool),
        },
        [B, T],
    )


@dataclass
class Case:
    """A loss factory, its batch factory and which parameter groups each ``loss_*`` term may train."""

    name: str
    make: Callable[[], object]
    data: Callable[[], TensorDict]
    grads: dict[str, set[str]]
    stochastic: bool = False
    has_target: bool = False
    rename: dict[str, str] = field(default_factory=dict)


def _dqn() -> DQNLoss:
    net = Seq(
        Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]),
    )
    return DQNLoss(net, action_space="one-hot")


def _dqn_td() -> TensorDict:
    return offpolicy_td(nn.functional.one_hot(torch.randint(ACT, (B,)), ACT))


def _sac() -> SACLoss:
    return SACLoss(actor(), qvalue(), action_spec=Unbounded((ACT,)))


def _sac_v1() -> SACLoss:
    return SACLoss(actor(), qvalue(), critic(), action_spec=Unbounded((ACT,)), delay_actor=True)


def det_actor() -> Mod:
    return Mod(nn.Sequential(nn.Linear(OBS, ACT), nn.Tanh()), ["observation"], ["action"])


def _ddpg() -> DDPGLoss:
    return DDPGLoss(det_actor(), qvalue())


def _td3() -> TD3Loss:
    return TD3Loss(det_actor(), qvalue(), bounds=(-1.0, 1.0))


def _onpolicy(cls):
    def make():
        loss = cls(actor(), critic())
        loss.set_keys(**{k: "action_log_prob" for k in ("sample_log_prob",) if hasattr(loss.tensor_keys, k)})
        return loss

    return make


CASES = [
    Case("dqn", _dqn, _dqn_td, {"loss": {"value_network"}}, has_target=True, rename={"reward": "rew"}),
    Case(
        "ppo",
        _onpolicy(PPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"advantage": "adv"},
    ),
    Case(
        "clip_ppo",
        _onpolicy(ClipPPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"value_target": "vt"},
    ),
    Case(
        "klpen_ppo",
        _onpolicy(KLPENPPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
    ),
    Case(
        "a2c",
        _onpolicy(A2CLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"advantage": "adv"},
    ),
    Case(
        "reinforce",
        _onpolicy(ReinforceLoss),
        onpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_value": {"critic_network"}},
        rename={"value_target": "vt"},
    ),
    Case(
        "sac",
        _sac,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        stochastic=True,
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "sac_v1",
        _sac_v1,
        offpolicy_td,
        {
            "loss_actor": {"actor_network"},
            "loss_qvalue": {"qvalue_network"},
            "loss_alpha": {"log_alpha"},
            "loss_value": {"value_network"},
        },
        stochastic=True,
        has_target=True,
    ),
]


CASES += [
    Case(
        "ddpg",
        _ddpg,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_value": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "td3",
        _td3,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}},
        stochastic=True,
        has_target=True,
        rename={"done": "d", "terminated": "term"},
    ),
]


CASES += [
    Case(
        "iql",
        lambda: IQLLoss(actor(), qvalue(), critic()),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_value": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "cql",
        lambda: CQLLoss(actor(), qvalue(), action_spec=Unbounded((ACT,))),
        offpolicy_td,
        {
            "loss_actor": {"actor_network"},
            "loss_actor_bc": {"actor_network"},
            "loss_qvalue": {"qvalue_network"},
            "loss_cql": {"qvalue_network"},
            "loss_alpha": {"log_alpha"},
        },
        stochastic=True,
        has_target=True,
    ),
]


CASES.append(
    Case(
        "redq",
        lambda: REDQLoss(actor(), qvalue(), action_spec=Unbounded((ACT,)), num_qvalue_nets=4),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        stochastic=True,
        has_target=True,
    )
)


CASES.append(
    Case(
        "td3_bc",
        lambda: TD3BCLoss(det_actor(), qvalue(), bounds=(-1.0, 1.0)),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}},
        stochastic=True,
        has_target=True,
    )
)


def _discrete_sac() -> DiscreteSACLoss:
    actor = ProbSeq(Mod(nn.Linear(OBS, ACT), ["observation"], ["logits"]),
                    ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
    return DiscreteSACLoss(actor, Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]), num_actions=ACT,
                           action_space="one-hot")


CASES.append(
    Case(
        "discrete_sac",
        _discrete_sac,
        _dqn_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        has_target=True,
        rename={"reward": "rew"},
    )
)


def _discrete_iql() -> DiscreteIQLLoss:
    actor = ProbSeq(Mod(nn.Linear(OBS, ACT), ["observation"], ["logits"]),
                    ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
    return DiscreteIQLLoss(actor, Mod(nn.Linear(OBS, ACT), ["observation"], ["state_action_value"]), critic(),
                           action_space="one-hot")


CASES += [
    Case(
        "discrete_iql",
        _discrete_iql,
        _dqn_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_value": {"value_network"}},
        has_target=True,
    ),
    Case(
        "discrete_cql",
        lambda: DiscreteCQLLoss(Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]), action_space="one-hot"),
        _dqn_td,
        {"loss_qvalue": {"value_network"}, "loss_cql": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
]


def renamed(td: TensorDict, rename: dict[str, str]) -> TensorDict:
    """``td`` with every entry named like a key in ``rename`` moved to its new name (also under next)."""
    td = td.clone()
    for old, new in rename.items():
        for prefix in ((), ("next",)):
            key = (*prefix, old)
            if key in td.keys(True):
                td.rename_key_(key, (*prefix, new))
    return td
