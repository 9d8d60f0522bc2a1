"""Output containers and LLMMaskedCategorical: fields, padded vs ragged access, specs, errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict, lazy_stack

from tdrl.data import Composite
from tdrl.modules.distributions.llm import LLMMaskedCategorical
from tdrl.modules.llm import ChatHistory, LLMWrapperBase, LogProbs, Masks, Text, Tokens
from tdrl.modules.llm.policies._layout import pad, read_ragged, scatter_like, unpad
from tdrl.modules.llm.policies.common import LogProbDistribution


def _ragged_tokens() -> Tokens:
    return lazy_stack(
        [
            Tokens(prompt=torch.tensor([1, 2]), response=torch.tensor([3]), full=torch.tensor([1, 2, 3]), padded=False),
            Tokens(prompt=torch.tensor([4]), response=torch.tensor([5, 6]), full=torch.tensor([4, 5, 6]), padded=False),
        ]
    )


def test_fields_match_torchrl() -> None:
    for cls, names in (
        (Tokens, ["prompt", "response", "full", "padded"]),
        (LogProbs, ["prompt", "response", "full", "padded"]),
        (Masks, ["all_attention_mask", "all_assistant_mask", "padded"]),
        (Text, ["prompt", "response", "full"]),
        (ChatHistory, ["prompt", "response", "full"]),
    ):
        assert [f.name for f in cls.__dataclass_fields__.values()] == names, cls


def test_ragged_item_access_and_padding() -> None:
    toks = _ragged_tokens()
    assert toks[1].response.tolist() == [5, 6]
    assert [t.tolist() for t in toks.get("response", as_list=True)] == [[3], [5, 6]]
    right = toks.get("response", as_padded_tensor=True, padding_side="right", padding_value=-1)
    assert right.tolist() == [[3, -1], [5, 6]]
    td = TensorDict(tokens=toks, batch_size=[2])
    assert td[0]["tokens"].full.tolist() == [1, 2, 3]
    assert td.get(("tokens", "prompt"), as_list=True)[1].tolist() == [4]


def test_padded_item_access() -> None:
    lp = LogProbs(full=torch.tensor([[0.0, -1.0, -2.0], [0.0, 0.0, -3.0]]), padded=True, batch_size=[2])
    assert lp[1].full.tolist() == [0.0, 0.0, -3.0]
    assert lp[1].padded is True
    text = Text(prompt=["a", "bc"], response=["x", "y"], batch_size=[2])
    assert text[1].prompt == "bc"


@pytest.mark.parametrize("cls", [Tokens, LogProbs, Masks, Text])
def test_default_spec(cls: type) -> None:
    spec = cls.default_spec(shape=(4, -1))
    assert isinstance(spec, Composite)
    assert spec.shape == torch.Size([4])
    assert spec.data_cls is cls and spec.step_mdp_static


def test_tokens_to_text_rejects_padded() -> None:
    toks = Tokens(prompt=torch.ones(2, 3, dtype=torch.long), padded=True, batch_size=[2])
    with pytest.raises(ValueError, match="padded"):
        toks.to_text(tokenizer=None)


def test_layout_helpers_round_trip() -> None:
    seqs = [torch.tensor([1, 2, 3]), torch.tensor([4])]
    left = pad(seqs, 0, "left")
    mask = pad([torch.ones(3, dtype=torch.bool), torch.ones(1, dtype=torch.bool)], False, "left")
    assert left.tolist() == [[1, 2, 3], [0, 0, 4]]
    assert [u.tolist() for u in unpad(left, mask)] == [[1, 2, 3], [4]]
    assert torch.equal(scatter_like(unpad(left, mask), mask), left)
    with pytest.raises(ValueError, match="real positions"):
        scatter_like([torch.tensor([1])], mask[:1])
    with pytest.raises(ValueError, match="side"):
        pad(seqs, 0, "middle")


def test_read_ragged_uses_masks_not_ids() -> None:
    # the pad id (0) is also a real token in the first row: only the mask tells them apart
    td = TensorDict(
        tokens=TensorDict(full=torch.tensor([[0, 7, 0], [0, 0, 9]]), batch_size=[2]),
        masks=TensorDict(all_attention_mask=torch.tensor([[1, 1, 1], [0, 0, 1]]).bool(), batch_size=[2]),
        batch_size=[2],
    )
    seqs, mask = read_ragged(td, ("tokens", "full"), [("masks", "all_attention_mask")])
    assert [s.tolist() for s in seqs] == [[0, 7, 0], [9]]
    assert mask is not None
    with pytest.raises(KeyError, match="tokens"):
        read_ragged(td, ("tokens", "prompt"))


def test_llm_masked_categorical() -> None:
    logits = torch.randn(2, 4, 6)
    mask = torch.tensor([[False, True, True, True], [False, False, True, False]])
    tokens = torch.randint(0, 6, (2, 4))
    dist = LLMMaskedCategorical(logits, mask)
    expected = logits.log_softmax(-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1) * mask
    torch.testing.assert_close(dist.log_prob(tokens), expected)
    # ignore_index at a masked position is fine; out-of-range at a masked position never indexes
    tokens[0, 0] = -100
    assert dist.log_prob(tokens)[0, 0] == 0.0
    assert dist.sample().shape == (2, 4)
    token_mask = torch.ones(2, 4, 6, dtype=torch.bool)
    token_mask[..., 0] = False
    tdist = LLMMaskedCategorical(logits, token_mask)
    assert not tdist.position_level_masking
    assert (tdist.sample((50,)) != 0).all()
    assert tdist.log_prob(torch.zeros(2, 4, dtype=torch.long)).isinf().all()
    with pytest.raises(ValueError, match="mask shape"):
        LLMMaskedCategorical(logits, torch.ones(3, dtype=torch.bool))


def test_log_prob_distribution() -> None:
    d = LogProbDistribution(torch.tensor([[-1.0, -2.0]]))
    assert d.log_prob(torch.zeros(1, 2)).tolist() == [[-1.0, -2.0]]
    with pytest.raises(ValueError, match="shape"):
        d.log_prob(torch.zeros(3))


def test_generate_kwargs_standardised_and_validated() -> None:
    out = LLMWrapperBase._standardize_generate_kwargs({"max_tokens": 3, "max_new_tokens": 9, "n": 2})
    assert out == {"max_new_tokens": 3, "num_return_sequences": 2}
    for bad, match in (
        ({"top_k": 0}, "top_k"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"do_sample": False, "temperature": 0.7}, "greedy"),
    ):
        with pytest.raises(ValueError, match=match):
            LLMWrapperBase._standardize_generate_kwargs(bad)
