"""``InferenceTransport``: how requests reach an :class:`InferenceServer` and results get back."""

from __future__ import annotations

import abc
from concurrent.futures import Future
from typing import Any

from tensordict import TensorDictBase

__all__ = ["InferenceClient", "InferenceTransport"]


class InferenceTransport(abc.ABC):
    """Base class of the inference transports (TorchRL's ``InferenceTransport``).

    The actor side calls :meth:`submit` (or a client from :meth:`client`); the server side calls
    :meth:`wait_for_work`, then :meth:`drain`, runs the model on the batch and answers each request with
    :meth:`resolve` or :meth:`resolve_exception`, passing back the opaque callback :meth:`drain` returned.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.modules.inference_server import ThreadingTransport
        >>> transport: InferenceTransport = ThreadingTransport()
        >>> future = transport.submit(TensorDict({"x": torch.ones(2)}))
        >>> items, callbacks = transport.drain(8)
        >>> transport.resolve(callbacks[0], items[0].set("y", items[0]["x"] * 2))
        >>> future.result()["y"]
        tensor([2., 2.])
    """

    @abc.abstractmethod
    def submit(self, td: TensorDictBase) -> Future[TensorDictBase]:
        """Sends one unbatched request; the returned future resolves to the server's answer."""

    @abc.abstractmethod
    def drain(self, max_items: int) -> tuple[list[TensorDictBase], list[Any]]:
        """Takes up to ``max_items`` pending requests (server side): ``(inputs, callbacks)``."""

    @abc.abstractmethod
    def wait_for_work(self, timeout: float) -> None:
        """Blocks until a request is pending or ``timeout`` seconds passed (server side)."""

    @abc.abstractmethod
    def resolve(self, callback: Any, result: TensorDictBase) -> None:
        """Answers the request behind ``callback`` with ``result``."""

    @abc.abstractmethod
    def resolve_exception(self, callback: Any, exc: BaseException) -> None:
        """Answers the request behind ``callback`` with an exception, raised by the client's ``result()``."""

    def drain_with_timing(self, max_items: int) -> tuple[list[TensorDictBase], list[Any], list[float | None]]:
        """:meth:`drain`, plus each request's ``time.monotonic()`` submission time (``None`` if unknown)."""
        items, callbacks = self.drain(max_items)
        return items, callbacks, [None] * len(items)

    def client(self) -> Any:
        """An actor-side :class:`InferenceClient` bound to this transport."""
        return InferenceClient(self)


class InferenceClient:
    """Actor-side handle of an :class:`InferenceServer`: ``client(td)`` looks like a policy call.

    Args:
        transport: the transport shared with the server.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules.inference_server import InferenceServer, ThreadingTransport
        >>> transport = ThreadingTransport()
        >>> policy = TensorDictModule(torch.nn.Linear(2, 1), in_keys=["obs"], out_keys=["act"])
        >>> with InferenceServer(policy, transport):
        ...     client = InferenceClient(transport)
        ...     future = client.submit(TensorDict({"obs": torch.zeros(2)}))
        ...     future.result(timeout=5)["act"].shape
        torch.Size([1])
    """

    def __init__(self, transport: InferenceTransport) -> None:
        self._transport = transport

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        """Submits ``td`` and blocks until its result is back."""
        return self._transport.submit(td).result()

    def submit(self, td: TensorDictBase) -> Future[TensorDictBase]:
        """Submits ``td``; returns a future at once."""
        return self._transport.submit(td)
