"""Comparison datasets for reward-model training: :class:`RewardData` and :class:`PairwiseDataset` (chosen vs
rejected completions of the same prompt)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.data.llm.dataset import TensorDictTokenizer, TokenizedDatasetLoader

__all__ = ["PairwiseDataset", "RewardData", "pre_tokenization_hook"]

DEFAULT_DATASET = "CarperAI/openai_summarize_comparisons"


class RewardData(NoCastTensorClass):
    """Tokenized texts for a reward model, with the rewards it gives them once scored.

    Examples:
        >>> RewardData(input_ids=torch.zeros(2, 3), attention_mask=torch.ones(2, 3), batch_size=[2]).rewards is None
        True
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rewards: torch.Tensor | None = None
    end_scores: torch.Tensor | None = None


class PairwiseDataset(NoCastTensorClass):
    """Pairs of tokenized completions of the same prompt: ``chosen_data`` is preferred to ``rejected_data``.

    Examples:
        >>> half = RewardData(input_ids=torch.zeros(2, 3), attention_mask=torch.ones(2, 3), batch_size=[2])
        >>> PairwiseDataset(chosen_data=half, rejected_data=half.clone(), batch_size=[2])[0].chosen_data.input_ids
        tensor([0., 0., 0.])
    """

    chosen_data: RewardData
    rejected_data: RewardData

    @classmethod
    def from_dataset(cls, split: str, dataset_name: Any = None, max_length: int = 550, root_dir: str | None = None,
                     from_disk: bool = False, num_workers: int | None = None,
                     **loader_kwargs: Any) -> PairwiseDataset:
        """Tokenizes a local dataset of ``{"prompt", "chosen", "rejected"}`` records (filtered by
        :func:`pre_tokenization_hook`; see :class:`~tdrl.data.llm.TokenizedDatasetLoader` for
        ``dataset_name`` and the cache); ``loader_kwargs`` go to the loader.

        Examples:
            >>> PairwiseDataset.from_dataset.__name__
            'from_dataset'
        """
        loader = TokenizedDatasetLoader(split, max_length, dataset_name if dataset_name is not None else DEFAULT_DATASET,
                                        TensorDictTokenizer, pre_tokenization_hook, root_dir=root_dir,
                                        from_disk=from_disk, num_workers=num_workers, **loader_kwargs)
        data = loader.load()
        half = data.shape[0] // 2
        chosen, rejected = data[:half], data[half:]
        return cls(
            chosen_data=RewardData(input_ids=chosen["input_ids"], attention_mask=chosen["attention_mask"],
                                   batch_size=[half]),
            rejected_data=RewardData(input_ids=rejected["input_ids"], attention_mask=rejected["attention_mask"],
                                     batch_size=[half]),
            batch_size=[half],
        )


def pre_tokenization_hook(dataset: Iterable[Mapping[str, str]], min_length: int = 5) -> list[dict[str, str]]:
    """Keeps the comparisons whose chosen and rejected texts differ and both have ``min_length`` words; returns
    ``{"text": prompt + "\\n" + completion}`` records, the chosen ones first, then the rejected ones in the
    same order.

    Examples:
        >>> pre_tokenization_hook([{"prompt": "Q", "chosen": "a b c d e", "rejected": "v w x y z"},
        ...                        {"prompt": "Q", "chosen": "same", "rejected": "same"}])
        [{'text': 'Q\\na b c d e'}, {'text': 'Q\\nv w x y z'}]
    """
    chosen, rejected = [], []
    for sample in dataset:
        good, bad = sample["chosen"], sample["rejected"]
        if good == bad or len(good.split()) < min_length or len(bad.split()) < min_length:
            continue
        chosen.append({"text": sample["prompt"] + "\n" + good})
        rejected.append({"text": sample["prompt"] + "\n" + bad})
    return chosen + rejected
