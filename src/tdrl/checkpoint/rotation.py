"""``CheckpointRotation``: numbered checkpoints in one folder, the last ``keep_last`` (and the best) kept."""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from tdrl.checkpoint._types import (
    CheckpointBest,
    CheckpointError,
    CheckpointLoadResult,
    CheckpointOptions,
    CheckpointStrictness,
)
from tdrl.checkpoint.checkpoint import Checkpoint

__all__ = ["CheckpointRotation"]


class CheckpointRotation:
    """Writes ``<directory>/<prefix>-<step:012d>`` checkpoints and prunes old ones.

    Args:
        directory: where the checkpoints live.
        keep_last: how many of the most recent checkpoints to keep (>= 1).
        keep_best: ``(metric, "min" | "max")``: also keep the checkpoint whose ``metadata[metric]`` is best.
        prefix: the checkpoint names' prefix.

    Examples:
        >>> import tempfile, torch
        >>> rotation = CheckpointRotation(tempfile.mkdtemp(), keep_last=2)
        >>> ckpt = Checkpoint(policy=torch.nn.Linear(1, 1))
        >>> for step in range(3):
        ...     _ = rotation.save(ckpt, step=step)
        >>> [p.name for p in rotation.checkpoints()]
        ['checkpoint-000000000001', 'checkpoint-000000000002']
    """

    def __init__(self, directory: str | os.PathLike, *, keep_last: int, keep_best: CheckpointBest | None = None,
                 prefix: str = "checkpoint") -> None:
        if keep_last < 1:
            raise ValueError(f"CheckpointRotation: keep_last must be >= 1, got {keep_last}")
        if keep_best is not None and (len(keep_best) != 2 or keep_best[1] not in ("min", "max")):
            raise ValueError(f"CheckpointRotation: keep_best must be (metric, 'min' | 'max'), got {keep_best!r}")
        self.directory = Path(directory)
        self.keep_last = int(keep_last)
        self.keep_best = keep_best
        self.prefix = prefix
        self._pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)$")

    def save(self, checkpoint: Checkpoint, *, step: int, metadata: Mapping[str, Any] | None = None,
             components: Collection[str] | None = None,
             component_options: Mapping[str, CheckpointOptions] | None = None) -> Path:
        """Saves ``checkpoint`` as the one of ``step`` (with ``step`` added to its metadata), then prunes."""
        if step < 0:
            raise ValueError(f"CheckpointRotation.save: step must be >= 0, got {step}")
        if self.keep_best is not None and self.keep_best[0] not in (metadata or {}):
            raise CheckpointError(f"CheckpointRotation: keep_best needs metadata[{self.keep_best[0]!r}]")
        path = self.directory / f"{self.prefix}-{int(step):012d}"
        meta = {**(metadata or {}), "step": int(step)}
        checkpoint.save(path, metadata=meta, components=components, component_options=component_options)
        self.prune()
        return path

    def checkpoints(self) -> tuple[Path, ...]:
        """The valid checkpoints, oldest step first."""
        if not self.directory.is_dir():
            return ()
        found = []
        for p in self.directory.iterdir():
            match = self._pattern.match(p.name)
            if match and Checkpoint.is_checkpoint(p):
                found.append((int(match.group(1)), p))
        return tuple(p for _, p in sorted(found))

    def latest(self) -> Path | None:
        """The checkpoint of the highest step, or ``None``."""
        found = self.checkpoints()
        return found[-1] if found else None

    def best(self) -> Path | None:
        """The checkpoint with the best ``keep_best`` metric (``None`` without ``keep_best`` or checkpoints)."""
        if self.keep_best is None:
            return None
        metric, mode = self.keep_best
        sign = 1.0 if mode == "min" else -1.0
        scored = []
        for p in self.checkpoints():
            value = Checkpoint.manifest(p).get("metadata", {}).get(metric)
            if isinstance(value, (int, float)) and not math.isnan(value):
                scored.append((sign * float(value), p))
        return min(scored, key=lambda sp: sp[0])[1] if scored else None

    def prune(self) -> tuple[Path, ...]:
        """Removes the checkpoints beyond the last ``keep_last`` (the best is kept); returns those removed."""
        found = self.checkpoints()
        keep = set(found[-self.keep_last:])
        best = self.best()
        if best is not None:
            keep.add(best)
        removed = tuple(p for p in found if p not in keep)
        for p in removed:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        return removed

    def load_latest(self, checkpoint: Checkpoint, *, components: Collection[str] | None = None,
                    component_options: Mapping[str, CheckpointOptions] | None = None, map_location: Any = None,
                    tensor_load_kwargs: Mapping[str, Any] | None = None,
                    strict: CheckpointStrictness | None = None) -> CheckpointLoadResult:
        """Restores ``checkpoint`` from :meth:`latest`; raises ``CheckpointError`` when there is none."""
        latest = self.latest()
        if latest is None:
            raise CheckpointError(f"no {self.prefix}-<step> checkpoint in {self.directory}")
        return checkpoint.load(latest, components=components, component_options=component_options,
                               map_location=map_location, tensor_load_kwargs=tensor_load_kwargs, strict=strict)
