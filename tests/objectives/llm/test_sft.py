"""SFTLoss: TorchRL 0.14.1 golden values and gradients, the KL averaged over assistant tokens, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tdrl.objectives.llm import SFTLoss, SFTLossOutput
from tdrl.objectives.llm.sft import minor_sft_loss, sft_loss

from ._actor import TinyTokenActor
from ._sft_scenarios import SFT_SCENARIOS, build_sft, run_sft

GOLDEN = torch.load(Path(__file__).with_name("golden_llm_torchrl_0_14_1.pt"), weights_only=True)["sft"]


@pytest.mark.parametrize("name", list(SFT_SCENARIOS))
def test_loss_and_gradient_match_torchrl(name):
    ours, ref = run_sft(SFTLoss, name), GOLDEN[name]
    torch.testing.assert_close(ours["values"]["loss_sft"], ref["values"]["loss_sft"])
    for g, r in zip(ours["grads"], ref["grads"]):
        torch.testing.assert_close(g, r)


def test_sft_by_hand_and_kl_over_assistant_tokens():
    loss, actor, td = build_sft(SFTLoss, "sft_none_kl")
    out = loss(td)
    assert isinstance(out, SFTLossOutput) and out.loss_sft.shape == (4,)
    scored = actor(td.select(("tokens", "full"))).get(("log_probs", "full"), as_list=True)
    masks = [m & a for m, a in zip(td.get(("masks", "all_assistant_mask"), as_list=True),
                                   td.get(("masks", "all_attention_mask"), as_list=True))]
    expected = torch.stack([-(lp[m]).mean() for lp, m in zip(scored, masks)])
    torch.testing.assert_close(out.loss_sft, expected)
    ref = td.get(("next", "ref_log_probs", "full"), as_list=True)
    diffs = torch.cat([(r - lp)[m] for r, lp, m in zip(ref, scored, masks)])
    kl = (diffs.expm1() - diffs).mean()
    torch.testing.assert_close(out.kl_to_ref, kl)
    torch.testing.assert_close(out.loss_kl_to_ref, 0.1 * kl)
    assert out.sum(reduce=True).requires_grad


def test_functional_forms():
    torch.testing.assert_close(sft_loss(torch.tensor([-2.0, -4.0]), "sum"), torch.tensor(6.0))
    value = minor_sft_loss(torch.tensor([1.0]), torch.tensor([0.0]), 2.0, "none")
    torch.testing.assert_close(value, -torch.nn.functional.logsigmoid(torch.tensor([2.0])))
    with pytest.raises(ValueError, match="shape"):
        minor_sft_loss(torch.zeros(2), torch.zeros(3), 0.1, "mean")


def test_errors():
    actor = TinyTokenActor()
    with pytest.raises(ValueError, match="tokenizer"):
        SFTLoss(actor)
    with pytest.raises(ValueError, match="loss_function"):
        SFTLoss(actor, tokenizer="t", loss_function="dpo")
    with pytest.warns(UserWarning, match="minor_sft"):
        SFTLoss(actor, tokenizer="t", loss_function="minor_sft", kl_to_ref_coeff=0.1)
    loss, _, td = build_sft(SFTLoss, "minor_sft")
    with pytest.raises(KeyError, match="ref_log_probs"):
        loss(td.exclude(("next", "ref_log_probs", "full")))
    loss, _, td = build_sft(SFTLoss, "sft_mean")
    td = td.clone()
    td["masks", "all_assistant_mask"] = torch.zeros(4, 7, dtype=torch.bool)
    with pytest.raises(ValueError, match="no assistant token"):
        loss(td)
