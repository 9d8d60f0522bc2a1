"""Scenarios of the multi-agent losses (MAPPO, IPPO, QMIX, VDN), built identically on TorchRL 0.14.1 and on
tdrl; run by :func:`_golden_scenarios.run` with ``scenarios=SCENARIOS``.

Recorded by ``record_torchrl_golden_marl.py`` (TorchRL interpreter), checked by ``test_golden_torchrl_marl.py``.
Nothing here imports either library.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import SimpleNamespace

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq
from torch import nn

N_AGENTS, OBS, ACT, N_ACTIONS, STATE = 2, 3, 2, 4, 5
AGENTS_OBS = ("agents", "observation")

# (module attribute path) whose constructor signatures are compared with TorchRL's.
SIGNATURE_TARGETS = [
    "objectives.MAPPOLoss",
    "objectives.IPPOLoss",
    "objectives.QMixerLoss",
    "objectives.value.MultiAgentGAE",
    "modules.MultiAgentMLP",
    "modules.MultiAgentConvNet",
    "modules.QMixer",
    "modules.VDNMixer",
]


def signatures(lib: SimpleNamespace) -> dict[str, list[tuple[str, str, str]]]:
    """``{target: [(name, kind, repr(default)), ...]}`` of each constructor in :data:`SIGNATURE_TARGETS`."""
    out = {}
    for target in SIGNATURE_TARGETS:
        obj: object = lib
        for part in target.split("."):
            obj = getattr(obj, part)
        params = list(inspect.signature(obj.__init__).parameters.values())[1:]
        out[target] = [
            (p.name, p.kind.name, "<empty>" if p.default is p.empty else repr(p.default)) for p in params
        ]
    return out


def _actor(lib: SimpleNamespace, share_params: bool = True):
    net = nn.Sequential(
        lib.modules.MultiAgentMLP(
            OBS, 2 * ACT, N_AGENTS, centralized=False, share_params=share_params, depth=1, num_cells=8
        ),
        NormalParamExtractor(),
    )
    return lib.modules.ProbabilisticActor(
        Mod(net, [AGENTS_OBS], [("agents", "loc"), ("agents", "scale")]),
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")],
        distribution_class=lib.modules.TanhNormal,
        distribution_kwargs={"safe_tanh": False},
    )


def _critic(lib: SimpleNamespace, centralized: bool):
    return Mod(
        lib.modules.MultiAgentMLP(
            OBS, 1, N_AGENTS, centralized=centralized, share_params=centralized, depth=1, num_cells=8
        ),
        [AGENTS_OBS],
        [("agents", "state_value")],
    )


def on_td(per_agent_reward: bool = False) -> TensorDict:
    g = torch.Generator().manual_seed(11)
    b, t = 3, 4
    done = torch.zeros(b, t, 1, dtype=torch.bool)
    done[0, 2] = True
    reward = (
        torch.randn(b, t, N_AGENTS, 1, generator=g) if per_agent_reward else torch.randn(b, t, 1, generator=g)
    )
    td = TensorDict(
        {
            "agents": {
                "observation": torch.randn(b, t, N_AGENTS, OBS, generator=g),
                "action": torch.rand(b, t, N_AGENTS, ACT, generator=g) * 1.8 - 0.9,
                "action_log_prob": torch.randn(b, t, N_AGENTS, generator=g) - 1,
            },
            "done": torch.zeros(b, t, 1, dtype=torch.bool),
            "terminated": torch.zeros(b, t, 1, dtype=torch.bool),
            "next": {
                "agents": {"observation": torch.randn(b, t, N_AGENTS, OBS, generator=g)},
                "done": done,
                "terminated": done.clone(),
            },
        },
        [b, t],
    )
    if per_agent_reward:
        td["next", "agents", "reward"] = reward
    else:
        td["next", "reward"] = reward
    return td


def _ppo(
    cls_name: str,
    centralized: bool = True,
    per_agent_reward: bool = False,
    value_norm: str | None = None,
    **kwargs,
) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        norm = None if value_norm is None else getattr(lib.modules, value_norm)(shape=1)
        loss = getattr(lib.objectives, cls_name)(
            _actor(lib), _critic(lib, centralized), value_norm=norm, **kwargs
        )
        keys = {
            "value": ("agents", "state_value"),
            "action": ("agents", "action"),
            "sample_log_prob": ("agents", "action_log_prob"),
        }
        if per_agent_reward:
            keys["reward"] = ("agents", "reward")
        loss.set_keys(**keys)
        loss.make_value_estimator(lib.objectives.ValueEstimators.MAGAE, gamma=0.9, lmbda=0.8)
        return loss, on_td(per_agent_reward)

    return build


def off_td(one_hot: bool) -> TensorDict:
    g = torch.Generator().manual_seed(12)
    b = 6
    done = torch.tensor([[False]] * 4 + [[True]] * 2)
    action = torch.randint(N_ACTIONS, (b, N_AGENTS), generator=g)
    if one_hot:
        action = nn.functional.one_hot(action, N_ACTIONS)
    return TensorDict(
        {
            "agents": {"observation": torch.randn(b, N_AGENTS, OBS, generator=g), "action": action},
            "state": torch.randn(b, STATE, generator=g),
            "next": {
                "agents": {"observation": torch.randn(b, N_AGENTS, OBS, generator=g)},
                "state": torch.randn(b, STATE, generator=g),
                "reward": torch.randn(b, 1, generator=g),
                "done": done,
                "terminated": done.clone(),
            },
        },
        [b],
    )


def _qmix(mixer: str, one_hot: bool = False, gamma: float | None = 0.9, **kwargs) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        space = "one-hot" if one_hot else "categorical"
        net = lib.modules.MultiAgentMLP(
            OBS, N_ACTIONS, N_AGENTS, centralized=False, share_params=True, depth=1, num_cells=8
        )
        local = Seq(
            Mod(net, [AGENTS_OBS], [("agents", "action_value")]),
            lib.modules.QValueModule(
                action_value_key=("agents", "action_value"),
                action_space=space,
                out_keys=[
                    ("agents", "action"),
                    ("agents", "action_value"),
                    ("agents", "chosen_action_value"),
                ],
            ),
        )
        if mixer == "qmix":
            net = lib.modules.QMixer(
                state_shape=(STATE,), mixing_embed_dim=8, n_agents=N_AGENTS, device="cpu"
            )
            in_keys = [("agents", "chosen_action_value"), "state"]
        else:
            net = lib.modules.VDNMixer(n_agents=N_AGENTS, device="cpu")
            in_keys = [("agents", "chosen_action_value")]
        mixer_mod = Mod(net, in_keys, ["chosen_action_value"])
        loss = lib.objectives.QMixerLoss(local, mixer_mod, action_space=space, **kwargs)
        if gamma is not None:
            loss.make_value_estimator(gamma=gamma)
        return loss, off_td(one_hot)

    return build


# name -> (builder, number of consecutive forward calls to record)
SCENARIOS: dict[str, tuple[Callable, int]] = {
    "mappo": (_ppo("MAPPOLoss"), 1),
    "mappo_popart_clip": (_ppo("MAPPOLoss", value_norm="PopArtValueNorm", clip_value=True), 2),
    "mappo_running_norm": (_ppo("MAPPOLoss", value_norm="RunningValueNorm", loss_critic_type="l2"), 2),
    "mappo_no_norm_adv": (_ppo("MAPPOLoss", normalize_advantage=False, entropy_coeff=0.05), 1),
    "ippo": (_ppo("IPPOLoss", centralized=False), 1),
    "ippo_per_agent_reward": (_ppo("IPPOLoss", centralized=False, per_agent_reward=True), 1),
    "qmix": (_qmix("qmix"), 1),
    "qmix_one_hot_smooth_l1": (_qmix("qmix", one_hot=True, loss_function="smooth_l1"), 1),
    "qmix_no_delay": (_qmix("qmix", delay_value=False), 1),
    "vdn": (_qmix("vdn", gamma=None), 1),
}
