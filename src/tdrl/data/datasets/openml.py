"""``OpenMLExperienceReplay``: OpenML classification tables (contextual bandits) read from local files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from tdrl.data.datasets._tabular import Column, label_encode, one_hot, read_arff, read_csv, standard_scale
from tdrl.data.datasets.common import (
    BaseDatasetExperienceReplay,
    _get_root_dir,
    _load_storage,
    _memmap_storage,
    _missing_dataset,
)
from tdrl.data.replay_buffers import Sampler, SamplerWithoutReplacement, Writer

__all__ = ["OpenMLExperienceReplay"]

# tdrl name -> the OpenML table it is prepared from (TorchRL's list).
_TABLES = {
    "adult_num": "adult",
    "adult_onehot": "adult",
    "mushroom_num": "mushroom",
    "mushroom_onehot": "mushroom",
    "covertype": "covertype",
    "shuttle": "shuttle",
    "magic": "MagicTelescope",
}


def _codes(column: Column) -> np.ndarray:
    return label_encode(column.values)


def _adult(features: list[Column], onehot: bool) -> tuple[np.ndarray, np.ndarray]:
    keep = np.ones(len(features[0].values), dtype=bool)
    for col in features:
        keep &= ~np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in col.values.tolist()])
    features = [Column(c.name, c.numeric, c.values[keep]) for c in features]
    by_name = {c.name: c for c in features}
    if "occupation" not in by_name:
        raise KeyError(f"the adult table needs an 'occupation' attribute; it has {sorted(by_name)}.")
    # The bandit's arms are the occupations (TorchRL's choice), not OpenML's income target.
    y = _codes(by_name["occupation"])
    features = [c for c in features if c.name != "occupation"]
    if not onehot:
        x = np.stack([c.values.astype(np.float64) if c.numeric else _codes(c) for c in features], 1)
        return standard_scale(x), y
    numeric = [c.values for c in features if c.numeric]
    nominal = [_codes(c) for c in features if not c.numeric]
    num_part = standard_scale(np.stack(numeric, 1)) if numeric else np.zeros((len(y), 0))
    cat_part = one_hot(np.stack(nominal, 1)) if nominal else np.zeros((len(y), 0))
    return np.concatenate([num_part, cat_part], 1), y


def _numeric_matrix(features: list[Column], table: str) -> np.ndarray:
    out = []
    for col in features:
        if col.numeric:
            out.append(col.values)
            continue
        try:
            out.append(np.array([float(v) for v in col.values.tolist()]))
        except (TypeError, ValueError) as err:
            raise ValueError(f"the {table} table's attribute {col.name!r} must be numeric ({err}).") from err
    return np.stack(out, 1)


def prepare(name: str, columns: list[Column]) -> TensorDict:
    """The ``{"X": features, "y": class}`` rows of one of TorchRL's OpenML bandit datasets.

    The last attribute of the table is OpenML's target. Nominal values are coded by sorted value
    (scikit-learn's ``LabelEncoder``), features standard-scaled (population std) and, for the ``*_onehot``
    variants, nominal features one-hot encoded (``adult_onehot``: the scaled numeric features first).
    """
    if name not in _TABLES:
        raise ValueError(f"unknown OpenML dataset {name!r}; expected one of {sorted(_TABLES)}.")
    if len(columns) < 2:
        raise ValueError(f"an OpenML table needs features and a target, got {len(columns)} column(s).")
    features, target = columns[:-1], columns[-1]
    if name.startswith("adult"):
        x, y = _adult(features, name == "adult_onehot")
    elif name.startswith("mushroom"):
        codes = np.stack([_codes(c) for c in features], 1)
        x = one_hot(codes) if name == "mushroom_onehot" else standard_scale(codes)
        y = _codes(target)
    else:
        x, y = standard_scale(_numeric_matrix(features, _TABLES[name])), _codes(target)
    return TensorDict({"X": torch.from_numpy(x), "y": torch.from_numpy(y)}, batch_size=[x.shape[0]])


class OpenMLExperienceReplay(BaseDatasetExperienceReplay):
    """An `OpenML <https://www.openml.org>`_ classification table as a buffer of ``{"X", "y"}`` rows.

    Used as a contextual bandit (``"X"``: the context, ``"y"``: the best arm). ``name`` is one of
    ``"adult_num"``, ``"adult_onehot"``, ``"mushroom_num"``, ``"mushroom_onehot"``, ``"covertype"``,
    ``"shuttle"`` and ``"magic"``; the table (``adult``, ``mushroom``, ``covertype``, ``shuttle`` or
    ``MagicTelescope``, as OpenML serves it) is read from ``<root>/<table>.arff`` or ``<root>/<table>.csv``
    and prepared by :func:`prepare`; the rows are memory-mapped under ``<root>/<name>``. tdrl does not
    download (TorchRL calls scikit-learn's ``fetch_openml``): an absent table raises
    ``FileNotFoundError``.

    Args:
        name: the dataset.
        batch_size: the default sample size.
        root: where the table is looked for and the rows go (default ``~/.cache/tdrl/openml``).
        sampler: the sampler (default :class:`~tdrl.data.SamplerWithoutReplacement`).
        writer: the writer (default: the buffer's round-robin writer, as TorchRL).
        collate_fn: merges samples.
        pin_memory: pin sampled batches.
        prefetch: batches prefetched in threads.
        transform: applied to sampled batches.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = (Path(tmp) / "MagicTelescope.csv").write_text("a,b,class\\n1,2,g\\n3,5,h\\n5,5,g\\n")
        ...     data = OpenMLExperienceReplay("magic", batch_size=2, root=tmp)
        ...     print(data.sample()["X"].shape, data.max_outcome_val)
        torch.Size([2, 2]) 1
    """

    def __init__(
        self,
        name: str,
        batch_size: int,
        root: Path | None = None,
        sampler: Sampler | None = None,
        writer: Writer | None = None,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        prefetch: int | None = None,
        transform: Any = None,
    ) -> None:
        if name not in _TABLES:
            raise ValueError(f"unknown OpenML dataset {name!r}; expected one of {sorted(_TABLES)}.")
        self.root = _get_root_dir("openml") if root is None else root
        self.dataset_id = name
        if self._is_downloaded():
            storage = _load_storage(self.data_path)
        else:
            storage = _memmap_storage(prepare(name, self._read_table()), self.data_path)
        rows = storage._storage
        assert isinstance(rows, TensorDict)
        self.max_outcome_val = int(rows.get("y").max().item())
        super().__init__(
            batch_size=batch_size,
            storage=storage,
            sampler=SamplerWithoutReplacement() if sampler is None else sampler,
            writer=writer,
            collate_fn=collate_fn,
            pin_memory=pin_memory,
            prefetch=prefetch,
            transform=transform,
        )

    @property
    def data_path(self) -> Path:
        return self.root / self.dataset_id

    @property
    def data_path_root(self) -> Path:
        return self.data_path

    def _is_downloaded(self) -> bool:
        return self.data_path.exists()

    def _read_table(self) -> list[Column]:
        table = _TABLES[self.dataset_id]
        arff, csv_file = self.root / f"{table}.arff", self.root / f"{table}.csv"
        if arff.exists():
            return read_arff(arff)
        if csv_file.exists():
            return read_csv(csv_file)
        raise _missing_dataset(
            type(self).__name__,
            self.dataset_id,
            [self.data_path, arff, csv_file],
            f"save OpenML's {table!r} table (its ARFF file from openml.org, or a CSV with a header row and the "
            f"target last) as {arff} or {csv_file}.",
        )
