"""``MPTransport``: requests from other processes through ``multiprocessing`` queues."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import pickle
import queue
import time
from typing import Any

from tensordict import TensorDictBase

from tdrl.modules.inference_server._transport import InferenceTransport

__all__ = ["MPTransport"]

_POLL_S = 0.05  # how often a blocked client re-checks that the server side is alive


# Payloads travel as plain pickled bytes: torch's fd-sharing reductions hand a tensor over only while its
# sender still holds it, which a request/answer exchange between short-lived tensors does not guarantee.
def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


class ServerGoneError(RuntimeError):
    """The server side of an :class:`MPTransport` stopped before answering a request."""


class _QueueFuture:
    """The pending answer to one request of an :class:`_QueueClient` (``result(timeout)`` like a Future)."""

    def __init__(self, client: _QueueClient, request_id: int) -> None:
        self._client, self._request_id = client, request_id

    def done(self) -> bool:
        self._client._pump(block=False)
        return self._request_id in self._client._answers

    def result(self, timeout: float | None = None) -> TensorDictBase:
        return self._client._wait(self._request_id, timeout)


class _QueueClient:
    """A picklable client of an :class:`MPTransport`, with its own response queue."""

    def __init__(self, client_id: int, requests: Any, responses: Any, alive: Any) -> None:
        self._client_id, self._requests, self._responses, self._alive = client_id, requests, responses, alive
        self._ids = itertools.count()
        self._answers: dict[int, tuple[bool, Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_ids"], state["_answers"] = None, {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ids = itertools.count()

    def submit(self, td: TensorDictBase) -> _QueueFuture:
        request_id = next(self._ids)
        self._requests.put((self._client_id, request_id, _dumps(td), time.monotonic()))
        return _QueueFuture(self, request_id)

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        return self.submit(td).result()

    def _pump(self, block: bool) -> None:
        try:
            request_id, ok, payload = self._responses.get(timeout=_POLL_S) if block else self._responses.get_nowait()
        except queue.Empty:
            return
        self._answers[request_id] = (ok, pickle.loads(payload))

    def _wait(self, request_id: int, timeout: float | None) -> TensorDictBase:
        deadline = None if timeout is None else time.monotonic() + timeout
        while request_id not in self._answers:
            if not self._alive.is_set():
                self._pump(block=False)
                if request_id in self._answers:
                    break
                raise ServerGoneError(f"the inference server stopped before answering request {request_id}")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"no answer to inference request {request_id} within {timeout} s")
            self._pump(block=True)
        ok, payload = self._answers.pop(request_id)
        if not ok:
            raise payload
        return payload


class MPTransport(InferenceTransport):
    """Cross-process transport: one shared request queue, one response queue per client.

    Create the clients with :meth:`client` in the process that owns the transport, *before* starting the
    processes they are sent to (a queue can be inherited by a child, not sent through another queue). A
    client blocked on an answer raises within a fraction of a second once the server side is shut down
    (:meth:`close`), instead of waiting forever.

    Args:
        ctx: a multiprocessing context (default: ``"spawn"``).

    Keyword Args:
        use_manager: back the queues with a ``multiprocessing`` manager, so clients can be forwarded
            through another spawned process.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules.inference_server import InferenceServer
        >>> transport = MPTransport()
        >>> client = transport.client()  # give it to a multiprocessing.Process as an argument
        >>> policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
        >>> with InferenceServer(policy, transport):
        ...     client(TensorDict({"observation": torch.zeros(3)}))["action"].shape
        torch.Size([1])
        >>> transport.close()
    """

    def __init__(self, ctx: Any = None, *, use_manager: bool = False) -> None:
        self._ctx = ctx if ctx is not None else mp.get_context("spawn")
        self._manager = self._ctx.Manager() if use_manager else None
        factory = self._manager if self._manager is not None else self._ctx
        self._queue_factory = factory.Queue
        self._request_queue = factory.Queue()
        self._response_queues: dict[int, Any] = {}
        self._alive = (self._manager if self._manager is not None else self._ctx).Event()
        self._alive.set()
        self._peeked: tuple | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_manager"], state["_queue_factory"], state["_ctx"] = None, None, None
        return state

    def client(self) -> _QueueClient:
        """A new client with its own response queue (call it before starting the child process)."""
        if self._queue_factory is None:
            raise RuntimeError("MPTransport.client() must be called in the process that created the transport")
        client_id = len(self._response_queues)
        self._response_queues[client_id] = self._queue_factory()
        return _QueueClient(client_id, self._request_queue, self._response_queues[client_id], self._alive)

    def submit(self, td: TensorDictBase) -> Any:
        """Not available: each caller needs its own response queue, from :meth:`client`."""
        raise RuntimeError("MPTransport.submit() is not supported: call transport.client() and submit through it")

    def wait_for_work(self, timeout: float) -> None:
        """Blocks on the request queue for up to ``timeout`` s; a request taken is kept for :meth:`drain`."""
        if self._peeked is None:
            try:
                self._peeked = self._request_queue.get(timeout=timeout)
            except queue.Empty:
                pass

    def drain(self, max_items: int) -> tuple[list[TensorDictBase], list[tuple[int, int]]]:
        """Takes up to ``max_items`` pending requests; the callbacks are ``(client_id, request_id)`` pairs."""
        items, callbacks, _ = self.drain_with_timing(max_items)
        return items, callbacks

    def drain_with_timing(self, max_items: int) -> tuple[list[TensorDictBase], list[tuple[int, int]], list]:
        """:meth:`drain` with each request's submission time (``time.monotonic`` is system-wide on Linux)."""
        messages = []
        if self._peeked is not None and max_items > 0:
            messages.append(self._peeked)
            self._peeked = None
        while len(messages) < max_items:
            try:
                messages.append(self._request_queue.get_nowait())
            except queue.Empty:
                break
        return [pickle.loads(m[2]) for m in messages], [(m[0], m[1]) for m in messages], [m[3] for m in messages]

    def resolve(self, callback: tuple[int, int], result: TensorDictBase) -> None:
        """Sends ``result`` to the client that made the request."""
        client_id, request_id = callback
        self._response_queues[client_id].put((request_id, True, _dumps(result)))

    def resolve_exception(self, callback: tuple[int, int], exc: BaseException) -> None:
        """Sends ``exc`` to the client that made the request (its ``result()`` raises it)."""
        client_id, request_id = callback
        self._response_queues[client_id].put((request_id, False, _dumps(exc)))

    def mark_server_stopped(self) -> None:
        """Tells blocked clients that no answer will come (they raise ``ServerGoneError``)."""
        self._alive.clear()

    def close(self) -> None:
        """Marks the server side stopped and releases the manager, if any (idempotent)."""
        self.mark_server_stopped()
        if self._manager is not None:
            self._manager.shutdown()
            self._manager = None
