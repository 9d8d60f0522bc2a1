"""Whole-trajectory batches (``trajs_per_batch``): steps regrouped by ``("collector", "traj_ids")``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import torch
from tensordict import TensorDictBase, pad

__all__ = ["MASK_KEY", "TrajectoryAssembler", "iter_trajectories", "validate_traj_format"]

TRAJ_KEY = ("collector", "traj_ids")
MASK_KEY = ("collector", "mask")
DONE_KEY = ("next", "done")


def validate_traj_format(
    traj_format: str | None, trajs_per_batch: int | None, *, has_replay_buffer: bool = False
) -> Literal["padded", "cat"]:
    """Checks the ``trajs_per_batch`` / ``trajs_per_write`` / ``traj_format`` options; returns the layout.

    ``None`` resolves to ``"padded"`` with TorchRL 0.14's ``FutureWarning`` (its default becomes ``"cat"``
    in 0.16) when whole-trajectory batches are yielded rather than written to a replay buffer.
    """
    if trajs_per_batch is not None and (isinstance(trajs_per_batch, bool) or not isinstance(trajs_per_batch, int)
                                        or trajs_per_batch < 1):
        raise ValueError(f"trajs_per_batch must be a positive int or None, got {trajs_per_batch!r}")
    if traj_format is None:
        if trajs_per_batch is not None and not has_replay_buffer:
            warnings.warn(
                "trajs_per_batch is set but traj_format is not: the layout is 'padded', TorchRL's default until "
                "0.16, where it becomes 'cat'. Pass traj_format='padded' or 'cat' to choose explicitly.",
                FutureWarning,
                stacklevel=4,
            )
        return "padded"
    if traj_format not in ("padded", "cat"):
        raise ValueError(f"traj_format must be 'padded' or 'cat', got {traj_format!r}")
    if traj_format != "padded" and trajs_per_batch is None:
        raise ValueError("traj_format only applies with trajs_per_batch (the number of whole trajectories a batch holds)")
    return traj_format  # type: ignore[return-value]


class TrajectoryAssembler:
    """Regroups collector batches into complete trajectories, in the order they end.

    A trajectory is complete when its last step has ``("next", "done")`` set; until then its steps are held
    as chunks. Any batch layout works (``[*env_batch, T]`` is flattened); the steps of one trajectory keep
    their time order because the sort by id is stable.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> batch = TensorDict({"collector": {"traj_ids": torch.tensor([0, 0, 1])},
        ...                     "next": {"done": torch.tensor([[False], [True], [False]])}}, [3])
        >>> assembler = TrajectoryAssembler()
        >>> assembler.ingest(batch)
        >>> len(assembler.complete), sorted(assembler.partial)
        (1, [1])
    """

    def __init__(self) -> None:
        self.partial: dict[int, list[TensorDictBase]] = {}
        self.complete: list[TensorDictBase] = []

    def ingest(self, batch: TensorDictBase) -> None:
        """Routes the steps of ``batch`` to their trajectories; completed ones move to :attr:`complete`."""
        flat = batch.reshape(-1)
        ids = flat.get(TRAJ_KEY, None)
        if ids is None:
            raise KeyError(
                "trajs_per_batch needs ('collector', 'traj_ids') in every batch: build the collector with "
                "track_traj_ids=True and split_trajs=False"
            )
        ids = ids.reshape(-1)
        order = torch.argsort(ids, stable=True)
        flat, ids = flat[order], ids[order]
        unique, counts = ids.unique_consecutive(return_counts=True)
        done = flat.get(DONE_KEY).reshape(flat.shape[0], -1).any(-1)
        start = 0
        for traj_id, count in zip(unique.tolist(), counts.tolist()):
            stop = start + count
            self.partial.setdefault(traj_id, []).append(flat[start:stop])
            if bool(done[stop - 1]):
                chunks = self.partial.pop(traj_id)
                self.complete.append(torch.cat(chunks, 0) if len(chunks) > 1 else chunks[0])
            start = stop

    def pop(self, n: int, traj_format: Literal["padded", "cat"]) -> TensorDictBase:
        """The first ``n`` complete trajectories: ``[n, max_len]`` zero-padded with a mask, or ``[sum T_i]``."""
        trajs, self.complete = self.complete[:n], self.complete[n:]
        if traj_format == "cat":
            return torch.cat(trajs, 0) if len(trajs) > 1 else trajs[0]
        max_len = max(t.shape[0] for t in trajs)
        rows = []
        for traj in trajs:
            traj = traj.copy()
            traj.set(MASK_KEY, torch.ones(traj.shape[0], dtype=torch.bool, device=traj.device))
            rows.append(pad(traj, [0, max_len - traj.shape[0]]) if traj.shape[0] < max_len else traj)
        return torch.stack(rows, 0)

    def clear(self, partial_only: bool = False) -> None:
        """Drops the held chunks (and the queued complete trajectories unless ``partial_only``)."""
        self.partial.clear()
        if not partial_only:
            self.complete.clear()


def iter_trajectories(
    batches: Iterable[TensorDictBase | None],
    assembler: TrajectoryAssembler,
    trajs_per_batch: int,
    *,
    traj_format: Literal["padded", "cat"] = "padded",
    replay_buffer: Any = None,
    trajs_per_write: int | None = None,
    discard_in_flight: bool = False,
) -> Iterator[TensorDictBase | None]:
    """Whole-trajectory batches from a stream of collector batches.

    Without ``replay_buffer``, yields a batch each time ``trajs_per_batch`` trajectories are complete. With
    one, writes every complete trajectory to it as a flat 1-D sequence (``trajs_per_write`` per ``extend``,
    all at once when ``None``: the layout ``SliceSampler`` expects) and yields ``None`` after each batch.
    ``discard_in_flight`` drops unfinished trajectories after each batch (collectors that reset every batch).
    """
    if trajs_per_write is not None and trajs_per_write < 1:
        raise ValueError(f"trajs_per_write must be a positive int or None, got {trajs_per_write!r}")
    for batch in batches:
        if batch is None:
            continue
        assembler.ingest(batch)
        if discard_in_flight:
            assembler.clear(partial_only=True)
        if replay_buffer is None:
            while len(assembler.complete) >= trajs_per_batch:
                yield assembler.pop(trajs_per_batch, traj_format)
            continue
        while assembler.complete:
            replay_buffer.extend(assembler.pop(trajs_per_write or len(assembler.complete), "cat"))
        yield None
