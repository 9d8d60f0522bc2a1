"""Scenarios of the offline sequence and imitation losses (DTLoss, OnlineDTLoss, GAILLoss), built identically
on TorchRL 0.14.1 and on tdrl; run by :func:`_golden_scenarios.run` with ``scenarios=SCENARIOS`` and
``plain_loss=True`` (DTLoss and GAILLoss report a single ``"loss"``).

Recorded by ``record_torchrl_golden_seq.py`` (TorchRL interpreter), checked by ``test_golden_torchrl_seq.py``.
Nothing here imports either library.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from torch import nn

from ._golden_scenarios import mlp

B, T, OBS, ACT = 3, 4, 3, 2
DT_KEYS = ["observation", "action", "return_to_go"]


def dt_config(lib: SimpleNamespace):
    return lib.modules.DecisionTransformer.DTConfig(
        n_embd=8, n_layer=1, n_head=2, n_inner=16, n_positions=3 * T, resid_pdrop=0.0, attn_pdrop=0.0
    )


def seq_td() -> TensorDict:
    g = torch.Generator().manual_seed(3)
    return TensorDict({
        "observation": torch.randn(B, T, OBS, generator=g),
        "action": torch.rand(B, T, ACT, generator=g) * 1.8 - 0.9,
        "return_to_go": torch.randn(B, T, 1, generator=g),
    }, [B, T])


def _dt(**kwargs) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        actor = Mod(lib.modules.DTActor(OBS, ACT, transformer_config=dt_config(lib)), DT_KEYS, ["action"])
        return lib.objectives.DTLoss(actor, **kwargs), seq_td()

    return build


def _online_dt(**kwargs) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        net = Mod(lib.modules.OnlineDTActor(OBS, ACT, transformer_config=dt_config(lib)), DT_KEYS, ["loc", "scale"])
        actor = lib.modules.ProbabilisticActor(
            net, in_keys=["loc", "scale"], distribution_class=lib.modules.TanhNormal,
            distribution_kwargs={"safe_tanh": False}, spec=lib.data.Unbounded((ACT,)),
        )
        return lib.objectives.OnlineDTLoss(actor, **kwargs), seq_td()

    return build


class Discriminator(nn.Module):
    """``sigmoid(mlp([obs, action]))``: the probability that a pair is expert."""

    def __init__(self) -> None:
        super().__init__()
        self.net = mlp(OBS + ACT, 1, 1)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(torch.cat([obs, action], -1)))


def gail_td(seq: bool) -> TensorDict:
    g = torch.Generator().manual_seed(4)
    shape = (6, T) if seq else (6,)
    return TensorDict({
        "observation": torch.randn(*shape, OBS, generator=g), "action": torch.randn(*shape, ACT, generator=g),
        "collector_observation": torch.randn(*shape, OBS, generator=g) + 1,
        "collector_action": torch.randn(*shape, ACT, generator=g) - 1,
    }, list(shape))


def _gail(seq: bool = False, **kwargs) -> Callable:
    def build(lib: SimpleNamespace):
        torch.manual_seed(0)
        disc = Mod(Discriminator(), ["observation", "action"], ["d_logits"])
        return lib.objectives.GAILLoss(disc, **kwargs), gail_td(seq)

    return build


SCENARIOS: dict[str, tuple[Callable, int]] = {
    "dt_l2": (_dt(), 1),
    "dt_l1_sum": (_dt(loss_function="l1", reduction="sum"), 1),
    "dt_smooth_l1_none": (_dt(loss_function="smooth_l1", reduction="none"), 1),
    # Two calls: the entropy estimate draws fresh samples each time (seeded per call).
    "online_dt": (_online_dt(), 2),
    "online_dt_mc3_alpha": (_online_dt(samples_mc_entropy=3, alpha_init=0.5, target_entropy=-1.0), 1),
    "online_dt_fixed_sum": (_online_dt(fixed_alpha=True, alpha_init=0.2, reduction="sum"), 1),
    "online_dt_bounded": (_online_dt(alpha_init=3.0, min_alpha=0.1, max_alpha=2.0), 1),
    "online_dt_none_nt": (_online_dt(reduction="none", scalar_output_mode="non_tensor"), 1),
    "gail": (_gail(), 1),
    "gail_sum": (_gail(reduction="sum"), 1),
    "gail_none": (_gail(reduction="none"), 1),
    "gail_gp": (_gail(use_grad_penalty=True), 2),
    "gail_gp_lambda_seq": (_gail(seq=True, use_grad_penalty=True, gp_lambda=2.5), 1),
    "gail_seq": (_gail(seq=True), 1),
}


def inference_trace(lib: SimpleNamespace, inference_context: int = 2, state_dict: dict | None = None
                    ) -> dict[str, torch.Tensor]:
    """Outputs of ``DecisionTransformerInferenceWrapper`` around a seeded DTActor (state dict included, so the
    tdrl side loads TorchRL's weights): a ``[B]`` batch and a ``[B, T]`` batch (time dropped from it)."""
    torch.manual_seed(0)
    net = Mod(lib.modules.DTActor(OBS, ACT, transformer_config=dt_config(lib)), DT_KEYS, ["action"])
    if state_dict is not None:
        net.load_state_dict(state_dict)
    wrapper = lib.modules.DecisionTransformerInferenceWrapper(net, inference_context=inference_context)
    out: dict[str, torch.Tensor] = {f"sd.{k}": v.detach().clone() for k, v in net.state_dict().items()}
    td = seq_td()
    flat = td.clone()
    flat.batch_size = td.batch_size[:1]
    for name, data in (("flat", flat), ("seq", td.clone())):
        with torch.no_grad():
            res = wrapper(data)
        out[f"{name}.batch_size"] = torch.tensor(list(res.batch_size))
        for key in ("action", "return_to_go", "observation"):
            out[f"{name}.{key}"] = res[key].clone()
    return out
