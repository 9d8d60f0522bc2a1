"""GRPOLoss / DAPO / CISPOLoss: TorchRL 0.14.1 golden values and gradients, the corrected diagnostics,
options and errors, ragged inputs and torch.compile."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict, lazy_stack

import tdrl.objectives.llm as llm
from tdrl.objectives.llm import DAPO, CISPOLoss, GRPOLoss, GRPOLossOutput

from ._actor import MaskedTokenDist, TinyTokenActor, to_tensordict, token_batch
from ._scenarios import SCENARIOS, build, run

GOLDEN = torch.load(Path(__file__).with_name("golden_llm_torchrl_0_14_1.pt"), weights_only=True)

# Same as TorchRL 0.14.1 by construction (see docs/differences.md for the rest).
SAME_AS_TORCHRL = ("loss_objective", "loss_entropy", "ESS")


def _reference(name: str) -> dict:
    """Plain-torch masked means of the diagnostics and KL terms for scenario ``name``."""
    loss, actor, td = build(llm, TensorDict, MaskedTokenDist, name)
    dist = actor._get_sft_dist(td) if loss.masking_strategy == "sft" else (
        actor._get_rlhf_dist(td) if loss.masking_strategy == "rlhf" else actor._get_generic_dist(td))
    mask = dist.mask
    cur = torch.where(mask, dist.log_prob(td["tokens", "full"]), 0.0).detach()
    prev = torch.where(mask, td["log_probs", "full"], 0.0)
    if loss.kl_mask_threshold:
        mask = mask & (0.5 * (cur - prev) ** 2 <= loss.kl_mask_threshold)
    lw = cur - prev
    lo, hi = (-loss.clip_epsilon_low).log1p(), loss.clip_epsilon_high.log1p()
    clipped = (lw.clamp(lo, hi) != lw).float()
    ref = torch.where(mask, td["next", "ref_log_probs", "full"], 0.0)

    def k3(target):
        d = target - cur
        return (d.expm1() - d)[mask].mean()

    return {
        "clip_fraction": clipped[mask].mean(),
        "kl_approx": (prev - cur)[mask].mean(),
        "entropy": dist.entropy()[mask].mean(),
        "kl_to_ref": k3(ref),
        "kl_to_inference": k3(prev),
    }


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_values_and_gradients_match_torchrl(name):
    ours, ref = run(llm, TensorDict, MaskedTokenDist, name), GOLDEN["grpo"][name]
    for field in SAME_AS_TORCHRL:
        if field in ref["values"]:
            torch.testing.assert_close(ours["values"][field].reshape(-1), ref["values"][field].reshape(-1))
    terms = ("loss_entropy",) if name == "cispo" else ("loss_objective", "loss_entropy")
    for term in terms:
        if term in ref["grads"]:
            for g, r in zip(ours["grads"][term], ref["grads"][term]):
                torch.testing.assert_close(g, r)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_diagnostics_are_means_over_the_masked_tokens(name):
    ours, expected = run(llm, TensorDict, MaskedTokenDist, name)["values"], _reference(name)
    for field, value in expected.items():
        if field in ours:
            torch.testing.assert_close(ours[field], value, msg=field)
    if "loss_kl_to_ref" in ours:
        torch.testing.assert_close(ours["loss_kl_to_ref"], 0.1 * expected["kl_to_ref"])
        torch.testing.assert_close(ours["loss_kl_to_inference"], 0.05 * expected["kl_to_inference"])


def test_cispo_keeps_the_gradient_of_clipped_tokens():
    """CISPO's gradient is -sg(clip(w)) * A * grad log pi on every token, clipped ones included."""
    loss, actor, td = build(llm, TensorDict, MaskedTokenDist, "cispo")
    out = loss(td)
    dist = actor._get_sft_dist(td)
    cur = dist.log_prob(td["tokens", "full"])
    lw = (cur - td["log_probs", "full"]).detach()
    weight = lw.clamp((-loss.clip_epsilon_low).log1p(), loss.clip_epsilon_high.log1p()).exp()
    mask = dist.mask
    surrogate = -(weight * td["advantage"].squeeze(-1) * cur)[mask].sum() / mask.sum()
    assert float(out.clip_fraction) > 0  # the scenario does clip some tokens
    g_ours = torch.autograd.grad(out.loss_objective, list(actor.parameters()))
    g_ref = torch.autograd.grad(surrogate, list(actor.parameters()))
    for a, b in zip(g_ours, g_ref):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(out.loss_objective, GOLDEN["grpo"]["cispo"]["values"]["loss_objective"])


def test_output_class_and_total_loss():
    loss, actor, td = build(llm, TensorDict, MaskedTokenDist, "grpo_kl")
    out = loss(td)
    assert isinstance(out, GRPOLossOutput)
    assert type(DAPO(actor)(td)).__name__ == "DAPOLossOutput"
    total = out.sum(reduce=True)
    total.backward()
    assert actor.head.grad is not None and actor.head.grad.abs().sum() > 0
    assert set(loss.out_keys) >= {"loss_objective", "clip_fraction", "ESS", "kl_approx", "loss_kl_to_ref"}
    assert ("tokens", "full") in loss.in_keys and "advantage" in loss.in_keys


def test_set_keys_renames_the_inputs():
    loss, _, td = build(llm, TensorDict, MaskedTokenDist, "grpo_default")
    expected = loss(td).loss_objective
    td = td.rename_key_("advantage", "adv")
    loss.set_keys(advantage="adv")
    assert loss.tensor_keys.advantage == "adv" and "adv" in loss.in_keys
    torch.testing.assert_close(loss(td).loss_objective, expected)
    with pytest.raises(ValueError, match="accepted keys"):
        loss.set_keys(advantages="x")


