"""GPT2RewardModel against TorchRL 0.14.1 (rewards, end scores, pairwise loss and its gradient on a tiny saved
GPT-2), pad-id inference, the class-level loss call and save / load; LMHeadActorValueOperator's heads."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _reward_scenario import CHOSEN, PAD, REJECTED, save_tiny_gpt2  # noqa: E402

pytest.importorskip("transformers", reason="GPT-2 models need the `llm` extra (transformers)")

from tdrl.modules import LMHeadActorValueOperator  # noqa: E402
from tdrl.modules.models import GPT2RewardModel  # noqa: E402

GOLDEN = torch.load(Path(__file__).with_name("gpt2_reward_torchrl_0_14_1.pt"), weights_only=True)


@pytest.fixture(scope="module")
def trunk(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2")
    save_tiny_gpt2(path)
    return path


def test_reward_model_matches_torchrl(trunk):
    model = GPT2RewardModel(trunk, pad_token_id=PAD)
    model.load_state_dict(GOLDEN["state_dict"])
    batches = {}
    for name, ids in (("chosen", CHOSEN), ("rejected", REJECTED)):
        rewards, end_scores = model(ids, (ids != PAD).long())
        torch.testing.assert_close(rewards, GOLDEN[f"{name}_rewards"])
        torch.testing.assert_close(end_scores, GOLDEN[f"{name}_end_scores"])
        batches[name] = SimpleNamespace(input_ids=ids, rewards=rewards)
    loss = model.compute_reward_loss(batches["chosen"], batches["rejected"])
    torch.testing.assert_close(loss, GOLDEN["loss"])
    torch.testing.assert_close(torch.autograd.grad(loss, model.lm_head.weight)[0], GOLDEN["loss_grad"])
    # the end score is the reward of the last token before the first pad (the whole row when none)
    rewards, end_scores = model(CHOSEN, (CHOSEN != PAD).long())
    torch.testing.assert_close(end_scores, torch.stack([rewards[0, 3], rewards[1, 2], rewards[2, 5]]))


def test_loss_by_hand_and_class_level_call():
    chosen = SimpleNamespace(input_ids=torch.tensor([[1, 2, 3, 0], [4, 4, 0, 0]]),
                             rewards=torch.tensor([[0.0, 1.0, 2.0, 9.0], [1.0, 1.0, 5.0, 5.0]]))
    rejected = SimpleNamespace(input_ids=torch.tensor([[1, 3, 0, 0], [4, 4, 0, 0]]),
                               rewards=torch.tensor([[0.0, -1.0, 0.5, 9.0], [1.0, 1.0, 5.0, 5.0]]))
    # row 0 diverges at 1 and ends at 3 (the longer of the two); row 1 is identical: skipped
    expected = -torch.nn.functional.logsigmoid(torch.tensor([2.0, 1.5])).mean()
    torch.testing.assert_close(GPT2RewardModel.compute_reward_loss(chosen, rejected, 0), expected)
    torch.testing.assert_close(GPT2RewardModel.compute_reward_loss(chosen_batch=chosen, rejected_batch=rejected,
                                                                   pad_token_id=0), expected)
    same = GPT2RewardModel.compute_reward_loss(chosen, chosen, 0)
    assert same.item() == 0.0
    with pytest.raises(TypeError, match="rejected"):
        GPT2RewardModel.compute_reward_loss(chosen)
    with pytest.raises(TypeError, match="pad_token_id"):
        GPT2RewardModel.compute_reward_loss(chosen, rejected, 0, pad_token_id=0)


def test_pad_id_inference_and_save_load(trunk, tmp_path):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    bare = GPT2RewardModel(trunk)  # no tokenizer saved: the config's pad id, else its EOS id
    cfg = bare.config
    assert bare.pad_id == (cfg.pad_token_id if cfg.pad_token_id is not None else cfg.eos_token_id)
    with_tok = tmp_path / "with-tok"
    save_tiny_gpt2(with_tok)
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<pad>": 0, "<unk>": 3}, "<unk>")),
                                  pad_token="<pad>", unk_token="<unk>")
    tok.save_pretrained(with_tok)
    assert GPT2RewardModel(with_tok).pad_id == 0
    model = GPT2RewardModel(trunk, pad_token_id=PAD)
    model.save_pretrained(tmp_path / "saved")
    loaded = GPT2RewardModel.from_pretrained(tmp_path / "saved")
    assert loaded.pad_id == PAD
    ids = CHOSEN[:1]
    torch.testing.assert_close(loaded(ids, torch.ones_like(ids))[0], model(ids, torch.ones_like(ids))[0])
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        model(ids[0], torch.ones_like(ids[0]))


def test_lm_head_actor_value_operator(trunk):
    from transformers import GPT2LMHeadModel

    base = GPT2LMHeadModel.from_pretrained(trunk)
    op = LMHeadActorValueOperator(base)
    td = TensorDict(input_ids=CHOSEN, attention_mask=torch.ones_like(CHOSEN), batch_size=[3])
    out = op(td.clone())
    hidden = base.transformer(input_ids=CHOSEN, attention_mask=torch.ones_like(CHOSEN))[0][:, -1]
    torch.testing.assert_close(out["x"], hidden)
    torch.testing.assert_close(out["logits"], base.lm_head(hidden))
    assert out["action"].shape == (3,) and out["action"].dtype == torch.long
    log_prob = torch.distributions.Categorical(logits=out["logits"]).log_prob(out["action"])
    torch.testing.assert_close(out["action_log_prob"], log_prob)
    torch.testing.assert_close(out["state_value"], op.get_value_head().module(hidden))
    policy_keys = set(op.get_policy_operator()(td.clone()).keys())
    assert {"action", "logits"} <= policy_keys and "state_value" not in policy_keys
    with pytest.raises(TypeError, match="transformer"):
        LMHeadActorValueOperator(base.transformer)
