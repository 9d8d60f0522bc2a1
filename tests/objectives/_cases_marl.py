"""Multi-agent losses (MAPPO, IPPO, QMIX, VDN) for the loss contract suite (appended to ``_cases.CASES``).

Per-agent entries live under ``"agents"``; the global state is the root ``"observation"`` (the mixer's state,
the centralised critic's input), so the suite's checks on ``("next", "observation")`` apply unchanged.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from tdrl.modules import MultiAgentMLP, PopArtValueNorm, ProbabilisticActor, QMixer, TanhNormal, VDNMixer
from tdrl.objectives import IPPOLoss, MAPPOLoss, QMixerLoss

try:
    from ._cases import Case
except ImportError:  # imported as a top-level module, beside _cases (see _cases.py)
    from _cases import Case  # type: ignore[no-redef]

N, OBS, ACT, N_ACTIONS, STATE, B, T = 2, 3, 2, 4, 5, 6, 3


class _TeamCritic(nn.Module):
    """Global state ``[*B, STATE]`` -> one value per agent ``[*B, N, 1]`` (a centralised critic)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(STATE, N)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.lin(state).unsqueeze(-1)


def _actor() -> ProbabilisticActor:
    net = nn.Sequential(
        MultiAgentMLP(OBS, 2 * ACT, N, centralized=False, share_params=True, depth=0), NormalParamExtractor()
    )
    return ProbabilisticActor(
        Mod(net, [("agents", "observation")], [("agents", "loc"), ("agents", "scale")]),
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")],
        distribution_class=TanhNormal,
    )


def _ppo(cls, centralized: bool, **kwargs):
    def make():
        if centralized:
            critic = Mod(_TeamCritic(), ["observation"], [("agents", "state_value")])
        else:
            critic = Mod(
                MultiAgentMLP(OBS, 1, N, centralized=False, share_params=False, depth=0),
                [("agents", "observation")],
                [("agents", "state_value")],
            )
        loss = cls(_actor(), critic, **kwargs)
        return loss.set_keys(
            value=("agents", "state_value"),
            action=("agents", "action"),
            sample_log_prob=("agents", "action_log_prob"),
        )

    return make


def _on_td() -> TensorDict:
    flags = torch.zeros(B, T, 1, dtype=torch.bool)
    return TensorDict(
        {
            "agents": {
                "observation": torch.randn(B, T, N, OBS),
                "action": torch.rand(B, T, N, ACT) * 1.8 - 0.9,
                "action_log_prob": torch.randn(B, T, N) - 1,
            },
            "observation": torch.randn(B, T, STATE),
            "advantage": torch.randn(B, T, N, 1),
            "value_target": torch.randn(B, T, N, 1),
            ("agents", "state_value"): torch.randn(B, T, N, 1),
            "next": {
                "agents": {"observation": torch.randn(B, T, N, OBS)},
                "observation": torch.randn(B, T, STATE),
                "reward": torch.randn(B, T, 1),
                "done": flags,
                "terminated": flags.clone(),
            },
        },
        [B, T],
    )


def _qmix(vdn: bool = False, **kwargs):
    def make():
        local = Mod(
            MultiAgentMLP(OBS, N_ACTIONS, N, centralized=False, share_params=True, depth=1, num_cells=8),
            [("agents", "observation")],
            [("agents", "action_value")],
        )
        if vdn:
            mixer = Mod(
                VDNMixer(N, device="cpu"), [("agents", "chosen_action_value")], ["chosen_action_value"]
            )
        else:
            mixer = Mod(
                QMixer((STATE,), 8, N, device="cpu"),
                [("agents", "chosen_action_value"), "observation"],
                ["chosen_action_value"],
            )
        return QMixerLoss(local, mixer, action_space="categorical", **kwargs)

    return make


def _off_td() -> TensorDict:
    done = torch.zeros(B, 1, dtype=torch.bool)
    done[-1] = True
    return TensorDict(
        {
            "agents": {"observation": torch.randn(B, N, OBS), "action": torch.randint(N_ACTIONS, (B, N))},
            "observation": torch.randn(B, STATE),
            "next": {
                "agents": {"observation": torch.randn(B, N, OBS)},
                "observation": torch.randn(B, STATE),
                "reward": torch.randn(B, 1),
                "done": done,
                "terminated": done.clone(),
            },
        },
        [B],
    )


_PPO_GRADS = {
    "loss_objective": {"actor_network"},
    "loss_entropy": {"actor_network"},
    "loss_critic": {"critic_network"},
}
_Q_GRADS = {"loss": {"local_value_network", "mixer_network"}}

MARL_CASES = [
    Case("mappo", _ppo(MAPPOLoss, True), _on_td, _PPO_GRADS, stochastic=True, rename={"advantage": "adv"}),
    Case(
        "mappo_popart",
        _ppo(MAPPOLoss, True, value_norm=PopArtValueNorm(shape=1), clip_value=True),
        _on_td,
        _PPO_GRADS,
        stochastic=True,
    ),
    Case("ippo", _ppo(IPPOLoss, False), _on_td, _PPO_GRADS, stochastic=True, rename={"value_target": "vt"}),
    Case("qmix", _qmix(), _off_td, _Q_GRADS, has_target=True, rename={"reward": "rew"}),
    Case(
        "vdn",
        _qmix(vdn=True, loss_function="smooth_l1"),
        _off_td,
        {"loss": {"local_value_network"}},
        has_target=True,
        rename={"done": "d", "terminated": "t"},
    ),
]