def test_ragged_lazy_stack_input_equals_the_padded_batch():
    """pad_output=False data (a lazy stack of per-sample sequences) reads as the left-padded batch."""
    raw = token_batch(seed=1, batch=3, prompt=3, response=3)
    # drop the left padding of each sample and keep the full sequence length per sample
    padded = to_tensordict(raw, TensorDict)
    rows = []
    for i in range(3):
        n_pad = int((~raw["attention"][i, :3]).sum())
        row = padded[i].clone()
        for key in (("tokens", "full"), ("masks", "all_attention_mask"), ("masks", "all_assistant_mask"),
                    ("log_probs", "full"), ("next", "ref_log_probs", "full")):
            row[key] = padded[i][key][n_pad:]
        rows.append(row)
    ragged = lazy_stack(rows)

    class RaggedActor(TinyTokenActor):  # what an LLM wrapper's _get_sft_dist does with ragged input
        def _get_sft_dist(self, td, **kwargs):
            tokens = td.get(("tokens", "full"), as_padded_tensor=True, padding_side="left", padding_value=0)
            mask = td.get(("masks", "all_attention_mask"), as_padded_tensor=True, padding_side="left",
                          padding_value=False).bool()
            mask[..., :3] = False
            return MaskedTokenDist(self.logits(tokens), mask)

    torch.testing.assert_close(
        GRPOLoss(RaggedActor(), kl_to_ref_coeff=0.1)(ragged).loss_objective,
        GRPOLoss(TinyTokenActor(), kl_to_ref_coeff=0.1)(padded).loss_objective,
    )


def test_advantage_shapes():
    loss, _, td = build(llm, TensorDict, MaskedTokenDist, "grpo_default")
    expected = loss(td).loss_objective
    td["advantage"] = td["advantage"].squeeze(-1)  # [B, 1]: one per sequence
    torch.testing.assert_close(loss(td).loss_objective, expected)
    td["advantage"] = torch.randn(4)
    with pytest.raises(ValueError, match="advantage"):
        loss(td)


def test_reductions():
    loss, actor, td = build(llm, TensorDict, MaskedTokenDist, "grpo_default")
    mean = loss(td).loss_objective
    per_token = GRPOLoss(actor, reduction="none")(td).loss_objective
    total = GRPOLoss(actor, reduction="sum")(td).loss_objective
    mask = actor._get_sft_dist(td).mask
    assert per_token.shape == (4, 7, 1) and bool((per_token.squeeze(-1)[~mask] == 0).all())
    torch.testing.assert_close(total, per_token.sum())
    torch.testing.assert_close(mean, per_token.sum() / mask.sum())


def test_errors_name_the_problem():
    actor = TinyTokenActor()
    with pytest.raises(ValueError, match="clip_epsilon"):
        GRPOLoss(actor, clip_epsilon=(0.1, 0.2, 0.3))
    with pytest.raises(ValueError, match="low must be < 1"):
        GRPOLoss(actor, clip_epsilon=(1.0, 0.2))
    with pytest.raises(ValueError, match="aggregation"):
        GRPOLoss(actor, aggregation="seq_sum")
    with pytest.raises(ValueError, match="masking_strategy"):
        GRPOLoss(actor, masking_strategy="assistant")
    with pytest.raises(TypeError, match="unexpected keyword"):
        GRPOLoss(actor, clip_eps=0.2)
    with pytest.raises(TypeError, match="get_dist"):
        GRPOLoss(torch.nn.Linear(2, 2))
    _, _, td = build(llm, TensorDict, MaskedTokenDist, "grpo_default")
    with pytest.raises(KeyError, match="advantage"):
        GRPOLoss(actor)(td.exclude("advantage"))
    with pytest.raises(KeyError, match="ref_log_probs"):
        GRPOLoss(actor, kl_to_ref_coeff=0.1)(td.exclude(("next", "ref_log_probs", "full")))
    bad = td.clone()
    bad["log_probs", "full"] = bad["log_probs", "full"][:, 1:]
    with pytest.raises(ValueError, match="masking_strategy"):
        GRPOLoss(actor)(bad)
    bad = td.clone()
    bad["log_probs", "full"] = bad["log_probs", "full"].requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        GRPOLoss(actor)(bad)


def test_nan_stored_log_probs_are_left_out():
    loss, actor, td = build(llm, TensorDict, MaskedTokenDist, "grpo_default")
    mask = actor._get_sft_dist(td).mask
    first = mask.float().argmax(-1)
    td2 = td.clone()
    td2["log_probs", "full"][torch.arange(4), first] = float("nan")
    out = loss(td2)
    assert torch.isfinite(out.loss_objective)
    assert float(out.ESS) > 0


def test_compiles():
    """One compile (~20 s here) covers the shared GRPO path; CISPO adds its detached-weight objective."""
    actor = TinyTokenActor()
    td = to_tensordict(token_batch(seed=1), TensorDict)
    loss = CISPOLoss(actor, kl_to_ref_coeff=0.1)
    eager = loss(td)
    compiled = torch.compile(loss)(td)
    for field in ("loss_objective", "loss_entropy", "loss_kl_to_ref", "ESS", "clip_fraction"):
        torch.testing.assert_close(getattr(compiled, field), getattr(eager, field), rtol=1e-5, atol=1e-6)
