"""``InferenceServer``: batches single requests from many actors into one policy forward pass."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from statistics import mean
from typing import Any, Literal

import torch
from tensordict import TensorDictBase, lazy_stack
from tensordict.nn import InteractionType, set_interaction_type

from tdrl.modules.inference_server._config import InferenceDeviceConfig, InferenceServerConfig
from tdrl.modules.inference_server._mp import MPTransport
from tdrl.modules.inference_server._threading import ThreadingTransport
from tdrl.modules.inference_server._transport import InferenceClient, InferenceTransport

__all__ = ["INTERACTION_KEY", "InferenceClient", "InferenceServer"]

# Requests carry the caller's interaction type: the serving thread's own (process-wide) context must not
# decide how a remote policy samples. Codes follow tensordict's InteractionType order.
INTERACTION_KEY = "_tdrl_interaction_type"
INTERACTION_CODES = {mode: code for code, mode in enumerate(InteractionType)}
_NO_INTERACTION = -1
_BATCHING_FIELDS = ("max_batch_size", "static_batch_size", "min_batch_size", "timeout", "collect_stats",
                    "stats_window_size")


def _make_transport(transport: Any, options: dict[str, Any] | None) -> InferenceTransport:
    if isinstance(transport, InferenceTransport):
        if options:
            raise ValueError("transport_options only apply when transport is a name, not a transport instance")
        return transport
    if transport in ("auto", "thread"):
        return ThreadingTransport(**(options or {}))
    if transport == "process":
        return MPTransport(**(options or {}))
    raise ValueError(
        f"transport={transport!r} is not available in tdrl's InferenceServer: pass an InferenceTransport, "
        "'auto' or 'thread' (ThreadingTransport) or 'process' (MPTransport)"
    )


def _resolve_devices(config: InferenceDeviceConfig | None, **devices: Any) -> tuple[Any, Any]:
    if config is not None:
        if any(value is not None for value in devices.values()):
            raise ValueError("device_config is mutually exclusive with device, policy_device and output_device")
        if config.storing_device is not None:
            raise ValueError("storing_device is a collector setting: the inference server does not store data")
        return config.policy_device, config.server_output_device()
    policy_device = devices["policy_device"] if devices["policy_device"] is not None else devices["device"]
    output = devices["output_device"]
    return (None if policy_device is None else torch.device(policy_device),
            None if output is None else torch.device(output))


class InferenceServer:
    """Auto-batching inference server (TorchRL's ``InferenceServer``), serving from a background thread.

    Actors submit single (unbatched) tensordicts through the ``transport``; the serve loop waits for work,
    drains up to ``max_batch_size`` requests (gathering ``min_batch_size`` for up to ``timeout`` s), stacks
    them, runs ``model`` once and sends each actor its row, stamped with ``policy_version_key``. An
    exception in the forward pass is raised by every client of that batch; the loop keeps serving.

    Args:
        model: a callable from a batched tensordict to a batched tensordict (e.g. a ``TensorDictModule``).
        transport: an :class:`InferenceTransport`, or ``"auto"``/``"thread"`` (:class:`ThreadingTransport`)
            or ``"process"`` (:class:`MPTransport`, clients in other processes).

    Keyword Args:
        policy_factory: builds the model (instead of ``model``).
        service_backend: only ``"thread"`` (see ``docs/differences.md``).
        service_backend_options / request_spec / response_spec / num_clients: TorchRL's options of the
            process, Ray and fixed-slot backends; only ``None`` is accepted.
        transport_options: keyword arguments of the transport built from a name.
        max_batch_size, static_batch_size, min_batch_size, timeout, collect_stats, stats_window_size: as in
            :class:`InferenceServerConfig` (``None``: its defaults), exclusive with ``server_config``.
        collate_fn: stacks the list of requests (default: ``lazy_stack``).
        device / policy_device / output_device: where the forward runs and where the answers go; exclusive
            with ``device_config``.
        weight_sync / weight_sync_model_id: TorchRL's weight-sync scheme hook; only ``None`` is accepted (use
            :meth:`update_model`, which holds the model lock and bumps the policy version).
        server_config: an :class:`InferenceServerConfig`.
        device_config: an :class:`InferenceDeviceConfig`.
        shutdown_event: a ``threading.Event`` that stops the loop when set.
        policy_version: the first policy version stamped on answers.
        policy_version_key: where it is written (``None``: not written).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> policy = TensorDictModule(torch.nn.Linear(4, 2), in_keys=["obs"], out_keys=["act"])
        >>> with InferenceServer(policy, transport="auto", max_batch_size=8) as server:
        ...     result = server.client()(TensorDict({"obs": torch.randn(4)}))
        >>> result["act"].shape, int(result["policy_version"])
        (torch.Size([2]), 0)
    """

    def __init__(  # noqa: PLR0913 - TorchRL's signature
        self,
        model: torch.nn.Module | Callable[[TensorDictBase], TensorDictBase] | None = None,
        transport: InferenceTransport | Literal["auto", "thread", "process"] | str = "auto",
        *,
        policy_factory: Callable[[], Any] | None = None,
        service_backend: Literal["thread", "process", "ray"] = "thread",
        service_backend_options: dict[str, Any] | None = None,
        transport_options: dict[str, Any] | None = None,
        request_spec: TensorDictBase | None = None,
        response_spec: TensorDictBase | None = None,
        num_clients: int | None = None,
        max_batch_size: int | None = None,
        static_batch_size: int | None = None,
        min_batch_size: int | None = None,
        timeout: float | None = None,
        collate_fn: Callable[[list[TensorDictBase]], TensorDictBase] | None = None,
        device: torch.device | str | None = None,
        policy_device: torch.device | str | None = None,
        output_device: torch.device | str | None = None,
        collect_stats: bool | None = None,
        stats_window_size: int | None = None,
        weight_sync: Any = None,
        weight_sync_model_id: str = "policy",
        server_config: InferenceServerConfig | None = None,
        device_config: InferenceDeviceConfig | None = None,
        shutdown_event: threading.Event | None = None,
        policy_version: int = 0,
        policy_version_key: Any = "policy_version",
    ) -> None:
        self._check_unsupported(service_backend, service_backend_options, request_spec, response_spec,
                                num_clients, weight_sync)
        if (model is None) == (policy_factory is None):
            raise ValueError("pass exactly one of model and policy_factory")
        self.model = model if model is not None else policy_factory()  # type: ignore[misc]
        self.transport = _make_transport(transport, transport_options)
        given = dict(zip(_BATCHING_FIELDS, (max_batch_size, static_batch_size, min_batch_size, timeout,
                                            collect_stats, stats_window_size)))
        if server_config is not None and any(v is not None for v in given.values()):
            raise ValueError(f"server_config is mutually exclusive with {', '.join(_BATCHING_FIELDS)}")
        config = server_config or InferenceServerConfig(**{k: v for k, v in given.items() if v is not None})
        if config.static_batch_size is not None:
            raise ValueError("static_batch_size (CUDA-graph capture) needs a CUDA policy_device: not supported here")
        self.server_config = config
        self.max_batch_size, self.min_batch_size, self.timeout = (config.max_batch_size, config.min_batch_size,
                                                                 config.timeout)
        self.static_batch_size = None
        self.collect_stats, self.stats_window_size = config.collect_stats, config.stats_window_size
        self.collate_fn = collate_fn if collate_fn is not None else lazy_stack
        self.policy_device, self.output_device = _resolve_devices(
            device_config, device=device, policy_device=policy_device, output_device=output_device)
        self.device = self.policy_device
        self.weight_sync, self._weight_sync_model_id = None, weight_sync_model_id
        self._policy_version = int(policy_version)
        self.policy_version_key = policy_version_key
        self._shutdown_event = shutdown_event if shutdown_event is not None else threading.Event()
        self._worker: threading.Thread | None = None
        self._model_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._reset_stats()
        if self.policy_device is not None and isinstance(self.model, torch.nn.Module):
            self.model.to(self.policy_device)

    @staticmethod
    def _check_unsupported(backend: Any, backend_options: Any, request_spec: Any, response_spec: Any,
                           num_clients: Any, weight_sync: Any) -> None:
        if backend != "thread":
            raise ValueError(f"service_backend={backend!r}: tdrl's InferenceServer serves from a thread of this "
                             "process (service_backend='thread'); clients in other processes use transport='process'")
        for name, value in (("service_backend_options", backend_options), ("request_spec", request_spec),
                            ("response_spec", response_spec), ("num_clients", num_clients),
                            ("weight_sync", weight_sync)):
            if value is not None:
                raise ValueError(f"{name} is not supported by tdrl's thread-backed InferenceServer (got {value!r})")

    # ------------------------------------------------------------------ statistics and versions
    def _reset_stats(self) -> None:
        self._stats_started_at = time.monotonic()
        self._num_requests = self._num_batches = self._num_weight_updates = 0
        self._batch_sizes: list[int] = []
        self._queue_wait_ms: list[float] = []
        self._forward_ms: list[float] = []

    def _window(self, target: list, values: list) -> None:
        target.extend(values)
        del target[: max(0, len(target) - self.stats_window_size)]

    def stats(self, *, reset: bool = False) -> dict[str, float | int]:
        """Request and batch counts and rates, mean batch size, p50/p95 queue wait and forward time (ms).

        Args:
            reset: clear the counters after reading them.
        """
        def pct(values: list[float], q: float) -> float:
            return float(sorted(values)[round((len(values) - 1) * q)]) if values else 0.0

        with self._stats_lock:
            elapsed = max(time.monotonic() - self._stats_started_at, 1e-12)
            result: dict[str, float | int] = {
                "requests": self._num_requests, "batches": self._num_batches,
                "requests_per_s": self._num_requests / elapsed, "batches_per_s": self._num_batches / elapsed,
                "avg_batch_size": float(mean(self._batch_sizes)) if self._batch_sizes else 0.0,
                "p50_queue_ms": pct(self._queue_wait_ms, 0.5), "p95_queue_ms": pct(self._queue_wait_ms, 0.95),
                "p50_forward_ms": pct(self._forward_ms, 0.5), "p95_forward_ms": pct(self._forward_ms, 0.95),
                "policy_version": self._policy_version, "weight_updates": self._num_weight_updates,
            }
            if reset:
                self._reset_stats()
        return result

    @property
    def policy_version(self) -> int:
        """The policy version stamped on answers (bumped by each weight update)."""
        return self._policy_version

    def _mark_weight_update(self, model_version: int | None = None) -> None:
        with self._stats_lock:
            self._policy_version = self._policy_version + 1 if model_version is None else int(model_version)
            self._num_weight_updates += 1

    def update_policy_weights_(self, model_id: Any = None, policy_or_weights: Any = None, **kwargs: Any) -> None:
        """Records a weight update applied to the model elsewhere (bumps :attr:`policy_version`)."""
        self._mark_weight_update()

    def update_model(self, update_fn: Callable[[Any], Any], *, mark_weight_update: bool = True) -> Any:
        """Runs ``update_fn(model)`` while no batch is served; bumps the version unless told not to."""
        with self._model_lock:
            result = update_fn(self.model)
            if mark_weight_update:
                self._mark_weight_update()
        return result

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> InferenceServer:
        """Starts the serve loop in a daemon thread; returns ``self``."""
        if self.is_alive:
            raise RuntimeError("the inference server is already running")
        self._shutdown_event.clear()
        self._worker = threading.Thread(target=self._run, daemon=True, name="InferenceServer-worker")
        self._worker.start()
        return self

    def shutdown(self, timeout: float | None = 5.0) -> None:
        """Stops the loop (pending requests get an error) and waits ``timeout`` s for the thread."""
        self._shutdown_event.set()
        if self._worker is not None:
            self._worker.join(timeout=timeout)
            self._worker = None
        if isinstance(self.transport, MPTransport):
            self.transport.mark_server_stopped()

    @property
    def is_alive(self) -> bool:
        """Whether the serve thread runs."""
        return self._worker is not None and self._worker.is_alive()

    @property
    def service_backend(self) -> str:
        """Where the policy is served: ``"thread"``."""
        return "thread"

    @property
    def transport_kind(self) -> str:
        """The payload transport: ``"thread"`` or ``"process"`` (else the transport's class name)."""
        kinds = {ThreadingTransport: "thread", MPTransport: "process"}
        return kinds.get(type(self.transport), type(self.transport).__name__)

    def client(self) -> Any:
        """A client of the transport (for :class:`MPTransport`: create it before starting the process)."""
        return self.transport.client()

    def clients(self, num_clients: int) -> list[Any]:
        """``num_clients`` independent clients."""
        if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
            raise ValueError(f"num_clients must be a positive int, got {num_clients!r}")
        return [self.client() for _ in range(num_clients)]

    def __enter__(self) -> InferenceServer:
        return self.start() if not self.is_alive else self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __del__(self) -> None:
        try:
            self.shutdown(timeout=0.5)
        except Exception:  # noqa: BLE001 - interpreter shutdown or half-built server
            pass

    # ------------------------------------------------------------------ serving
    def _gather(self) -> tuple[list, list, list]:
        transport = self.transport
        transport.wait_for_work(timeout=self.timeout)
        items, callbacks, stamps = transport.drain_with_timing(self.max_batch_size)
        deadline = time.monotonic() + self.timeout
        while callbacks and len(callbacks) < self.min_batch_size and time.monotonic() < deadline:
            transport.wait_for_work(timeout=max(0.0, deadline - time.monotonic()))
            more = transport.drain_with_timing(self.max_batch_size - len(callbacks))
            items += more[0]
            callbacks += more[1]
            stamps += more[2]
        return items, callbacks, stamps

    def _run(self) -> None:
        try:
            while not self._shutdown_event.is_set():
                items, callbacks, stamps = self._gather()
                if not callbacks:
                    continue
                try:
                    self._serve(items, callbacks, stamps)
                except Exception as exc:  # noqa: BLE001 - every waiting client gets the error, the loop goes on
                    for callback in callbacks:
                        self.transport.resolve_exception(callback, exc)
        finally:
            self._fail_pending()

    def _forward(self, batch: TensorDictBase) -> TensorDictBase:
        codes = batch.get(INTERACTION_KEY, None)
        if codes is None:
            return self.model(batch)
        batch = batch.exclude(INTERACTION_KEY)
        unique = codes.unique().tolist()
        if len(unique) == 1:
            return self._forward_as(batch, unique[0])
        parts = {code: self._forward_as(batch[codes == code], code) for code in unique}
        # Requests with different interaction types run as sub-batches, then go back in request order.
        rows: list = [None] * batch.shape[0]
        for code, out in parts.items():
            for row, index in zip(out.unbind(0), (codes == code).nonzero().reshape(-1).tolist()):
                rows[index] = row
        return lazy_stack(rows)

    def _forward_as(self, batch: TensorDictBase, code: int) -> TensorDictBase:
        if code == _NO_INTERACTION:
            return self.model(batch)
        with set_interaction_type(list(InteractionType)[code]):
            return self.model(batch)

    def _serve(self, items: list[TensorDictBase], callbacks: list, stamps: list) -> None:
        now = time.monotonic()
        batch = self.collate_fn(items)
        if self.policy_device is not None:
            batch = batch.to(self.policy_device)
        start = time.monotonic()
        with self._model_lock, torch.no_grad():
            out = self._forward(batch)
            version = self._policy_version
        if self.output_device is not None:
            out = out.to(self.output_device)
        rows = out.unbind(0)
        if len(rows) != len(callbacks):
            raise RuntimeError(f"the model returned {len(rows)} results for a batch of {len(callbacks)} requests")
        if self.collect_stats:
            with self._stats_lock:
                self._num_requests += len(callbacks)
                self._num_batches += 1
                self._window(self._batch_sizes, [len(callbacks)])
                self._window(self._queue_wait_ms, [(now - s) * 1000.0 for s in stamps if s is not None])
                self._window(self._forward_ms, [(time.monotonic() - start) * 1000.0])
        for callback, row in zip(callbacks, rows):
            if self.policy_version_key is not None:
                row = row.set(self.policy_version_key, torch.tensor(version, dtype=torch.int64, device=row.device))
            self.transport.resolve(callback, row)

    def _fail_pending(self) -> None:
        _, callbacks = self.transport.drain(1 << 30)
        for callback in callbacks:
            self.transport.resolve_exception(callback, RuntimeError("the inference server was shut down"))
