"""RewardData, PairwiseDataset.from_dataset on local comparisons, pre_tokenization_hook's filter."""

from __future__ import annotations

import json

from tdrl.data.llm import PairwiseDataset, RewardData
from tdrl.data.llm.reward import pre_tokenization_hook

from ._rlhf_records import COMPARISONS
from ._rlhf_tok import tokenizer_dir  # noqa: F401 (fixture)


def test_hook_keeps_differing_long_enough_pairs():
    out = pre_tokenization_hook(COMPARISONS, min_length=3)
    assert out == [{"text": "What is 2 + 3?\nThe answer is 5 thanks"},
                   {"text": "User: question\nAssistant: answer step by step"},
                   {"text": "What is 2 + 3?\nThe answer is 6 thanks"},
                   {"text": "User: question\nHello how are you ?"}]
    assert pre_tokenization_hook(COMPARISONS, min_length=6) == []


def test_pairwise_from_dataset(tmp_path, tokenizer_dir):  # noqa: F811
    path = tmp_path / "comparisons-local.json"
    path.write_text(json.dumps({"train": COMPARISONS}))
    data = PairwiseDataset.from_dataset("train", str(path), max_length=24, root_dir=str(tmp_path),
                                        tokenizer_model_name=tokenizer_dir)
    assert data.batch_size == (2,)
    assert isinstance(data.chosen_data, RewardData) and data.chosen_data.input_ids.shape == (2, 24)
    assert data.chosen_data.rewards is None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    chosen = tok.decode(data.chosen_data.input_ids[0][data.chosen_data.attention_mask[0].bool()])
    rejected = tok.decode(data.rejected_data.input_ids[0][data.rejected_data.attention_mask[0].bool()])
    assert chosen == "What is 2 + 3?\nThe answer is 5 thanks" and rejected == "What is 2 + 3?\nThe answer is 6 thanks"
    assert (tmp_path / "comparisons" / "train" / "24").is_dir()
