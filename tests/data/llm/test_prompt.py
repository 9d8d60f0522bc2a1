"""PromptTensorDictTokenizer and PromptData.mask_label against TorchRL 0.14.1; PromptData.from_dataset."""

from __future__ import annotations

import json
import pathlib

import pytest

from tdrl.data.llm import PromptData, PromptTensorDictTokenizer

from ._rlhf_records import MAX_LENGTH, PROMPTS, gpt2_like
from ._rlhf_tok import tokenizer_dir  # noqa: F401 (fixture)

GOLDEN = json.loads(pathlib.Path(__file__).with_name("golden_rlhf_torchrl_0_14_1.json").read_text())


def test_prompt_tokenizer_and_mask_label_match_torchrl(tokenizer):
    tok = gpt2_like(tokenizer)
    columns = {k: [r[k] for r in PROMPTS] for k in ("prompt", "label")}
    out = PromptTensorDictTokenizer(tok, MAX_LENGTH)(columns)
    for key, value in GOLDEN["prompt"].items():
        assert out[key].tolist() == value, key
    data = PromptData(input_ids=out["input_ids"], attention_mask=out["attention_mask"],
                      prompt_rindex=out["prompt_rindex"], batch_size=out.batch_size)
    masked = data.mask_label(pad_token_id=tok.eos_token_id)
    assert masked.input_ids.tolist() == GOLDEN["mask_label"]["input_ids"]
    assert masked.attention_mask.tolist() == GOLDEN["mask_label"]["attention_mask"]
    with pytest.raises(KeyError, match="'label'"):
        PromptTensorDictTokenizer(tok, MAX_LENGTH)({"prompt": ["a"]})


def test_from_dataset_labels_are_the_inputs(tmp_path, tokenizer_dir):  # noqa: F811
    path = tmp_path / "tldr.jsonl"
    path.write_text("".join(json.dumps(dict(r, label=".")) + "\n" for r in PROMPTS))
    data = PromptData.from_dataset("train", str(path), max_length=64, root_dir=str(tmp_path),
                                   tokenizer_model_name=tokenizer_dir)
    assert data.batch_size == (4,) and data.input_ids.shape == (4, 64)
    assert (data.labels == data.input_ids).all() and data.logits is None
    assert (data.prompt_rindex < data.attention_mask.sum(-1)).all()
