"""TensorDictTokenizer (TorchRL 0.14.1 golden), TokenizedDatasetLoader (local files, cache, valid split, errors)
and get_dataloader."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch

from tdrl.data.llm import PromptData, TensorDictTokenizer, TokenizedDatasetLoader, get_dataloader

from ._rlhf_records import MAX_LENGTH, PROMPTS, TEXTS, gpt2_like
from ._rlhf_tok import tokenizer_dir  # noqa: F401 (fixture)

GOLDEN = json.loads(pathlib.Path(__file__).with_name("golden_rlhf_torchrl_0_14_1.json").read_text())


def test_tensordict_tokenizer_matches_torchrl(tokenizer):
    tok = gpt2_like(tokenizer)
    out = TensorDictTokenizer(tok, MAX_LENGTH)({"text": TEXTS})
    assert out.batch_size == (len(TEXTS),)
    for key, value in GOLDEN["text"].items():
        assert out[key].tolist() == value, key
    single = TensorDictTokenizer(tok, MAX_LENGTH)({"text": TEXTS[0]})
    assert list(single.batch_size) == GOLDEN["text_single"]["batch_size"]
    assert single["input_ids"].tolist() == GOLDEN["text_single"]["input_ids"]
    raw = TensorDictTokenizer(tok, MAX_LENGTH, return_tensordict=False)({"text": TEXTS})
    assert raw["input_ids"] == GOLDEN["text"]["input_ids"]
    with pytest.raises(KeyError, match="'text'"):
        TensorDictTokenizer(tok, MAX_LENGTH)({"prompt": "x"})


def _write_jsonl(path: pathlib.Path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_loader_tokenizes_caches_and_filters(tmp_path, tokenizer_dir):  # noqa: F811
    from tdrl.data.llm import PromptTensorDictTokenizer

    name = _write_jsonl(tmp_path / "tldr-local.jsonl", PROMPTS)
    root = tmp_path / "cache"
    loader = TokenizedDatasetLoader("train", MAX_LENGTH, name, PromptTensorDictTokenizer, root_dir=str(root),
                                    tokenizer_model_name=tokenizer_dir)
    assert loader.tokenizer.pad_token == loader.tokenizer.eos_token
    data = loader.load()
    # the rows TorchRL's recipe marks invalid (truncated: not ending with EOS) are dropped
    valid = GOLDEN["prompt"]["valid_sample"]
    expected = [ids for ids, ok in zip(GOLDEN["prompt"]["input_ids"], valid) if ok]
    assert data["input_ids"].tolist() == expected
    assert set(data.keys()) == {"input_ids", "attention_mask", "prompt_rindex"}
    assert (root / "tldr" / "train" / str(MAX_LENGTH)).is_dir() and data.is_memmap()
    pathlib.Path(name).unlink()  # the second load reads the cache, not the file
    assert loader.load()["input_ids"].tolist() == expected


def test_loader_json_splits_valid_size_and_records(tmp_path, tokenizer_dir):  # noqa: F811
    path = tmp_path / "texts.json"
    path.write_text(json.dumps({"valid": [{"text": t} for t in TEXTS], "train": []}))
    loader = TokenizedDatasetLoader("valid", MAX_LENGTH, str(path), TensorDictTokenizer, root_dir=str(tmp_path),
                                    valid_size=2, tokenizer_model_name=tokenizer_dir)
    assert loader.load()["input_ids"].tolist() == GOLDEN["text"]["input_ids"][:2]
    in_memory = TokenizedDatasetLoader("train", MAX_LENGTH, [{"text": t} for t in TEXTS], TensorDictTokenizer,
                                       tokenizer_model_name=tokenizer_dir).load()
    assert in_memory["input_ids"].tolist() == GOLDEN["text"]["input_ids"] and not in_memory.is_memmap()
    with pytest.raises(ValueError, match="holds no record"):
        TokenizedDatasetLoader("train", MAX_LENGTH, str(path), TensorDictTokenizer, root_dir=str(tmp_path / "x"),
                               tokenizer_model_name=tokenizer_dir).load()
    with pytest.raises(TypeError, match="record 0"):
        TokenizedDatasetLoader("train", MAX_LENGTH, ["just text"], TensorDictTokenizer,
                               tokenizer_model_name=tokenizer_dir).load()


def test_dataset_to_tensordict_memmaps_under_prefix(tmp_path):
    data = {"tokens": torch.arange(6).view(3, 2), "ok": torch.tensor([True, False, True])}
    out = TokenizedDatasetLoader.dataset_to_tensordict(data, tmp_path, prefix=("a", "b"), valid_mask_key="ok")
    assert out["a", "b", "tokens"].tolist() == [[0, 1], [4, 5]] and out.is_memmap()
    assert (tmp_path / "a" / "b").is_dir()


def test_get_dataloader_batches_without_replacement(tmp_path, tokenizer_dir):  # noqa: F811
    name = _write_jsonl(tmp_path / "prompts.jsonl", [dict(r, label=".") for r in PROMPTS] * 3)

    class LocalPromptData(PromptData):
        @classmethod
        def from_dataset(cls, split, dataset_name=None, max_length=550, root_dir=None, from_disk=False,
                         num_workers=None):
            return PromptData.from_dataset(split, dataset_name, max_length, root_dir, from_disk, num_workers,
                                           tokenizer_model_name=tokenizer_dir)

    rb = get_dataloader(2, 64, LocalPromptData, "cpu", dataset_name=name, infinite=False, root_dir=str(tmp_path))
    batches = list(rb)
    assert len(batches) == 6 and all(isinstance(b, PromptData) and b.input_ids.shape == (2, 64) for b in batches)
    seen = torch.cat([b.input_ids for b in batches])
    assert len({tuple(r) for r in seen.tolist()}) == 4  # each of the 4 distinct rows, 3 times: one epoch
    endless = get_dataloader(5, 64, LocalPromptData, "cpu", dataset_name=name, root_dir=str(tmp_path))
    assert [next(endless).batch_size for _ in range(5)] == [torch.Size([5])] * 5
