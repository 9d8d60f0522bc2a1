"""``BatchedEnvBase``: what ``SerialEnv`` and ``ParallelEnv`` share (arguments, specs, seeding, API).

The sub-envs are built lazily: on ``start()``, on the first reset/step, or on the first access to the
specs or the batch size. Their specs are then expanded with a leading ``num_workers`` dim. Subclasses
implement the transport: ``_start``, ``_shutdown``, ``_reset_workers``, ``_step_workers``,
``_step_and_maybe_reset_workers`` and ``_seed_worker``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl._utils.processes import DEFAULT_WORKER_TIMEOUT, check_worker_timeout
from tdrl.data import Composite
from tdrl.envs._env_specs import EnvSpecsMixin
from tdrl.envs._fast_td import fast_td
from tdrl.envs.common import EnvBase

__all__ = ["BatchedEnvBase", "stack_entries"]


def stack_entries(values: list[dict], keys: list[NestedKey], batch_size: torch.Size, device: Any) -> TensorDictBase:
    """Stacks per-worker entries (``values[i][key]``) along a new first dim into one tensordict."""
    if all(type(k) is str for k in keys):
        return fast_td({k: torch.stack([v[k] for v in values]) for k in keys}, batch_size, device)
    out = TensorDict({}, batch_size, device=device)
    for k in keys:
        out.set(k, torch.stack([v[k] for v in values]))
    return out


class BatchedEnvBase(EnvBase):
    """Common base of :class:`SerialEnv` and :class:`ParallelEnv`.

    Args:
        num_workers: the number of sub-envs.
        create_env_fn: a callable returning an env, or one callable per worker.

    Keyword Args:
        create_env_kwargs: keyword arguments of ``create_env_fn`` (one dict, or one per worker).
        pin_memory: accepted for compatibility (CPU buffers are not pinned).
        share_individual_td: accepted for compatibility (sub-envs must share their specs).
        shared_memory: put the exchange buffers in shared memory (``ParallelEnv``).
        memmap: accepted for compatibility.
        policy_proof: accepted for compatibility.
        device: the device of the batched env (default: the sub-envs').
        allow_step_when_done: accepted for compatibility (stepping a done sub-env is allowed).
        num_threads: torch threads of the parent process (default: unchanged).
        num_sub_threads: torch threads of each worker process.
        serial_for_single: a ``ParallelEnv`` with one worker runs in-process.
        non_blocking: accepted for compatibility (CPU copies are synchronous).
        mp_start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"`` (default: fork where available and CUDA is
            not initialised in this process, else spawn).
        use_buffers: accepted for compatibility (buffers are always used).
        metadata_from_workers: accepted for compatibility (metadata always come from the sub-envs).
        consolidate: accepted for compatibility.
        daemon: accepted for compatibility (workers are always daemonic).
        shutdown_timeout: seconds to wait for workers to exit on ``close()``.
        worker_timeout: seconds ``ParallelEnv`` waits for one answer of a worker (start-up, reset, step,
            ...) before it kills the worker and raises :class:`~tdrl._utils.processes.WorkerTimeoutError`
            naming the worker, its pid and the call; ``None`` waits forever. Default: 300 s.

    Examples:
        >>> from tdrl.envs import PendulumEnv, SerialEnv
        >>> env: BatchedEnvBase = SerialEnv(2, PendulumEnv)
        >>> env.batch_size
        torch.Size([2])
        >>> env.rollout(3).batch_size
        torch.Size([2, 3])
        >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[[], EnvBase] | Sequence[Callable[[], EnvBase]],
        *,
        create_env_kwargs: dict | Sequence[dict] | None = None,
        pin_memory: bool = False,
        share_individual_td: bool | None = None,
        shared_memory: bool = True,
        memmap: bool = False,
        policy_proof: Callable | None = None,
        device: Any = None,
        allow_step_when_done: bool = False,
        num_threads: int | None = None,
        num_sub_threads: int = 1,
        serial_for_single: bool = False,
        non_blocking: bool = False,
        mp_start_method: str | None = None,
        use_buffers: bool | None = None,
        metadata_from_workers: bool = False,
        consolidate: bool = True,
        daemon: bool = False,
        shutdown_timeout: float = 10.0,
        worker_timeout: float | None = DEFAULT_WORKER_TIMEOUT,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"{type(self).__name__}: num_workers must be a positive int, got {num_workers!r}")
        if callable(create_env_fn):
            fns = [create_env_fn] * num_workers
        else:
            fns = list(create_env_fn)
            if len(fns) != num_workers or not all(callable(f) for f in fns):
                raise ValueError(
                    f"{type(self).__name__}: create_env_fn must be a callable or {num_workers} callables, "
                    f"got {len(fns)} items"
                )
        super().__init__(device=device, batch_size=(num_workers,))
        d = self.__dict__
        d["num_workers"] = num_workers
        d["create_env_fn"] = fns
        d["create_env_kwargs"] = self._kwargs_list(create_env_kwargs, num_workers)
        d["shared_memory"] = shared_memory
        d["num_threads"] = num_threads
        d["num_sub_threads"] = num_sub_threads
        d["mp_start_method"] = mp_start_method
        d["shutdown_timeout"] = shutdown_timeout
        d["worker_timeout"] = check_worker_timeout(worker_timeout, type(self).__name__)
        d["serial_for_single"] = serial_for_single
        d["_user_device"] = device
        d["_layout"] = None
        d["_started"] = False
        d["is_closed"] = True
        d["_meta_pending"] = True

    @staticmethod
    def _kwargs_list(kwargs: dict | Sequence[dict] | None, n: int) -> list[dict]:
        if kwargs is None:
            return [{} for _ in range(n)]
        if isinstance(kwargs, dict):
            return [dict(kwargs) for _ in range(n)]
        kwargs = [dict(k) for k in kwargs]
        if len(kwargs) != n:
            raise ValueError(f"create_env_kwargs: got {len(kwargs)} dicts for {n} workers")
        return kwargs

    def update_kwargs(self, kwargs: dict | Sequence[dict]) -> None:
        """Updates the keyword arguments of ``create_env_fn`` (used at the next ``start()``)."""
        if isinstance(kwargs, dict):
            for k in self.create_env_kwargs:
                k.update(kwargs)
            return
        kwargs = list(kwargs)
        if len(kwargs) != self.num_workers:
            raise ValueError(f"update_kwargs: got {len(kwargs)} dicts for {self.num_workers} workers")
        for old, new in zip(self.create_env_kwargs, kwargs):
            old.update(new)

    # ------------------------------------------------------------------ lazy metadata
    def _post_init(self) -> None:
        self.empty_cache()

    def _ensure_meta(self) -> None:
        if self.__dict__.get("_meta_pending"):
            self.start()

    @property
    def batch_size(self) -> torch.Size:
        self._ensure_meta()
        return self.__dict__["_batch_size"]

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        EnvBase.batch_size.fset(self, value)

    @property
    def output_spec(self) -> Composite:
        self._ensure_meta()
        return self.__dict__["_output_spec"]

    @output_spec.setter
    def output_spec(self, value: Composite) -> None:
        EnvSpecsMixin.output_spec.fset(self, value)

    @property
    def input_spec(self) -> Composite:
        self._ensure_meta()
        return self.__dict__["_input_spec"]

    @input_spec.setter
    def input_spec(self, value: Composite) -> None:
        EnvSpecsMixin.input_spec.fset(self, value)

    @property
    def device(self) -> torch.device | None:
        self._ensure_meta()
        return self.__dict__["_device"]

    @device.setter
    def device(self, value: Any) -> None:
        EnvBase.device.fset(self, value)

    def _set_metadata(self, output_spec: Composite, input_spec: Composite, sub_batch: torch.Size,
                      sub_device: Any, layout: Any) -> None:
        """Installs the expanded specs of one sub-env (called by ``start``)."""
        d = self.__dict__
        shape = torch.Size([self.num_workers, *sub_batch])
        device = d["_user_device"] if d["_user_device"] is not None else sub_device
        d["_batch_size"] = shape
        d["_device"] = None if device is None else torch.device(device)
        out = output_spec.expand(shape)
        inp = input_spec.expand(shape)
        if d["_device"] is not None:
            out, inp = out.to(d["_device"]), inp.to(d["_device"])
        d["_output_spec"] = out
        d["_input_spec"] = inp
        d["_layout"] = layout
        d["_meta_pending"] = False
        self.empty_cache()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Builds the sub-envs (or starts the workers); a no-op when already running."""
        if self.__dict__["_started"]:
            return
        self.__dict__["_meta_pending"] = False
        try:
            self._start()
        except BaseException:
            self.__dict__["_meta_pending"] = self.__dict__["_layout"] is None
            raise
        self.__dict__["_started"] = True
        self.__dict__["is_closed"] = False

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Closes the sub-envs (stops the workers and frees their buffers)."""
        if not self.__dict__.get("_started", False):
            self.__dict__["is_closed"] = True
            return
        try:
            self._shutdown()
        finally:
            self.__dict__["_started"] = False
            self.__dict__["is_closed"] = True

    def _ensure_started(self) -> None:
        if not self.__dict__["_started"]:
            self.start()

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds worker 0 with ``seed``, worker ``i`` with the seed returned by worker ``i - 1``."""
        self._ensure_started()
        for i in range(self.num_workers):
            seed = self._seed_worker(i, seed, static_seed)
        return seed

    def _set_seed(self, seed: int | None) -> None:
        self.set_seed(seed)

    # ------------------------------------------------------------------ reset / step
    def _worker_masks(self, tensordict: TensorDictBase | None) -> list[torch.Tensor | None] | None:
        """Per-worker ``_reset`` masks, or None for a full reset."""
        if tensordict is None:
            return None
        reset = tensordict.get("_reset", None)
        if reset is None:
            return None
        return [reset[i] for i in range(self.num_workers)]

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        self._ensure_started()
        masks = self._worker_masks(tensordict)
        workers = list(range(self.num_workers)) if masks is None else [
            i for i, m in enumerate(masks) if bool(m.any())
        ]
        return self._reset_workers(workers, masks, kwargs)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self._ensure_started()
        partial = tensordict.get("_step", None)
        workers = list(range(self.num_workers)) if partial is None else [
            i for i in range(self.num_workers) if bool(partial[i].any())
        ]
        return self._step_workers(tensordict, workers)

    def compute_next(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The stacked ``"next"`` outputs of the sub-envs.

        Each sub-env ran its own ``step`` pipeline, post-processing included, so the stacked result is
        already complete: the batched env adds no second pass (only ``run_type_checks``, when set).
        """
        next_tensordict = self._step(tensordict)
        if self.run_type_checks:
            self.check_step_types(next_tensordict)
        return next_tensordict

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """One step of every sub-env, each resetting itself when done: one round trip per step."""
        self._ensure_started()
        if "_step" in tensordict.keys():
            return super().step_and_maybe_reset(tensordict)
        # A "_step" mask is absent here, so the input stage pops nothing.
        self.check_step_input(tensordict)
        nxt, root = self._step_and_maybe_reset_workers(tensordict)
        if type(tensordict) is TensorDict:
            tensordict._tensordict["next"] = nxt
        else:
            tensordict.set("next", nxt)
        for key in self._layout.action_keys:
            root.set(key, tensordict.get(key))
        return tensordict, root

    # ------------------------------------------------------------------ rollout
    # Options (with their required value) under which a policy-free rollout runs inside the sub-envs.
    _FAST_ROLLOUT_OPTIONS = {"auto_reset": True, "break_when_any_done": False, "break_when_all_done": False,
                             "auto_cast_to_device": False, "return_contiguous": None}

    def _fast_rollout(self, policy: Any, callback: Any, max_steps: int, kwargs: dict) -> bool:
        if policy is not None or callback is not None or max_steps <= 0:
            return False
        if kwargs.get("break_when_any_done", True) is not False:
            return False
        for key, value in kwargs.items():
            if key not in self._FAST_ROLLOUT_OPTIONS:
                return False
            required = self._FAST_ROLLOUT_OPTIONS[key]
            if required is not None and value != required:
                return False
        return True

    def rollout(self, max_steps: int, policy: Callable | None = None, callback: Callable | None = None,
                **kwargs: Any) -> TensorDictBase:
        """``EnvBase.rollout``; without a policy (random actions) each sub-env runs its whole rollout at once.

        With ``policy=None``, no callback, ``break_when_any_done=False`` and otherwise default options, the
        random actions are drawn by each sub-env from its own action spec (with a seed drawn from the
        global torch RNG, so ``torch.manual_seed`` still makes the rollout reproducible), and the sub-envs
        step without a round trip per step. The result has the usual layout ``[num_workers, ..., time]``.
        Any other call runs the step-by-step rollout.
        """
        if not self._fast_rollout(policy, callback, max_steps, kwargs):
            return super().rollout(max_steps, policy, callback, **kwargs)
        self._ensure_started()
        seed = int(torch.randint(0, 2**62, ()))
        parts = self._rollout_workers(max_steps, [seed + i for i in range(self.num_workers)])
        result = torch.stack(parts, 0)
        if self.device is not None and result.device != self.device:
            result = result.to(self.device)
        result.refine_names(*([None] * len(self.batch_size)), "time")
        return result

    def __repr__(self) -> str:
        if self.__dict__.get("_layout") is None:
            return f"{type(self).__name__}(num_workers={self.num_workers}, not started)"
        return f"{type(self).__name__}(num_workers={self.num_workers}, batch_size={tuple(self.batch_size)})"
