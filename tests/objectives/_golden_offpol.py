"""Scenarios of the newer off-policy and behaviour-cloning losses (CrossQ, TQC, BC, RND), built identically on
TorchRL 0.14.1 and on tdrl; run by :func:`_golden_scenarios.run` with ``scenarios=SCENARIOS``.

Recorded by ``record_torchrl_golden_offpol.py`` (TorchRL interpreter), checked by
``test_golden_torchrl_offpol.py``. Nothing here imports either library.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor
from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from ._golden_scenarios import mlp, off_td


def actor(lib: SimpleNamespace) -> ProbSeq:
    return ProbSeq(
        Mod(nn.Sequential(mlp(3, 4, 1), NormalParamExtractor()), ["obs"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=lib.modules.TanhNormal,
                distribution_kwargs={"safe_tanh": False}),
    )


class Critic(nn.Module):
    """``[obs, action] -> out`` with optional batch renormalisation (the CrossQ critic layout)."""

    def __init__(self, lib: SimpleNamespace, out: int, renorm: bool, warmup_steps: int = 2) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if renorm:
            layers.append(lib.modules.BatchRenorm1d(5, warmup_steps=warmup_steps, momentum=0.1))
        layers += [nn.Linear(5, 16)]
        if renorm:
            layers.append(lib.modules.BatchRenorm1d(16, warmup_steps=warmup_steps, momentum=0.1))
        layers += [nn.ReLU(), nn.Linear(16, out)]
        self.net = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, action], -1))


def _crossq(lib: SimpleNamespace, **kwargs):
    torch.manual_seed(0)
    pi = actor(lib)
    q = Mod(Critic(lib, 1, renorm=True), ["obs", "action"], ["state_action_value"])
    return lib.objectives.CrossQLoss(pi, q, action_spec=lib.data.Unbounded((2,)), **kwargs), off_td()


def _tqc(lib: SimpleNamespace, **kwargs):
    torch.manual_seed(0)
    pi = actor(lib)
    q = Mod(Critic(lib, 5, renorm=False), ["obs", "action"], ["state_action_value"])
    loss = lib.objectives.TQCLoss(pi, q, action_spec=lib.data.Unbounded((2,)), **kwargs)
    loss.make_value_estimator(gamma=0.9)
    return loss, off_td()


def _bc(kind: str, pad: bool = False, **kwargs) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        td = off_td()
        if kind == "deterministic":
            net = Mod(nn.Sequential(mlp(3, 2, 1), nn.Tanh()), ["obs"], ["action"])
        elif kind == "stochastic":
            net = actor(lib)
        else:  # discrete: logits written where the expert's (long) action is read
            net = Mod(mlp(3, 4, 1), ["obs"], ["action"])
            td["action"] = torch.tensor([0, 3, 1, 2, 2, 1])
        loss = lib.objectives.BCLoss(net, **kwargs)
        if pad:
            td["pad"] = torch.tensor([False, False, True, False, True, False])
            loss.set_keys(pad_mask="pad")
        return loss, td

    return build


def _rnd(lib: SimpleNamespace, obs_rms: bool = False, **kwargs):
    torch.manual_seed(0)
    predictor, target = mlp(3, 4, 1), mlp(3, 4, 1)
    td = off_td()
    if obs_rms:
        rms = lib.envs.RunningMeanStd(shape=(3,))
        rms.update(torch.randn(32, 3, generator=torch.Generator().manual_seed(9)) * 2 + 1)
        kwargs["obs_rms"] = rms
    loss = lib.objectives.RNDLoss(predictor, target, **kwargs)
    loss.set_keys(observation=("next", "obs"))
    return loss, td


# name -> (builder, number of consecutive forward calls to record)
SCENARIOS: dict[str, tuple[Callable, int]] = {
    # Three calls: the renormalisation layers warm up (factor 0, 0, 1) and their running statistics move.
    "crossq": (_crossq, 3),
    "crossq_l2_none": (lambda lib: _crossq(lib, loss_function="l2", reduction="none",
                                          scalar_output_mode="non_tensor"), 1),
    "crossq_fixed_alpha_sum": (lambda lib: _crossq(lib, fixed_alpha=True, alpha_init=0.3, reduction="sum"), 1),
    "tqc": (_tqc, 1),
    "tqc_drop0_nets1": (lambda lib: _tqc(lib, num_qvalue_nets=1, top_quantiles_to_drop_per_net=0), 1),
    "tqc_nets3_none": (lambda lib: _tqc(lib, num_qvalue_nets=3, top_quantiles_to_drop_per_net=1,
                                        reduction="none", scalar_output_mode="exclude"), 1),
    "bc_deterministic_default": (_bc("deterministic"), 1),
    "bc_deterministic_l1": (_bc("deterministic", loss_function="l1"), 1),
    "bc_deterministic_smooth_l1_sum": (_bc("deterministic", loss_function="smooth_l1", reduction="sum"), 1),
    "bc_stochastic_nll": (_bc("stochastic"), 1),
    "bc_deterministic_l2_pad": (_bc("deterministic", pad=True, loss_function="l2"), 1),
    "bc_discrete_cross_entropy": (_bc("discrete"), 1),
    "bc_discrete_ce_explicit_none": (_bc("discrete", loss_function="cross_entropy", reduction="none"), 1),
    "rnd_full": (lambda lib: _rnd(lib, update_fraction=1.0), 1),
    "rnd_fraction": (lambda lib: _rnd(lib), 2),
    "rnd_fraction_sum": (lambda lib: _rnd(lib, reduction="sum", update_fraction=0.5), 1),
    "rnd_obs_rms_clip": (lambda lib: _rnd(lib, obs_rms=True, obs_clip=0.7, update_fraction=1.0), 1),
}


def rnd_transform_trace(lib: SimpleNamespace, steps: int = 4, **kwargs) -> dict[str, torch.Tensor]:
    """Intrinsic rewards and running statistics of an ``RNDTransform`` stepped on fixed observations."""
    torch.manual_seed(0)
    t = lib.envs.RNDTransform(mlp(3, 4, 1), mlp(3, 4, 1), **kwargs)
    g = torch.Generator().manual_seed(7)
    out: dict[str, torch.Tensor] = {}
    for i in range(steps):
        nxt = TensorDict({"observation": torch.randn(5, 3, generator=g) * 3 + 1}, [5])
        out[f"reward_{i}"] = t._step(TensorDict({}, [5]), nxt)["intrinsic_reward"].clone()
    for name, value in t.state_dict().items():
        if not name.startswith(("target_network", "predictor_network")):
            out[name] = value.clone()
    return out


RND_TRANSFORM_CASES: dict[str, dict] = {
    "default": {},
    "no_obs_norm": {"normalize_obs": False},
    "no_reward_norm_clip": {"normalize_reward": False, "obs_clip": 0.5},
}


def gsde_trace(lib: SimpleNamespace, lazy: bool, **kwargs) -> dict[str, torch.Tensor]:
    """Outputs of a gSDE module over a short "episode" (reset placeholder, then reuse) in the
    RANDOM and DETERMINISTIC exploration modes, its gradients and its state_dict."""
    from tensordict.nn import InteractionType, set_interaction_type

    torch.manual_seed(0)
    module = lib.exploration.LazygSDEModule(**kwargs) if lazy else lib.exploration.gSDEModule(2, 3, **kwargs)
    g = torch.Generator().manual_seed(3)
    mu, state = torch.randn(4, 2, generator=g), torch.randn(4, 3, generator=g) * 2
    out: dict[str, torch.Tensor] = {}
    with set_interaction_type(InteractionType.RANDOM):
        _, scale, action, eps = module(mu, state, torch.zeros(4, 1))
        out.update(scale=scale, action=action, eps=eps)
        _, _, again, eps2 = module(mu, state + 1, eps)
        out.update(action_reused=again, eps_reused=eps2)
        if action.requires_grad:
            action.sum().backward()
    with set_interaction_type(InteractionType.DETERMINISTIC):
        out["action_det"] = module(mu, state, None)[2]
    out.update({f"sd.{k}": v.clone() for k, v in module.state_dict().items()})
    out.update({f"grad.{n}": p.grad.clone() for n, p in module.named_parameters() if p.grad is not None})
    return {k: v.detach().clone() for k, v in out.items()}


GSDE_CASES: dict[str, tuple[bool, dict]] = {
    "plain": (False, {}),
    "plain_fixed_sigma": (False, {"learn_sigma": False, "sigma_init": 0.4}),
    "plain_sigma_init_scale_max": (False, {"sigma_init": 2.0, "scale_max": 0.5}),
    "lazy": (True, {}),
    "lazy_sigma_init": (True, {"sigma_init": 0.5}),
    "lazy_fixed": (True, {"learn_sigma": False}),
}
