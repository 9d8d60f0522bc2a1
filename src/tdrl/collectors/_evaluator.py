"""``Evaluator``: blocking or background evaluation of a policy on whole episodes (TorchRL's collector one)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.collectors._single import Collector
from tdrl.envs import EnvBase, ExplorationType

__all__ = ["Evaluator"]

_EPISODE_REWARD = ("next", "episode_reward")
_STEP_COUNT = ("next", "step_count")


def episode_metrics(batch: TensorDictBase, reward_key: Any) -> dict[str, Any]:
    """Mean / std return, episode count, mean length and frames of a ``traj_format="cat"`` batch."""
    ids = batch.get(("collector", "traj_ids")).reshape(-1)
    returns, lengths = [], []
    for traj_id in ids.unique(sorted=True):
        traj = batch[ids == traj_id]
        episode = traj.get(_EPISODE_REWARD, None)  # a RewardSum's running return, when the env has one
        returns.append(float(episode[-1].sum()) if episode is not None else float(traj.get(reward_key).sum()))
        steps = traj.get(_STEP_COUNT, None)
        lengths.append(float(steps[-1].sum()) if steps is not None else float(traj.shape[0]))
    rewards = torch.tensor(returns)
    n = len(returns)
    return {
        "reward": rewards.mean().item() if n else float("nan"),
        "reward_std": rewards.std().item() if n > 1 else (0.0 if n else float("nan")),
        "num_episodes": n,
        "episode_length": sum(lengths) / n if n else float("nan"),
        "frame_count": int(batch.shape[0]),
    }


class Evaluator:
    """Evaluates a policy on ``num_trajectories`` complete episodes, blocking or in a background thread.

    Each evaluation resets a :class:`Collector` built once with ``trajs_per_batch=num_trajectories`` and
    ``exploration_type`` (deterministic by default), optionally loads new weights first, and returns
    ``{"<log_prefix>/reward": mean return, "/reward_std", "/num_episodes", "/episode_length", "/fps",
    "/step", ...}`` plus the ``metrics_fn`` entries. The return of an episode is the last
    ``("next", "episode_reward")`` when the env has a ``RewardSum``, else the sum of ``reward_keys``.

    Args:
        env: an env or a callable building one (built on the first evaluation).
        policy: the policy (``None`` with ``policy_factory``).

    Keyword Args:
        policy_factory: ``(env) -> policy`` (or a no-argument callable), called on the first evaluation.
        num_trajectories: complete episodes per evaluation.
        max_steps: steps per episode at most (the collector's ``max_frames_per_traj``).
        frames_per_batch: the collector's internal batch (default ``max_steps``, else 1000).
        collector_cls: ``None``, ``"Collector"`` or :class:`Collector` (or a subclass).
        collector_kwargs: more keyword arguments of the collector.
        weight_sync_schemes / init_fn / num_gpus / ray_kwargs: options of TorchRL's process and Ray
            backends; tdrl evaluates in threads of this process (``backend="thread"``), so they must stay unset.
        log_prefix: prefix of the metric names.
        reward_keys / done_keys: where the rewards and done flags are read.
        device: the policy's device.
        exploration_type: how the policy acts.
        metrics_fn: ``(trajectory batch) -> dict``: extra metrics, prefixed like the others.
        dump_video: call ``dump(step=...)`` on the env's transforms that have it (video recorders).
        on_result: called with each result as a flat ``TensorDict`` (an exception in it is not raised).
        busy_policy: what :meth:`trigger_eval` does while an evaluation is pending: ``"skip"`` (return
            ``False``), ``"error"`` (raise) or ``"queue"`` (run it next).
        backend: ``"thread"``.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> evaluator = Evaluator(PendulumEnv(), num_trajectories=2, max_steps=5)
        >>> result = evaluator.evaluate(step=0)
        >>> result["eval/num_episodes"], result["eval/episode_length"], result["eval/step"]
        (2, 5.0, 0)
        >>> evaluator.trigger_eval(step=1)
        True
        >>> evaluator.wait(timeout=30)["eval/step"]
        1
        >>> evaluator.shutdown()
    """

    def __init__(  # noqa: PLR0913 - TorchRL's signature
        self,
        env: EnvBase | Callable[[], EnvBase],
        policy: Any = None,
        *,
        policy_factory: Callable[..., Callable] | None = None,
        num_trajectories: int = 10,
        max_steps: int | None = None,
        frames_per_batch: int | None = None,
        collector_cls: type | str | None = None,
        collector_kwargs: dict | None = None,
        weight_sync_schemes: dict[str, Any] | None = None,
        log_prefix: str = "eval",
        reward_keys: Any = ("next", "reward"),
        done_keys: Any = ("next", "done"),
        device: torch.device | str | None = None,
        exploration_type: ExplorationType = ExplorationType.DETERMINISTIC,
        metrics_fn: Callable[[TensorDictBase], dict[str, float]] | None = None,
        dump_video: bool = True,
        on_result: Callable[[TensorDictBase], None] | None = None,
        busy_policy: str = "skip",
        backend: str = "thread",
        init_fn: Callable[[], None] | None = None,
        num_gpus: int = 1,
        ray_kwargs: dict | None = None,
    ) -> None:
        if backend != "thread":
            raise ValueError(f"backend={backend!r}: tdrl's Evaluator runs in threads of this process ('thread')")
        for name, value in (("weight_sync_schemes", weight_sync_schemes), ("init_fn", init_fn),
                            ("ray_kwargs", ray_kwargs)):
            if value is not None:
                raise ValueError(f"{name} is an option of TorchRL's process/Ray evaluators; with backend='thread' "
                                 "it must be None")
        if policy is not None and policy_factory is not None:
            raise ValueError("pass either policy or policy_factory, not both")
        if busy_policy not in ("skip", "error", "queue"):
            raise ValueError(f"busy_policy must be 'skip', 'error' or 'queue', got {busy_policy!r}")
        if isinstance(num_trajectories, bool) or not isinstance(num_trajectories, int) or num_trajectories < 1:
            raise ValueError(f"num_trajectories must be a positive int, got {num_trajectories!r}")
        self._collector_cls = self._resolve_collector_cls(collector_cls)
        self._env_source, self._policy, self._policy_factory = env, policy, policy_factory
        self._num_trajectories, self._max_steps = num_trajectories, max_steps
        self._frames_per_batch = frames_per_batch or max_steps or 1000
        self._collector_kwargs = dict(collector_kwargs or {})
        self._log_prefix, self._reward_keys, self._done_keys = log_prefix, reward_keys, done_keys
        self._device, self._exploration_type, self._metrics_fn = device, exploration_type, metrics_fn
        self._dump_video, self._on_result, self._busy_policy = dump_video, on_result, busy_policy
        self._collector: Collector | None = None
        self._iterator: Any = None
        self._step_counter = 0
        self._eval_lock = threading.Lock()  # one rollout at a time: the sync and background paths share the env
        self._async_lock = threading.Lock()
        self._requests: list[tuple[TensorDictBase | None, int]] = []
        self._running = False
        self._ready: list[dict[str, Any]] = []
        self._ready_event = threading.Event()
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @staticmethod
    def _resolve_collector_cls(collector_cls: type | str | None) -> type:
        if collector_cls is None or collector_cls == "Collector":
            return Collector
        if isinstance(collector_cls, type) and issubclass(collector_cls, Collector):
            return collector_cls
        raise ValueError(f"collector_cls must be None, 'Collector' or a Collector subclass, got {collector_cls!r}")

    # ------------------------------------------------------------------ the rollout
    def _build(self) -> Collector:
        env = self._env_source if isinstance(self._env_source, EnvBase) else self._env_source()
        policy = self._policy
        if self._policy_factory is not None:
            try:
                policy = self._policy_factory(env)
            except TypeError:
                policy = self._policy_factory()
        kwargs = {"traj_format": "cat", **self._collector_kwargs}
        self._collector = self._collector_cls(
            env, policy, frames_per_batch=self._frames_per_batch, total_frames=-1,
            trajs_per_batch=self._num_trajectories, max_frames_per_traj=self._max_steps,
            exploration_type=self._exploration_type, device=self._device, **kwargs,
        )
        self._iterator = iter(self._collector)
        return self._collector

    def _run(self, weights: TensorDictBase | None, step: int) -> dict[str, Any]:
        with self._eval_lock:
            collector = self._collector if self._collector is not None else self._build()
            if weights is not None:
                collector.update_policy_weights_(weights)
            collector.reset()  # every evaluation starts fresh episodes
            start = time.perf_counter()
            batch = next(self._iterator)
            elapsed = time.perf_counter() - start
            raw = episode_metrics(batch, self._reward_keys)
            raw["fps"] = raw["frame_count"] / elapsed if elapsed > 0 else float("nan")
            if self._metrics_fn is not None:
                raw.update({f"custom/{k}": v for k, v in self._metrics_fn(batch).items()})
            if self._dump_video:
                for transform in _transforms(collector.env):
                    dump = getattr(transform, "dump", None)
                    if callable(dump):
                        dump(step=step)
        return self._format(raw, step)

    def _format(self, raw: dict[str, Any], step: int) -> dict[str, Any]:
        prefix = self._log_prefix
        out = {f"{prefix}/{k}": raw[k] for k in ("reward", "reward_std", "num_episodes", "episode_length", "fps")}
        out[f"{prefix}/step"] = step
        out.update({f"{prefix}/{k[len('custom/'):]}": v for k, v in raw.items() if k.startswith("custom/")})
        if self._on_result is not None:
            try:
                self._on_result(TensorDict({k: torch.as_tensor(v) for k, v in out.items()}, []))
            except Exception:  # noqa: BLE001 - a failing logging callback must not end evaluations (TorchRL too)
                pass
        return out

    @staticmethod
    def extract_weights(policy: torch.nn.Module) -> TensorDictBase:
        """The policy's weights, detached, cloned and on CPU (safe to hand to another thread)."""
        return TensorDict.from_module(policy).data.detach().clone().cpu()

    def _prepare(self, weights: Any, weights_dict: dict | None) -> TensorDictBase | None:
        if weights_dict is not None:
            unknown = set(weights_dict) - {"policy"}
            if unknown:
                raise KeyError(f"weights_dict: only 'policy' can be synced by the thread evaluator, got {sorted(unknown)}")
            weights = weights_dict.get("policy", weights)
        if weights is None:
            return None
        if isinstance(weights, torch.nn.Module):
            return self.extract_weights(weights)
        if isinstance(weights, TensorDictBase):
            return weights.detach().clone().cpu()
        raise TypeError(f"weights must be an nn.Module or a TensorDict, got {type(weights).__name__}")

    def _next_step(self, step: int | None) -> int:
        if step is None:
            step, self._step_counter = self._step_counter, self._step_counter + 1
        return step

    # ------------------------------------------------------------------ public API
    def evaluate(self, weights: Any = None, step: int | None = None, *, weights_dict: dict | None = None
                 ) -> dict[str, Any]:
        """Runs one evaluation now and returns its metrics.

        Args:
            weights: a module or a TensorDict of weights loaded into the policy first (``None``: as it is).
            step: the step reported under ``"<prefix>/step"`` (``None``: an internal counter).
            weights_dict: ``{"policy": weights}``, TorchRL's multi-model form.
        """
        return self._run(self._prepare(weights, weights_dict), self._next_step(step))

    def trigger_eval(self, weights: Any = None, step: int | None = None, *, weights_dict: dict | None = None
                     ) -> bool:
        """Schedules an evaluation in the background thread; ``False`` if skipped (``busy_policy="skip"``)."""
        prepared = self._prepare(weights, weights_dict)
        with self._async_lock:
            busy = self._running or bool(self._requests)
            if busy and self._busy_policy == "error":
                raise RuntimeError("an evaluation is already pending (busy_policy='error')")
            if busy and self._busy_policy == "skip":
                return False
            self._requests.append((prepared, self._next_step(step)))
            self._wake.set()
        if self._thread is None or not self._thread.is_alive():
            self._stop = False
            self._thread = threading.Thread(target=self._loop, daemon=True, name="Evaluator")
            self._thread.start()
        return True

    def _loop(self) -> None:
        while not self._stop:
            self._wake.wait(timeout=0.1)
            with self._async_lock:
                if not self._requests:
                    self._wake.clear()
                    continue
                weights, step = self._requests.pop(0)
                self._running = True
            try:
                result = self._run(weights, step)
            except BaseException as err:  # noqa: BLE001 - raised again by poll()/wait() in the caller's thread
                self._error, result = err, None
            with self._async_lock:
                self._running = False
                if result is not None:
                    self._ready.append(result)
                self._ready_event.set()

    def _pop_ready(self) -> dict[str, Any] | None:
        with self._async_lock:
            error, self._error = self._error, None
            if error is not None:
                raise RuntimeError("the background evaluation failed") from error
            result = self._ready.pop(0) if self._ready else None
            if not self._ready:
                self._ready_event.clear()
        return result

    def poll(self, timeout: float = 0) -> dict[str, Any] | None:
        """The oldest finished background result, or ``None``; waits up to ``timeout`` s for one."""
        if timeout > 0:
            self._ready_event.wait(timeout=timeout)
        return self._pop_ready()

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        """Blocks (up to ``timeout`` s) until a background result is ready and returns it."""
        self._ready_event.wait(timeout=timeout)
        return self._pop_ready()

    @property
    def pending(self) -> bool:
        """Whether a background evaluation runs or is queued."""
        with self._async_lock:
            return self._running or bool(self._requests)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stops the background thread (after its current evaluation) and closes the collector."""
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None
        if self._collector is not None:
            self._collector.shutdown()
            self._collector = None

    def state_dict(self) -> dict[str, Any]:
        """The step counter (refused while background work or unread results exist)."""
        if self.pending or self._ready:
            raise RuntimeError("Evaluator.state_dict() needs no pending, queued or unread evaluation")
        return {"step_counter": self._step_counter}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict`."""
        if self.pending or self._ready:
            raise RuntimeError("Evaluator.load_state_dict() needs no pending, queued or unread evaluation")
        self._step_counter = int(state_dict.get("step_counter", 0))


def _transforms(env: EnvBase) -> list:
    transform = getattr(env, "transform", None)
    if transform is None:
        return []
    return list(transform) if hasattr(transform, "__iter__") else [transform]
