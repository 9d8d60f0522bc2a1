"""``ThreadingTransport``: requests from threads of the server's own process."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from tensordict import TensorDictBase

from tdrl.modules.inference_server._transport import InferenceTransport

__all__ = ["ThreadingTransport"]


class ThreadingTransport(InferenceTransport):
    """In-process transport: a locked request list and a ``concurrent.futures.Future`` per request.

    For actors that are threads of the process running the server (e.g. a ``ThreadPoolExecutor``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules.inference_server import InferenceServer
        >>> transport = ThreadingTransport()
        >>> policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
        >>> with InferenceServer(policy, transport, max_batch_size=4):
        ...     out = transport.client()(TensorDict({"observation": torch.zeros(3)}))
        >>> out["action"].shape
        torch.Size([1])
    """

    def __init__(self) -> None:
        self._queue: list[TensorDictBase] = []
        self._futures: list[Future] = []
        self._submitted_at: list[float] = []
        self._cond = threading.Condition(threading.Lock())

    def submit(self, td: TensorDictBase) -> Future[TensorDictBase]:
        """Queues ``td``; returns the future its result will be set on."""
        future: Future[TensorDictBase] = Future()
        with self._cond:
            self._queue.append(td)
            self._futures.append(future)
            self._submitted_at.append(time.monotonic())
            self._cond.notify()
        return future

    def drain(self, max_items: int) -> tuple[list[TensorDictBase], list[Future]]:
        """Takes up to ``max_items`` queued requests and their futures."""
        items, futures, _ = self.drain_with_timing(max_items)
        return items, futures

    def drain_with_timing(self, max_items: int) -> tuple[list[TensorDictBase], list[Future], list[float | None]]:
        """:meth:`drain` with each request's submission time."""
        with self._cond:
            n = min(len(self._queue), max_items)
            items, futures, stamps = self._queue[:n], self._futures[:n], self._submitted_at[:n]
            del self._queue[:n], self._futures[:n], self._submitted_at[:n]
        return items, futures, list(stamps)

    def wait_for_work(self, timeout: float) -> None:
        """Waits on the condition until a request is queued or ``timeout`` passed."""
        with self._cond:
            if not self._queue:
                self._cond.wait(timeout=timeout)

    def resolve(self, callback: Future, result: TensorDictBase) -> None:
        """Sets ``result`` on the request's future."""
        callback.set_result(result)

    def resolve_exception(self, callback: Future, exc: BaseException) -> None:
        """Sets ``exc`` on the request's future."""
        callback.set_exception(exc)
