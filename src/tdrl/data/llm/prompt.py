"""Prompt datasets for RLHF: :class:`PromptData` (prompt + label tokens) and its tokenizing recipe
:class:`PromptTensorDictTokenizer`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.data.llm.dataset import TensorDictTokenizer, TokenizedDatasetLoader

__all__ = ["PromptData", "PromptTensorDictTokenizer"]

DEFAULT_DATASET = "CarperAI/openai_summarize_tldr"


class PromptData(NoCastTensorClass):
    """Tokenized prompts followed by their labels; ``prompt_rindex`` is the index of each prompt's last token.

    Examples:
        >>> data = PromptData(input_ids=torch.tensor([[5, 6, 7, 8]]), attention_mask=torch.ones(1, 4),
        ...                   prompt_rindex=torch.tensor([2]), batch_size=[1])
        >>> data.mask_label(pad_token_id=0).input_ids
        tensor([[5, 6, 0, 0]])
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    prompt_rindex: torch.Tensor
    labels: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None

    def mask_label(self, pad_token_id: int = 50256) -> PromptData:
        """The prompts alone: the tokens from ``prompt_rindex`` on are replaced by ``pad_token_id``."""
        block_size = self.input_ids.shape[-1]
        positions = torch.arange(block_size, device=self.prompt_rindex.device)
        # TorchRL masks from prompt_rindex on (the prompt's last token included); same here
        attention_mask = (positions < self.prompt_rindex.unsqueeze(-1)).to(torch.int64)
        input_ids = torch.where(attention_mask == 1, self.input_ids, pad_token_id)
        return type(self)(input_ids=input_ids, attention_mask=attention_mask, prompt_rindex=self.prompt_rindex,
                          loss=self.loss, batch_size=[])

    @classmethod
    def from_dataset(cls, split: str, dataset_name: Any = None, max_length: int = 550, root_dir: str | None = None,
                     from_disk: bool = False, num_workers: int | None = None, **loader_kwargs: Any) -> PromptData:
        """Tokenizes a local dataset of ``{"prompt": ..., "label": ...}`` records (see
        :class:`~tdrl.data.llm.TokenizedDatasetLoader` for ``dataset_name`` and the cache); ``labels`` are
        the ``input_ids``. ``loader_kwargs`` (``tokenizer_class``, ``tokenizer_model_name``, ...) go to the
        loader.

        Examples:
            >>> PromptData.from_dataset.__name__
            'from_dataset'
        """
        loader = TokenizedDatasetLoader(split, max_length, dataset_name if dataset_name is not None else DEFAULT_DATASET,
                                        PromptTensorDictTokenizer, root_dir=root_dir, from_disk=from_disk,
                                        num_workers=num_workers, **loader_kwargs)
        data = loader.load()
        return cls(input_ids=data["input_ids"], attention_mask=data["attention_mask"],
                   prompt_rindex=data["prompt_rindex"], labels=data["input_ids"], batch_size=data.shape)


class PromptTensorDictTokenizer(TensorDictTokenizer):
    """Tokenizes ``prompt + label`` to ``max_length`` and records each prompt's last-token index.

    Writes ``"input_ids"`` / ``"attention_mask"`` (the concatenation), ``"prompt_rindex"`` (the index of the
    prompt's last token, from tokenizing the prompt alone) and ``"valid_sample"`` (``False`` where the
    sequence does not end with the EOS token, i.e. it was truncated). Args as :class:`TensorDictTokenizer`,
    with ``key="prompt"``; the label is read from ``"label"``.

    Examples:
        >>> class Tok:  # one id per character, 1 is EOS and pad
        ...     eos_token_id = 1
        ...     def __call__(self, text, max_length, truncation, padding=False):
        ...         ids = [[ord(c) for c in t][:max_length] for t in text]
        ...         if padding == "max_length":
        ...             ids = [r + [1] * (max_length - len(r)) for r in ids]
        ...         return {"input_ids": ids, "attention_mask": [[1] * len(r) for r in ids]}
        >>> out = PromptTensorDictTokenizer(Tok(), 4)({"prompt": ["ab", "abcd"], "label": ["c", "e"]})
        >>> out["prompt_rindex"].tolist(), out["valid_sample"].tolist()
        ([1, 3], [True, False])
    """

    def __init__(self, tokenizer: Any, max_length: int, key: str = "prompt", padding: str = "max_length",
                 truncation: bool = True, return_tensordict: bool = True, device: Any = None) -> None:
        super().__init__(tokenizer, max_length, key=key, padding=padding, truncation=truncation,
                         return_tensordict=return_tensordict, device=device)

    def __call__(self, sample: Mapping[str, Any]) -> Any:
        for key in (self.key, "label"):
            if key not in sample:
                raise KeyError(f"PromptTensorDictTokenizer: the example has no {key!r} entry (keys: {sorted(sample)})")
        prompts, labels = sample[self.key], sample["label"]
        prompt_tokens = self.tokenizer(prompts, max_length=self.max_length, truncation=True)
        tokens = dict(self.tokenizer([p + label for p, label in zip(prompts, labels, strict=True)],
                                     max_length=self.max_length, padding=self.padding, truncation=self.truncation))
        tokens["prompt_rindex"] = [len(p) - 1 for p in prompt_tokens["input_ids"]]
        tokens["valid_sample"] = [ids[-1] == self.tokenizer.eos_token_id for ids in tokens["input_ids"]]
        if not self.return_tensordict:
            return tokens
        return TensorDict({k: torch.as_tensor(v) for k, v in tokens.items()}, batch_size=[len(prompts)],
                          device=self.device)
