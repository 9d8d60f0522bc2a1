"""Reading OpenML tables (ARFF or CSV files) and the encoders OpenML datasets are prepared with."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_MISSING = ("?", "")


@dataclass
class Column:
    """One attribute: ``numeric`` columns hold float64 (NaN when missing), nominal ones str (None)."""

    name: str
    numeric: bool
    values: np.ndarray


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _fields(line: str) -> list[str]:
    return [_unquote(f) for f in next(csv.reader([line], quotechar="'", skipinitialspace=True))]


def _column(name: str, numeric: bool, raw: list[str], path: Path) -> Column:
    if not numeric:
        return Column(name, False, np.array([None if v in _MISSING else v for v in raw], dtype=object))
    try:
        values = np.array([np.nan if v in _MISSING else float(v) for v in raw], dtype=np.float64)
    except ValueError as err:
        raise ValueError(f"{path}: numeric attribute {name!r} holds a non-number ({err}).") from err
    return Column(name, True, values)


_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.+)$", re.IGNORECASE)


def read_arff(path: Path) -> list[Column]:
    """The columns of a dense ARFF file (``NUMERIC``/``REAL``/``INTEGER`` or ``{nominal, ...}``/``STRING``)."""
    header: list[tuple[str, bool]] = []
    rows: list[list[str]] = []
    in_data = False
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        if in_data:
            if line.startswith("{"):
                raise ValueError(f"{path}:{number}: sparse ARFF rows are not supported.")
            rows.append(_fields(line))
        elif line.lower().startswith("@attribute"):
            match = _ATTRIBUTE.match(line)
            if match is None:
                raise ValueError(f"{path}:{number}: cannot read the attribute line {line!r}.")
            kind = match.group(2).strip().lower()
            header.append((_unquote(match.group(1)), kind.split()[0] in ("numeric", "real", "integer")))
        elif line.lower().startswith("@data"):
            in_data = True
    if not header or not rows:
        raise ValueError(f"{path}: an ARFF file needs @ATTRIBUTE lines and @DATA rows.")
    for number, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"{path}: data row {number} has {len(row)} values, the header {len(header)} attributes.")
    return [_column(name, numeric, [r[i] for r in rows], path) for i, (name, numeric) in enumerate(header)]


def read_csv(path: Path) -> list[Column]:
    """The columns of a CSV file with a header row; a column is numeric when every present value is a number."""
    with open(path, newline="") as file:
        table = [[v.strip() for v in row] for row in csv.reader(file) if row]
    if len(table) < 2:
        raise ValueError(f"{path}: a CSV table needs a header row and at least one data row.")
    names, rows = table[0], table[1:]
    columns = []
    for i, name in enumerate(names):
        raw = [r[i] for r in rows]
        numeric = all(_is_number(v) for v in raw if v not in _MISSING)
        columns.append(_column(name, numeric, raw, path))
    return columns


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def label_encode(values: np.ndarray) -> np.ndarray:
    """Codes of the sorted distinct values (missing values last), as scikit-learn's ``LabelEncoder``."""
    present = sorted({v for v in values.tolist() if not _is_missing(v)})
    codes = {v: i for i, v in enumerate(present)}
    missing_code = len(present)
    return np.array([missing_code if _is_missing(v) else codes[v] for v in values.tolist()], dtype=np.int64)


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def standard_scale(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` per column (population std; a constant column is only centred)."""
    x = np.asarray(x, dtype=np.float64)
    std = x.std(0)
    return (x - x.mean(0)) / np.where(std == 0, 1.0, std)


def one_hot(codes: np.ndarray) -> np.ndarray:
    """One-hot columns of each integer column, column after column, categories sorted."""
    blocks = []
    for j in range(codes.shape[1]):
        categories = np.unique(codes[:, j])
        blocks.append((codes[:, j : j + 1] == categories[None]).astype(np.float64))
    return np.concatenate(blocks, 1)
