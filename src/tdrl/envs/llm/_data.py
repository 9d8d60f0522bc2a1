"""Local datasets for the dataset-fed envs: records, a seeded data loader, and the no-download rule."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader

__all__ = ["default_collate_fn", "load_local_dataset", "make_dataloader"]


def default_collate_fn(batch: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> dict[str, list]:
    """Stacks a list of records into a dict of lists, renaming ``"text"`` to ``"query"``.

    Examples:
        >>> default_collate_fn([{"text": "a", "answer": "1"}, {"text": "b", "answer": "2"}])
        {'query': ['a', 'b'], 'answer': ['1', '2']}
    """
    if isinstance(batch, Mapping):
        batch = [batch]
    out: dict[str, list] = {}
    for record in batch:
        if not isinstance(record, Mapping):
            raise TypeError(f"Dataset records must be dicts (e.g. {{'query': ...}}), got {type(record).__name__}")
        for key, value in record.items():
            out.setdefault("query" if key == "text" else key, []).append(value)
    return out


def load_local_dataset(dataset: Any, *, name: str | None = None, split: str | None = None) -> Any:
    """The records of ``dataset``: a list of dicts or a map-style dataset, already on this machine.

    A string is a hub dataset name: it is loaded with ``datasets.load_dataset`` (which honours
    ``HF_HUB_OFFLINE`` and its local cache); without ``datasets`` or without network the error names the
    ``dataset`` argument and the local alternatives.

    Examples:
        >>> load_local_dataset([{"query": "q", "answer": "a"}])
        [{'query': 'q', 'answer': 'a'}]
    """
    if isinstance(dataset, str):
        hint = (
            f"dataset={dataset!r} names a hub dataset; tdrl never downloads one implicitly. Pass the records "
            "instead: dataset=[{'query': ..., 'answer': ...}, ...], a torch Dataset, or a datasets.Dataset "
            "loaded beforehand (datasets.load_dataset(..., cache_dir=...) or load_from_disk)."
        )
        if importlib.util.find_spec("datasets") is None:
            raise ImportError(f"{hint} (The `datasets` package is not installed.)")
        import datasets  # noqa: PLC0415 (optional, heavy: only for hub names)

        try:
            dataset = datasets.load_dataset(dataset, name)
        except Exception as err:  # no network / not cached: the datasets library raises many types
            raise ConnectionError(f"{hint} Loading it failed: {type(err).__name__}: {err}") from err
    if _is_dataset_dict(dataset):
        splits = list(dataset.keys())
        split = split if split is not None else ("train" if "train" in splits else None)
        if split is None or split not in splits:
            raise KeyError(f"dataset has splits {splits}: pick one with split=..., got split={split!r}")
        dataset = dataset[split]
    if isinstance(dataset, Mapping):
        raise TypeError("dataset must be a list of records (dicts), not one dict; wrap it in a list.")
    if not hasattr(dataset, "__len__") or len(dataset) == 0:
        raise ValueError(f"dataset must be a non-empty sized collection of records, got {type(dataset).__name__}")
    return dataset


def _is_dataset_dict(obj: Any) -> bool:
    return type(obj).__name__ in ("DatasetDict", "IterableDatasetDict")


def make_dataloader(
    records: Any,
    *,
    batch_size: int = 1,
    shuffle: bool = True,
    seed: int | None = None,
    collate_fn: Callable[[Any], Any] | None = None,
) -> DataLoader:
    """A ``DataLoader`` over ``records`` yielding dicts of lists (seeded when ``seed`` is given).

    Examples:
        >>> next(iter(make_dataloader([{"query": "q"}], shuffle=False)))
        {'query': ['q']}
    """
    if seed is None:
        seed = int(torch.empty((), dtype=torch.int64).random_().item())
    generator = torch.Generator()
    generator.manual_seed(seed)
    return DataLoader(
        records,
        batch_size=batch_size,
        shuffle=shuffle,
        collate_fn=default_collate_fn if collate_fn is None else collate_fn,
        generator=generator,
    )
