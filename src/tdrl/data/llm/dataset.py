"""Tokenized text datasets for RLHF: :class:`TensorDictTokenizer`, :class:`TokenizedDatasetLoader` (a
memory-mapped, cached copy of a tokenized local dataset) and :func:`get_dataloader`.

Nothing is downloaded: a dataset is a local JSON / JSONL file, a folder written by ``datasets``'
``save_to_disk`` (``from_disk=True``), a list of records, or a hub name already in the local ``datasets`` cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.llm.iterators import create_infinite_iterator
from tdrl.data.replay_buffers import SamplerWithoutReplacement, TensorDictReplayBuffer, TensorStorage

__all__ = ["TensorDictTokenizer", "TokenizedDatasetLoader", "get_dataloader"]

_EXCLUDED_FEATURES = frozenset({"text", "prompt", "label", "valid_sample"})


class TensorDictTokenizer:
    """Tokenizes the text under ``key`` of an example (one string or a batch of strings) to fixed length.

    Args:
        tokenizer: a ``transformers`` tokenizer (it needs a pad token for ``padding="max_length"``).
        max_length: the length of the tokenized sequences.
        key: the example's text entry.
        padding: the tokenizer's ``padding`` mode.
        truncation: truncate sequences longer than ``max_length``.
        return_tensordict: return a ``TensorDict`` (batch size ``[]`` for one string, ``[B]`` for ``B``);
            otherwise the tokenizer's own output (lists), as ``datasets.Dataset.map`` wants it.
        device: the device of the returned tensordict.

    Examples:
        >>> class Tok:  # any callable with the transformers tokenizer interface
        ...     def __call__(self, text, max_length, padding, truncation):
        ...         ids = [[ord(c) for c in t][:max_length] + [0] * (max_length - len(t)) for t in text]
        ...         return {"input_ids": ids, "attention_mask": [[int(i > 0) for i in r] for r in ids]}
        >>> TensorDictTokenizer(Tok(), max_length=4)({"text": ["ab", "abc"]})["input_ids"]
        tensor([[97, 98,  0,  0],
                [97, 98, 99,  0]])
    """

    def __init__(self, tokenizer: Any, max_length: int, key: str = "text", padding: str = "max_length",
                 truncation: bool = True, return_tensordict: bool = True, device: Any = None) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.key = key
        self.padding = padding
        self.truncation = truncation
        self.return_tensordict = return_tensordict
        self.device = device

    def __call__(self, sample: Mapping[str, Any]) -> Any:
        if self.key not in sample:
            raise KeyError(f"TensorDictTokenizer: the example has no {self.key!r} entry (keys: {sorted(sample)})")
        text = sample[self.key]
        tokens = self.tokenizer(text, max_length=self.max_length, padding=self.padding, truncation=self.truncation)
        if not self.return_tensordict:
            return tokens
        batch_size = [] if isinstance(text, str) else [len(text)]
        return TensorDict({k: torch.as_tensor(v) for k, v in dict(tokens).items()}, batch_size=batch_size,
                          device=self.device)


def _read_records(dataset_name: Any, split: str, from_disk: bool) -> Any:
    """The records of a local dataset (see the module docstring); never downloads."""
    if isinstance(dataset_name, (str, os.PathLike)):
        path = Path(dataset_name)
        if path.suffix in (".json", ".jsonl") and path.is_file():
            text = path.read_text()
            if path.suffix == ".jsonl":
                return [json.loads(line) for line in text.splitlines() if line.strip()]
            records = json.loads(text)
            return records[split] if isinstance(records, dict) else records
        try:
            import datasets  # noqa: PLC0415 (optional: only for save_to_disk folders and cached hub names)
        except ImportError as err:
            raise ImportError(
                f"dataset_name={str(dataset_name)!r} is neither a .json nor a .jsonl file; a save_to_disk folder "
                "(from_disk=True) or a cached hub dataset needs the `datasets` package: pip install datasets. "
                "Or pass the records themselves (a list of dicts)."
            ) from err
        if from_disk:
            return datasets.load_from_disk(str(dataset_name))[split]
        # the hub name is read from the local cache only when HF_HUB_OFFLINE=1 (tdrl never forces a download)
        return datasets.load_dataset(str(dataset_name), split=split)
    return dataset_name


def _as_columns(records: Any) -> dict[str, list]:
    if isinstance(records, Mapping):
        return {k: list(v) for k, v in records.items()}
    if hasattr(records, "to_dict") and not isinstance(records, list):  # a datasets.Dataset
        return dict(records.to_dict())
    columns: dict[str, list] = {}
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(f"dataset record {i} is a {type(record).__name__}; expected a dict of fields")
        for key, value in record.items():
            columns.setdefault(key, []).append(value)
    return columns


class TokenizedDatasetLoader:
    """Loads a text dataset, tokenizes it and caches a memory-mapped copy in
    ``<root_dir>/<dataset name>/<split>/<max_length>/`` (read back on the next :meth:`load`).

    Args:
        split: the split to read (``"train"``, ``"valid"``, ...); a ``"valid*"`` split keeps ``valid_size`` rows.
        max_length: the tokenized sequence length.
        dataset_name: a local ``.json`` / ``.jsonl`` file (a JSON object maps splits to record lists), a
            ``save_to_disk`` folder (``from_disk=True``), a hub name already cached by ``datasets`` (with
            ``HF_HUB_OFFLINE=1`` nothing is downloaded), or the records themselves (a list of dicts; then
            the result stays in memory, uncached).
        tokenizer_fn: the tokenizing recipe class (:class:`TensorDictTokenizer`, ``PromptTensorDictTokenizer``),
            called as ``tokenizer_fn(tokenizer, max_length=..., return_tensordict=False)``.
        pre_tokenization_hook: called on the records before tokenization (e.g. to filter them).
        root_dir: the cache folder (default ``~/.cache/tdrl/data``).
        from_disk: read ``dataset_name`` with ``datasets.load_from_disk``.
        valid_size: the number of rows kept for a ``"valid*"`` split.
        num_workers: kept for TorchRL's signature (tokenization runs in this process, in batches).
        tokenizer_class: the tokenizer factory (default ``transformers.AutoTokenizer``).
        tokenizer_model_name: what ``tokenizer_class.from_pretrained`` loads (default ``"gpt2"``, which must
            be in the local cache; a folder written by ``save_pretrained`` works offline).

    Examples:
        >>> class Tok:
        ...     eos_token = pad_token = "<eos>"
        ...     def __call__(self, text, max_length, padding, truncation):
        ...         ids = [[ord(c) for c in t][:max_length] + [0] * (max_length - len(t)) for t in text]
        ...         return {"input_ids": ids, "attention_mask": [[int(i > 0) for i in r] for r in ids]}
        ...     @classmethod
        ...     def from_pretrained(cls, name):
        ...         return cls()
        >>> loader = TokenizedDatasetLoader("train", 4, [{"text": "ab"}, {"text": "abc"}], TensorDictTokenizer,
        ...                                 tokenizer_class=Tok)
        >>> loader.load()["attention_mask"].sum(-1)
        tensor([2, 3])
    """

    def __init__(self, split: str, max_length: int, dataset_name: Any, tokenizer_fn: type,
                 pre_tokenization_hook: Callable | None = None, root_dir: str | None = None,
                 from_disk: bool = False, valid_size: int = 2000, num_workers: int | None = None,
                 tokenizer_class: Any = None, tokenizer_model_name: str | None = None) -> None:
        self.split = split
        self.max_length = max_length
        self.dataset_name = dataset_name
        self.tokenizer_fn = tokenizer_fn
        self.pre_tokenization_hook = pre_tokenization_hook
        self.root_dir = root_dir
        self.from_disk = from_disk
        self.valid_size = valid_size
        self.num_workers = num_workers if num_workers is not None else max((os.cpu_count() or 2) // 2, 1)
        if tokenizer_class is None:
            try:
                from transformers import AutoTokenizer  # noqa: PLC0415 (optional extra)
            except ImportError as err:
                raise ImportError("TokenizedDatasetLoader's default tokenizer_class needs the `llm` extra: "
                                  "pip install 'tdrl[llm]' (or pass tokenizer_class=...).") from err
            tokenizer_class = AutoTokenizer
        # TorchRL 0.14.1 ignores tokenizer_class and always uses AutoTokenizer (docs/differences.md)
        self.make_tokenizer(tokenizer_class=tokenizer_class, tokenizer_model_name=tokenizer_model_name or "gpt2")

    def make_tokenizer(self, *, tokenizer_class: Any, tokenizer_model_name: str) -> None:
        """Builds ``self.tokenizer`` with ``tokenizer_class.from_pretrained``; its pad token is its EOS token."""
        tokenizer = tokenizer_class.from_pretrained(tokenizer_model_name)
        tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer

    def load(self) -> TensorDictBase:
        """The tokenized dataset: the cached memory-mapped copy when it exists, else built (and cached)."""
        cached = isinstance(self.dataset_name, (str, os.PathLike))
        data_dir_total = None
        if cached:
            root = Path(self.root_dir) if self.root_dir is not None else Path.home() / ".cache" / "tdrl" / "data"
            data_dir = root / Path(self.dataset_name).stem.split("-")[0]
            data_dir_total = data_dir / self.split / str(self.max_length)
            if data_dir_total.exists():
                return TensorDict.load_memmap(data_dir_total)
        data = self._tokenize(self._load_dataset())
        if not cached:
            return data
        prefix = (self.split, str(self.max_length))
        return self.dataset_to_tensordict(data, data_dir=data_dir, prefix=prefix)[prefix]

    def _load_dataset(self) -> Any:
        records = _read_records(self.dataset_name, self.split, self.from_disk)
        if self.split.startswith("valid"):
            records = records.select(range(self.valid_size)) if hasattr(records, "select") else \
                list(records)[: self.valid_size]
        if self.pre_tokenization_hook is not None:
            records = self.pre_tokenization_hook(records)
        return records

    def _tokenize(self, dataset: Any, excluded_features: Sequence[str] | None = None) -> TensorDictBase:
        """Tokenizes the records; drops the rows marked ``valid_sample=False`` and the text columns."""
        excluded = _EXCLUDED_FEATURES if excluded_features is None else frozenset(excluded_features)
        columns = _as_columns(dataset)
        if not columns or not next(iter(columns.values())):
            raise ValueError(f"TokenizedDatasetLoader: the {self.split!r} split of {self.dataset_name!r} holds no "
                             "record (after the pre-tokenization hook).")
        fn = self.tokenizer_fn(self.tokenizer, max_length=self.max_length, return_tensordict=False)
        tokens = {**columns, **dict(fn(columns))}
        # TorchRL 0.14.1 drops "valid_sample" before filtering on it, so it keeps every row (docs/differences.md)
        valid = tokens.get("valid_sample")
        out = TensorDict({k: torch.as_tensor(v) for k, v in tokens.items() if k not in excluded}, batch_size=[])
        out.auto_batch_size_(batch_dims=1)
        if valid is not None:
            out = out[torch.as_tensor(valid, dtype=torch.bool)]
        return out

    @staticmethod
    def dataset_to_tensordict(dataset: Any, data_dir: Path | str, prefix: NestedKey | None = None,
                              features: Sequence[str] | None = None, batch_dims: int = 1,
                              valid_mask_key: NestedKey | None = None) -> TensorDictBase:
        """Writes a dataset (a ``TensorDict`` or a column mapping / ``datasets.Dataset``) as memory-mapped
        tensors under ``data_dir``, nested under ``prefix``; ``valid_mask_key`` filters the rows first.

        Examples:
            >>> import tempfile
            >>> data = {"tokens": torch.arange(6).view(3, 2), "ok": torch.tensor([True, False, True])}
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     out = TokenizedDatasetLoader.dataset_to_tensordict(data, tmp, prefix=("a",), valid_mask_key="ok")
            ...     out["a", "tokens"].tolist()
            [[0, 1], [4, 5]]
        """
        if isinstance(dataset, TensorDictBase):
            out = dataset
        else:
            names = list(features if features is not None else getattr(dataset, "features", dataset.keys()))
            out = TensorDict({k: torch.as_tensor(dataset[k]) for k in names}, batch_size=[])
            out.auto_batch_size_(batch_dims=batch_dims)
        if valid_mask_key is not None and valid_mask_key in out.keys(include_nested=True):
            out = out[out.get(valid_mask_key)]
        out = TensorDict({prefix if prefix is not None else (): out}, batch_size=[])
        out.memmap_(prefix=data_dir)
        return out


def get_dataloader(batch_size: int, block_size: int, tensorclass_type: Any, device: Any,
                   dataset_name: Any = None, infinite: bool = True, prefetch: int = 0, split: str = "train",
                   root_dir: str | None = None, from_disk: bool = False, num_workers: int | None = None) -> Any:
    """A replay buffer sampling batches of ``batch_size`` without replacement (dropping the last partial
    batch) from ``tensorclass_type.from_dataset(...)``, cast to ``device``; an endless iterator when ``infinite``.

    Args:
        batch_size: rows per batch.
        block_size: the tokenized sequence length (``max_length`` of ``from_dataset``).
        tensorclass_type: a class with ``from_dataset(split=, dataset_name=, max_length=, root_dir=,
            from_disk=, num_workers=)`` (``PairwiseDataset``, ``PromptData``).
        device: where the batches go.
        dataset_name: the dataset (see :class:`TokenizedDatasetLoader`).
        infinite: iterate forever (a new epoch after each pass).
        prefetch: batches prefetched by the buffer.
        split: the split (passed to ``from_dataset``, as the three below).
        root_dir: the cache folder.
        from_disk: read a ``save_to_disk`` folder.
        num_workers: kept for TorchRL's signature.

    Examples:
        >>> from tensordict import tensorclass
        >>> @tensorclass
        ... class Rows:
        ...     x: torch.Tensor
        ...     @classmethod
        ...     def from_dataset(cls, split, dataset_name, max_length, root_dir, from_disk, num_workers):
        ...         return cls(x=torch.zeros(10, max_length), batch_size=[10])
        >>> next(get_dataloader(4, 3, Rows, "cpu")).x.shape
        torch.Size([4, 3])
    """
    data = tensorclass_type.from_dataset(split=split, dataset_name=dataset_name, max_length=block_size,
                                         root_dir=root_dir, from_disk=from_disk, num_workers=num_workers)
    out = TensorDictReplayBuffer(
        storage=TensorStorage(data),
        collate_fn=lambda x: x.as_tensor().to(device, non_blocking=True),
        sampler=SamplerWithoutReplacement(drop_last=True),
        batch_size=batch_size,
        prefetch=prefetch,
    )
    if infinite:
        return create_infinite_iterator(out)
    return out
