"""ClipPPOLoss / PPOLoss on token data (an LLM policy, no critic): the token-data path of the PPO losses."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

from tdrl.objectives import ClipPPOLoss, KLPENPPOLoss, PPOLoss
from tdrl.objectives.llm import GRPOLoss

from ._actor import TinyTokenActor, to_tensordict, token_batch


def _data():
    return to_tensordict(token_batch(seed=1), TensorDict)


def test_clip_ppo_on_tokens_equals_grpo_with_token_mean():
    """Same objective, entropy and masking (response tokens) as GRPOLoss's defaults."""
    actor = TinyTokenActor()
    td = _data()
    ppo = ClipPPOLoss(actor)
    out = ppo(td)
    assert ppo.tensor_keys.action == ("tokens", "full") and ppo.tensor_keys.sample_log_prob == ("log_probs", "full")
    assert "loss_critic" not in out.keys()
    ref = GRPOLoss(actor)(td)
    for key in ("loss_objective", "loss_entropy", "ESS", "clip_fraction", "kl_approx", "entropy"):
        torch.testing.assert_close(out[key], getattr(ref, key), msg=key)
    g = torch.autograd.grad(out["loss_objective"] + out["loss_entropy"], list(actor.parameters()))
    g_ref = torch.autograd.grad(ref.loss_objective + ref.loss_entropy, list(actor.parameters()))
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b)
    assert {"max_ratio", "mean_ratio"} <= set(out.keys())


def test_plain_ppo_by_hand():
    actor = TinyTokenActor()
    td = _data()
    out = PPOLoss(actor, entropy_bonus=False)(td)
    dist = actor._get_sft_dist(td)
    cur = dist.log_prob(td["tokens", "full"])
    w = (cur - td["log_probs", "full"]).exp()
    expected = (-(w * td["advantage"].squeeze(-1)))[dist.mask].mean()
    torch.testing.assert_close(out["loss_objective"], expected)


def test_ragged_and_reductions():
    actor = TinyTokenActor()
    td = _data()
    mean = ClipPPOLoss(actor)(td)["loss_objective"]
    per_token = ClipPPOLoss(actor, reduction="none")(td)["loss_objective"]
    mask = actor._get_sft_dist(td).mask
    torch.testing.assert_close(mean, per_token.sum() / mask.sum())
    torch.testing.assert_close(ClipPPOLoss(actor, reduction="sum")(td)["loss_objective"], per_token.sum())
    # a lazy stack of equal-length samples reads as the dense batch
    torch.testing.assert_close(ClipPPOLoss(actor)(lazy_stack(list(td.unbind(0))))["loss_objective"], mean)


def test_token_data_errors():
    actor = TinyTokenActor()
    critic = torch.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="token data"):
        ClipPPOLoss(actor, critic, critic_coeff=1.0)
    with pytest.raises(ValueError, match="token-data"):
        KLPENPPOLoss(actor)
    td = _data()
    td["advantage"] = torch.randn(4)
    with pytest.raises(ValueError, match="advantage"):
        ClipPPOLoss(actor)(td)
    with pytest.raises(KeyError, match="log_probs"):
        ClipPPOLoss(actor)(_data().exclude(("log_probs", "full")))
