"""``PolicyClientModule``: an inference-server client that is a TensorDict policy."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type, set_interaction_type

from tdrl.modules.inference_server._server import _NO_INTERACTION, INTERACTION_CODES, INTERACTION_KEY
from tdrl.modules.inference_server._transport import InferenceTransport

__all__ = ["PolicyClientModule"]


class _ReleasingFuture:
    """A future that frees its in-flight slot once its answer is read (or the future is dropped)."""

    def __init__(self, future: Any, release: Callable[[], None]) -> None:
        self._future, self._release = future, release

    def _release_once(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> TensorDictBase:
        try:
            out = self._future.result(timeout=timeout)
        except TimeoutError:
            raise  # still in flight: the slot stays taken
        except BaseException:
            self._release_once()
            raise
        self._release_once()
        return out

    def __del__(self) -> None:
        self._release_once()


class PolicyClientModule(TensorDictModuleBase):
    """Makes an inference-server client look like a TensorDict policy (TorchRL's ``PolicyClientModule``).

    ``forward`` submits the whole input tensordict and returns the server's answer, a *new* tensordict (the
    input is not updated in place, since the answer may come from another process). The caller's
    interaction type (or ``interaction_type``) travels with each request, so the server samples as a local
    policy would. Picklable: it can be handed to worker processes.

    Args:
        client: a client (any callable with ``submit``) or an :class:`InferenceTransport`, whose
            ``client()`` is taken.

    Keyword Args:
        in_keys / out_keys: the keys the module advertises.
        max_inflight: most unanswered :meth:`submit` calls; the next one blocks until an answer is read.
        interaction_type: the sampling mode stamped on every request (``None``: the caller's current one).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules.inference_server import InferenceServer, ThreadingTransport
        >>> transport = ThreadingTransport()
        >>> policy = TensorDictModule(torch.nn.Linear(4, 2), in_keys=["observation"], out_keys=["action"])
        >>> with InferenceServer(policy, transport):
        ...     remote = PolicyClientModule(transport, in_keys=["observation"], out_keys=["action"])
        ...     out = remote(TensorDict({"observation": torch.randn(4)}))
        >>> "action" in out.keys()
        True
    """

    def __init__(
        self,
        client: Callable[[TensorDictBase], TensorDictBase] | InferenceTransport | Any,
        *,
        in_keys: Sequence[Any] | None = None,
        out_keys: Sequence[Any] | None = None,
        max_inflight: int | None = None,
        interaction_type: InteractionType | None = None,
    ) -> None:
        super().__init__()
        if isinstance(client, InferenceTransport) or (hasattr(client, "client") and not callable(client)):
            client = client.client()
        if not callable(client):
            raise TypeError(f"client must be callable or an InferenceTransport, got {type(client).__name__}")
        if max_inflight is not None and max_inflight < 1:
            raise ValueError(f"max_inflight must be at least 1 or None, got {max_inflight}")
        self.client = client
        self.in_keys = list(in_keys or [])
        self.out_keys = list(out_keys or [])
        self.max_inflight = max_inflight
        self.interaction_type = InteractionType(interaction_type) if interaction_type is not None else None
        self._inflight = threading.BoundedSemaphore(max_inflight) if max_inflight is not None else None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        state["_inflight"] = None  # a semaphore is a per-process resource: rebuilt full on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if self.max_inflight is not None:
            self._inflight = threading.BoundedSemaphore(self.max_inflight)

    def _stamp(self, tensordict: TensorDictBase) -> TensorDictBase:
        mode = self.interaction_type if self.interaction_type is not None else interaction_type()
        code = INTERACTION_CODES[mode] if mode is not None else _NO_INTERACTION
        stamped = tensordict.copy()
        return stamped.set(INTERACTION_KEY, torch.full(tensordict.batch_size, code, dtype=torch.int8,
                                                       device=tensordict.device))

    def submit(self, tensordict: TensorDictBase) -> Any:
        """Sends ``tensordict``; returns a future whose ``result()`` is the answer."""
        if not hasattr(self.client, "submit"):  # a plain in-process callable: answered on the spot
            with set_interaction_type(self.interaction_type) if self.interaction_type else contextlib.nullcontext():
                return _Done(self.client(tensordict))
        if self._inflight is None:
            return self.client.submit(self._stamp(tensordict))
        self._inflight.acquire()
        try:
            return _ReleasingFuture(self.client.submit(self._stamp(tensordict)), self._inflight.release)
        except BaseException:
            self._inflight.release()
            raise

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The server's answer to ``tensordict`` (a new tensordict)."""
        out = self.submit(tensordict).result()
        return out.exclude(INTERACTION_KEY) if INTERACTION_KEY in out.keys() else out


class _Done:
    def __init__(self, value: TensorDictBase) -> None:
        self._value = value

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> TensorDictBase:
        return self._value

