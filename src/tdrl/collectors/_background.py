"""``start()`` / ``async_shutdown()``: a collector filling its replay buffer from a background thread."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["BackgroundCollection"]


class BackgroundCollection:
    """Mixin for an iterable collector with a ``replay_buffer``: collection runs in a daemon thread.

    The thread iterates the collector (each batch goes into the buffer) until ``total_frames`` is reached or
    :meth:`async_shutdown` asks it to stop after the current batch. An exception raised in the thread is kept
    and raised again by :meth:`async_shutdown`, so a failed collection is not silent.
    """

    replay_buffer: Any
    _bg_thread: threading.Thread | None = None
    _bg_stop: bool = False
    _bg_error: BaseException | None = None

    def start(self) -> None:
        """Starts collecting into ``replay_buffer`` in a background thread (a no-op if already running).

        Raises:
            RuntimeError: the collector has no replay buffer to fill.
        """
        if self.replay_buffer is None:
            raise RuntimeError("start() needs a collector built with replay_buffer=: the batches go into it")
        if self.is_running():
            return
        self._bg_stop, self._bg_error = False, None
        self._bg_thread = threading.Thread(target=self._bg_run, name=f"{type(self).__name__}-start", daemon=True)
        self._bg_thread.start()

    def _bg_run(self) -> None:
        try:
            for _ in self:  # type: ignore[attr-defined]
                if self._bg_stop:
                    return
        except BaseException as err:  # noqa: BLE001 - kept for async_shutdown to raise in the caller's thread
            self._bg_error = err

    def is_running(self) -> bool:
        """Whether the background collection thread started by :meth:`start` is alive."""
        return self._bg_thread is not None and self._bg_thread.is_alive()

    def async_shutdown(self, timeout: float | None = None, close_env: bool = True) -> None:
        """Stops the background collection after the current batch, then shuts the collector down.

        Args:
            timeout: seconds to wait for the thread (``None``: until it ends).
            close_env: ``False`` keeps the collector (and its env) usable after the thread stops.

        Raises:
            RuntimeError: the thread is still running after ``timeout``.
            BaseException: the exception that ended the background collection, if any.
        """
        self._bg_stop = True
        if self._bg_thread is not None:
            self._bg_thread.join(timeout=timeout)
            if self._bg_thread.is_alive():
                raise RuntimeError(f"the background collection did not stop within timeout={timeout} s")
        if close_env:
            self.shutdown()  # type: ignore[attr-defined]
        error, self._bg_error = self._bg_error, None
        if error is not None:
            raise error
