"""Request batching for the LLM wrappers: threads submitting single requests share one model call.

With ``batching=True`` (or ``min_batch_size`` / ``max_batch_size``), each call of the wrapper queues its
samples and waits. A batch runs as soon as the queue holds ``min_batch_size`` samples (at most
``max_batch_size`` of them, or all of them when it is ``None``); one batch runs at a time, and the thread that
runs it serves every thread whose samples are in it. A request never waits more than ``batching_timeout``
seconds for a full batch: past that, whatever is queued runs as it is (TorchRL 0.14.1 documents this timeout
but waits without it, so a lone request under ``min_batch_size > 1`` blocks forever there).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import Any

from tensordict import TensorDictBase, lazy_stack

__all__ = ["RequestBatcher", "resolve_batching"]


def resolve_batching(
    batching: bool | None, min_batch_size: int | None, max_batch_size: int | None
) -> tuple[int | None, int | None]:
    """TorchRL's rules: ``batching=True`` means ``min_batch_size=1`` unless given; sizes without batching
    (``batching=False``) are an error; ``min <= max``. Returns ``(min, max)`` (both ``None``: no batching).

    Examples:
        >>> resolve_batching(True, None, None), resolve_batching(None, None, 4)
        ((1, None), (1, 4))
    """
    if batching is False and (min_batch_size is not None or max_batch_size is not None):
        raise ValueError("min_batch_size and max_batch_size must be None if batching is False")
    for name, value in (("min_batch_size", min_batch_size), ("max_batch_size", max_batch_size)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if batching and min_batch_size is None:
        min_batch_size = 1
    if max_batch_size is not None and min_batch_size is None:
        min_batch_size = 1
    if min_batch_size is not None and max_batch_size is not None and min_batch_size > max_batch_size:
        raise ValueError(f"min_batch_size ({min_batch_size}) must be <= max_batch_size ({max_batch_size})")
    return min_batch_size, max_batch_size


class RequestBatcher:
    """A thread-safe queue of samples that runs ``func`` on batches of them (see the module docstring).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> batcher = RequestBatcher(min_batch_size=1, max_batch_size=None, timeout=1.0)
        >>> out = batcher.submit(lambda td: td.set("y", td["x"] * 2), TensorDict(x=torch.ones(2), batch_size=[2]))
        >>> out["y"].tolist()
        [2.0, 2.0]
    """

    def __init__(self, *, min_batch_size: int, max_batch_size: int | None, timeout: float | None) -> None:
        self.min_batch_size, self.max_batch_size, self.timeout = min_batch_size, max_batch_size, timeout
        self._init_state()

    def _init_state(self) -> None:
        self._cv = threading.Condition()
        self._queue: list[tuple[TensorDictBase, Future]] = []
        self._busy = False
        self.batches_run = 0  # how many model calls served the requests (for tests and monitoring)

    def __getstate__(self) -> dict[str, Any]:
        # locks and pending requests belong to this process: a copy starts with an empty queue
        return {"min_batch_size": self.min_batch_size, "max_batch_size": self.max_batch_size, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_state()

    def submit(self, func: Callable[[TensorDictBase], TensorDictBase], td: TensorDictBase) -> TensorDictBase:
        """Queues the samples of ``td`` (0-d: one sample; 1-d: each row) and returns their outputs."""
        if td.batch_dims > 1:
            raise ValueError(f"request batching needs 0-d or 1-d inputs, got batch_size {tuple(td.batch_size)}")
        single = td.batch_dims == 0
        futures = [Future() for _ in range(1 if single else td.shape[0])]
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        with self._cv:
            self._queue.extend(zip([td] if single else td.unbind(0), futures))
            self._cv.notify_all()
            while not all(f.done() for f in futures):
                expired = deadline is not None and time.monotonic() >= deadline
                ready = len(self._queue) >= self.min_batch_size or (expired and self._queue)
                if self._busy or not ready:
                    wait = None if self._busy or deadline is None else max(0.0, deadline - time.monotonic())
                    self._cv.wait(wait)
                    continue
                self._run_batch(func)
        results = [f.result() for f in futures]
        return results[0] if single else lazy_stack(results)

    def _run_batch(self, func: Callable[[TensorDictBase], TensorDictBase]) -> None:
        """Runs the head of the queue; called with the lock held, releases it while the model runs."""
        size = len(self._queue) if self.max_batch_size is None else min(self.max_batch_size, len(self._queue))
        taken, self._queue = self._queue[:size], self._queue[size:]
        self._busy = True
        self._cv.release()
        try:
            try:
                out = func(lazy_stack([item for item, _ in taken]))
                results = out.unbind(0)
                if len(results) != len(taken):
                    raise RuntimeError(f"a batch of {len(taken)} requests returned {len(results)} results")
                for (_, fut), res in zip(taken, results):
                    fut.set_result(res)
            except Exception as exc:  # noqa: BLE001 - handed to every request of the batch
                for _, fut in taken:
                    if not fut.done():
                        fut.set_exception(exc)
        finally:
            self._cv.acquire()
            self._busy = False
            self.batches_run += 1
            self._cv.notify_all()

    def cleanup(self, func: Callable[[TensorDictBase], TensorDictBase] | None = None) -> None:
        """Empties the queue: runs what is queued with ``func`` (``flush``), or cancels it when ``func`` is None."""
        with self._cv:
            while func is not None and self._queue:
                if self._busy:
                    self._cv.wait()
                    continue
                self._run_batch(func)
            for _, fut in self._queue:
                fut.set_exception(CancelledError("request batching aborted by cleanup_batching()"))
            self._queue.clear()
            self._cv.notify_all()

    def state(self) -> dict[str, Any]:
        """The batching state (sizes, queue length, whether a batch is running)."""
        with self._cv:
            return {
                "batching_enabled": True, "min_batch_size": self.min_batch_size,
                "max_batch_size": self.max_batch_size, "queue_size": len(self._queue), "processing": self._busy,
                "timeout": self.timeout, "batches_run": self.batches_run,
            }
