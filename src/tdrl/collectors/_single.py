"""``Collector``: steps one (possibly batched) environment with a policy and yields ``[*env_batch, T]`` batches."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase

from tdrl._utils import TDRLWarning
from tdrl.collectors._background import BackgroundCollection
from tdrl.collectors._base import BaseCollector, policy_weights
from tdrl.collectors._trajectories import validate_traj_format
from tdrl.collectors.utils import split_trajectories
from tdrl.envs import EnvBase, ExplorationType, StepCounter, TransformedEnv, set_exploration_type
from tdrl.envs.rollout_engine import RolloutLoop, apply_policy, as_td_policy, mark_last_truncated, run_rollout
from tdrl.modules import RandomPolicy
from tdrl.modules.utils import append_missing_env_transforms, missing_env_transforms
from tdrl.weight_update import WeightSyncScheme, WeightUpdaterBase

__all__ = ["Collector"]

_TRAJ_KEY = ("collector", "traj_ids")


def _policy_env_transforms(env: EnvBase, policy: Any, flag: bool | None, owner: str) -> EnvBase:
    if flag is True:
        return append_missing_env_transforms(env, policy)
    if flag is None and policy is not None:
        missing = missing_env_transforms(env, policy)
        if missing:
            names = ", ".join(type(t).__name__ for t in missing)
            warnings.warn(
                f"The env passed to {owner} lacks transforms its policy needs ({names}); pass "
                "auto_register_policy_transforms=True to append them (TorchRL 0.15's default), or False to "
                "silence this warning.", FutureWarning, stacklevel=4,
            )
    elif flag is not None and flag is not False:
        raise TypeError(f"auto_register_policy_transforms must be a bool or None, got {flag!r}")
    return env


def _make_env(create_env_fn: Any, create_env_kwargs: Mapping[str, Any] | None) -> EnvBase:
    if isinstance(create_env_fn, EnvBase):
        if create_env_kwargs:
            raise TypeError("create_env_kwargs only applies when create_env_fn is a callable, not an env instance")
        return create_env_fn
    if isinstance(create_env_fn, Sequence):
        raise TypeError(
            "Collector takes one env (or one env constructor); for a list of constructors use "
            "MultiSyncCollector or MultiAsyncCollector"
        )
    if not callable(create_env_fn):
        raise TypeError(f"create_env_fn must be an EnvBase or a callable returning one, got {type(create_env_fn)}")
    env = create_env_fn(**(create_env_kwargs or {}))
    if not isinstance(env, EnvBase):
        raise TypeError(f"create_env_fn returned {type(env).__name__}, expected an EnvBase")
    return env


def _build_env(
    create_env_fn: Any, create_env_kwargs: Mapping[str, Any] | None, env_device: Any, max_frames_per_traj: int | None
) -> EnvBase:
    """The collector's env: built, moved to ``env_device`` and given a ``StepCounter`` for ``max_frames_per_traj``."""
    env = _make_env(create_env_fn, create_env_kwargs)
    if env_device is not None and env.device is not None and torch.device(env_device) != env.device:
        env = env.to(env_device)
    if max_frames_per_traj is not None and max_frames_per_traj > 0:
        if _has_step_counter(env):
            raise ValueError(
                "max_frames_per_traj is set but the env already has a StepCounter; drop one of the two limits"
            )
        env = TransformedEnv(env, StepCounter(max_steps=max_frames_per_traj))
    return env


def _device_or_default(specific: Any, device: Any) -> torch.device | None:
    """``specific`` if given, else ``device``, as a ``torch.device`` (``None`` when neither is given)."""
    if specific is None and device is None:
        return None
    return torch.device(specific if specific is not None else device)


def _has_step_counter(env: EnvBase) -> bool:
    transform = getattr(env, "transform", None)
    if transform is None:
        return False
    parts = list(transform) if hasattr(transform, "__iter__") else [transform]
    return any(isinstance(t, StepCounter) for t in parts)


def _available_keys(env: EnvBase) -> set:
    keys: set = set()
    for spec in (env.full_observation_spec, env.full_state_spec, env.full_action_spec, env.full_done_spec):
        for key in spec.keys(True, False):
            keys.add(key if isinstance(key, str) or len(key) > 1 else key[0])
    return keys


class Collector(BackgroundCollection, BaseCollector):
    """Collects ``frames_per_batch`` frames per iteration from one environment (TorchRL's ``Collector``).

    Each batch has batch size ``[*env.batch_size, T]`` with ``T = frames_per_batch / env.batch_size.numel()``,
    the time dim last, ``("next", ...)`` entries, and ``("collector", "traj_ids")``: an id per step, unique
    across batches, that changes each time a sub-env starts a new trajectory. Environments are reset where
    they are done (``reset_when_done``), and the state carries over from one batch to the next.

    Args:
        create_env_fn: an ``EnvBase`` or a callable building one (called with ``create_env_kwargs``).
        policy: a tensordict module (or a plain ``nn.Module`` over the observations); random actions
            from the env's action spec when ``None``.

    Keyword Args:
        policy_factory: a callable building the policy (instead of ``policy``).
        frames_per_batch: frames per batch (rounded up to a multiple of the env's batch numel).
        total_frames: frames to collect before stopping; ``-1`` runs forever.
        device / storing_device / policy_device / env_device: where things run and where batches are stored.
        create_env_kwargs: keyword arguments of ``create_env_fn``.
        max_frames_per_traj: truncate trajectories after this many steps (adds a ``StepCounter``).
        init_random_frames: frames collected with random actions first (rounded up to whole batches).
        reset_at_each_iter: reset the env at the start of every batch.
        postproc: a callable applied to each batch.
        split_trajs: return ``[n_traj, T_max]`` padded trajectories with a ``("collector", "mask")`` entry.
        track_traj_ids: write ``("collector", "traj_ids")``.
        exploration_type: the exploration type the policy runs under (``RANDOM`` by default).
        return_same_td: accepted for TorchRL compatibility; each batch is a new tensordict.
        reset_when_done: reset sub-envs that are done (else they are stepped as they are).
        set_truncated: mark the last step of each batch truncated.
        replay_buffer: extend this buffer with each batch and yield ``None`` instead of the batch;
            :meth:`start` then collects into it from a background thread (:meth:`async_shutdown` stops it).
        extend_buffer: accepted for TorchRL compatibility (batches are always written whole).
        trust_policy: skip the policy checks and wrapping.
        compile_policy: ``True`` or ``torch.compile`` keyword arguments to compile the policy.
        num_threads: ``torch.set_num_threads`` for this process.
        weight_updater: a ``WeightUpdaterBase`` (or a callable building one) used by ``update_policy_weights_``.
        weight_sync_schemes: ``{"policy": scheme}``: how ``update_policy_weights_`` writes the weights.
        track_policy_version: count the calls to ``update_policy_weights_`` and write the count into every
            collected frame under ``"policy_version"`` (int64), as TorchRL's ``PolicyVersion`` does.
        no_cuda_sync / cudagraph_policy: TorchRL's CUDA options, accepted with no effect here (see
            ``docs/differences.md``): they only apply to a policy running on a CUDA device.
        use_buffers: TorchRL's choice between writing steps into a preallocated buffer or stacking them;
            either way a batch holds the same data, and tdrl always stacks once per batch (so envs with
            dynamic specs work whatever the value).
        auto_register_policy_transforms: ``True`` appends to the env the transforms the policy needs and the
            env's specs lack (an ``InitTracker`` and the primers of its RNN submodules); ``False`` leaves the env
            alone; ``None`` (TorchRL 0.14's default) leaves it alone but warns (``FutureWarning``) when some are
            missing. A ``policy_factory`` is not inspected.
        trajs_per_batch: yield batches of this many *complete* trajectories (each row ends with
            ``("next", "done")``) instead of fixed-frame batches; episodes spanning several internal batches
            are reassembled and unfinished ones held back (``frames_per_batch`` then only sets how often the
            collector looks). With ``replay_buffer``, each complete trajectory is written to it flat (1-D, the
            layout ``SliceSampler`` expects) and the collector yields ``None``.
        trajs_per_write: with ``trajs_per_batch`` and ``replay_buffer``, trajectories per ``extend`` call
            (``None``: all those completed in a batch).
        traj_format: layout of ``trajs_per_batch`` batches: ``"padded"`` (``[trajs_per_batch, max_len]``,
            zero-padded, with a boolean ``("collector", "mask")`` of the valid steps) or ``"cat"`` (the
            trajectories concatenated along time, ``[sum T_i]``). ``None`` is ``"padded"`` with TorchRL's
            ``FutureWarning`` that its default becomes ``"cat"`` in 0.16.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = Collector(PendulumEnv(), frames_per_batch=10, total_frames=20)
        >>> [batch.shape for batch in collector]
        [torch.Size([10]), torch.Size([10])]
        >>> collector.shutdown()
        >>> whole = Collector(PendulumEnv(), frames_per_batch=100, total_frames=400, trajs_per_batch=2,
        ...                   max_frames_per_traj=50, traj_format="padded")
        >>> [batch.shape for batch in whole]
        [torch.Size([2, 50]), torch.Size([2, 50]), torch.Size([2, 50]), torch.Size([2, 50])]
        >>> whole.shutdown()
    """

    def __init__(
        self,
        create_env_fn: EnvBase | Callable[..., EnvBase],
        policy: Callable[[TensorDictBase], TensorDictBase] | torch.nn.Module | None = None,
        *,
        policy_factory: Callable[[], Callable] | None = None,
        frames_per_batch: int,
        total_frames: int = -1,
        device: Any = None,
        storing_device: Any = None,
        policy_device: Any = None,
        env_device: Any = None,
        create_env_kwargs: Mapping[str, Any] | None = None,
        max_frames_per_traj: int | None = None,
        init_random_frames: int | None = None,
        reset_at_each_iter: bool = False,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        split_trajs: bool | None = None,
        track_traj_ids: bool = True,
        exploration_type: ExplorationType = ExplorationType.RANDOM,
        return_same_td: bool = False,
        reset_when_done: bool = True,
        set_truncated: bool = False,
        replay_buffer: Any = None,
        extend_buffer: bool = True,
        trust_policy: bool | None = None,
        compile_policy: bool | Mapping[str, Any] | None = None,
        num_threads: int | None = None,
        weight_updater: WeightUpdaterBase | Callable[[], WeightUpdaterBase] | None = None,
        weight_sync_schemes: Mapping[str, WeightSyncScheme] | None = None,
        track_policy_version: bool = False,
        no_cuda_sync: bool = False,
        cudagraph_policy: bool | Mapping[str, Any] = False,
        use_buffers: bool | None = None,
        auto_register_policy_transforms: bool | None = None,
        trajs_per_batch: int | None = None,
        trajs_per_write: int | None = None,
        traj_format: Literal["padded", "cat"] | None = None,
    ) -> None:
        if use_buffers is not None and not isinstance(use_buffers, bool):
            raise TypeError(f"use_buffers must be a bool or None, got {use_buffers!r}")
        if policy is not None and policy_factory is not None:
            raise TypeError("pass either policy or policy_factory, not both")
        self._set_trajectory_options(trajs_per_batch, trajs_per_write, traj_format, replay_buffer is not None,
                                     bool(split_trajs), track_traj_ids)
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        env = _build_env(create_env_fn, create_env_kwargs, env_device if env_device is not None else device,
                         max_frames_per_traj)
        self.env = _policy_env_transforms(env, policy, auto_register_policy_transforms, type(self).__name__)
        self.max_frames_per_traj = max_frames_per_traj
        self.policy_device = _device_or_default(policy_device, device)
        self.storing_device = _device_or_default(storing_device, device)
        self._set_frames(frames_per_batch, total_frames, init_random_frames)
        self.reset_at_each_iter = reset_at_each_iter
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.track_traj_ids = track_traj_ids
        self.exploration_type = exploration_type
        self.return_same_td = return_same_td
        self.reset_when_done = reset_when_done
        self.set_truncated = set_truncated
        self.replay_buffer = replay_buffer
        self.extend_buffer = extend_buffer
        self._random_policy = RandomPolicy(env.full_action_spec)
        self.policy = self._build_policy(policy, policy_factory, bool(trust_policy), compile_policy)
        self._setup_weight_sync(weight_updater, weight_sync_schemes)
        self._setup_policy_version(track_policy_version)
        self.no_cuda_sync = no_cuda_sync
        self.cudagraph_policy = cudagraph_policy
        self.use_buffers = use_buffers
        self._carry: TensorDictBase | None = None
        self._outputs_template: TensorDictBase | None = None
        self._traj_ids: torch.Tensor | None = None
        self._next_traj_id = 0
        self._frames = 0
        self._iter = 0
        self._closed = False

    # ------------------------------------------------------------------ construction helpers
    def _set_trajectory_options(self, trajs_per_batch: int | None, trajs_per_write: int | None,
                                traj_format: Any, has_buffer: bool, split_trajs: bool, track_traj_ids: bool) -> None:
        self.traj_format = validate_traj_format(traj_format, trajs_per_batch, has_replay_buffer=has_buffer)
        if trajs_per_batch is not None and (split_trajs or not track_traj_ids):
            raise ValueError("trajs_per_batch regroups steps by ('collector', 'traj_ids'): it needs split_trajs=False "
                             f"and track_traj_ids=True, got split_trajs={split_trajs}, track_traj_ids={track_traj_ids}")
        self.trajs_per_batch, self.trajs_per_write = trajs_per_batch, trajs_per_write

    def _set_frames(self, frames_per_batch: int, total_frames: int, init_random_frames: int | None) -> None:
        if frames_per_batch is None or frames_per_batch <= 0:
            raise ValueError(f"frames_per_batch must be a positive int, got {frames_per_batch}")
        n_env = max(1, self.env.batch_size.numel())
        steps = -(-frames_per_batch // n_env)
        if steps * n_env != frames_per_batch:
            warnings.warn(
                f"frames_per_batch ({frames_per_batch}) is not divisible by the env batch numel ({n_env}); "
                f"each batch will hold {steps * n_env} frames",
                TDRLWarning,
                stacklevel=3,
            )
        self.frames_per_batch = steps
        self.requested_frames_per_batch = steps * n_env
        if total_frames is None or total_frames < 0:
            total_frames = -1
        elif total_frames % self.requested_frames_per_batch:
            warnings.warn(
                f"total_frames ({total_frames}) is not divisible by frames_per_batch "
                f"({self.requested_frames_per_batch}); the last batch overshoots it",
                TDRLWarning,
                stacklevel=3,
            )
        self.total_frames = total_frames
        init = init_random_frames or 0
        self.init_random_frames = -(-init // self.requested_frames_per_batch) * self.requested_frames_per_batch

    def _build_policy(
        self, policy: Any, policy_factory: Callable | None, trust_policy: bool, compile_policy: Any
    ) -> Callable[[TensorDictBase], TensorDictBase]:
        if policy_factory is not None:
            policy = policy_factory()
        if policy is None:
            return self._random_policy
        if isinstance(policy, RandomPolicy):
            policy.set_action_spec_from_env(self.env)
            return policy
        if self.policy_device is not None and isinstance(policy, torch.nn.Module):
            policy = policy.to(self.policy_device)
        self._raw_policy = policy  # the caller's module: its weights have the caller's keys
        if not trust_policy:
            policy = as_td_policy(self.env, policy)
            self._check_policy_keys(policy)
        if compile_policy:
            kwargs = dict(compile_policy) if isinstance(compile_policy, Mapping) else {}
            policy = torch.compile(policy, **kwargs)
        return policy

    def _check_policy_keys(self, policy: Any) -> None:
        if not isinstance(policy, TensorDictModuleBase):
            return
        available = _available_keys(self.env)
        missing = [key for key in policy.in_keys if key not in available]
        if missing:
            hint = ""
            if any("recurrent" in str(k) for k in missing):
                hint = (
                    " A recurrent policy needs its hidden-state primer on the env: "
                    "env.append_transform(policy.make_tensordict_primer())."
                )
            raise KeyError(
                f"the policy reads {missing}, which the env neither observes nor primes "
                f"(env keys: {sorted(map(str, available))}).{hint}"
            )

    # ------------------------------------------------------------------ collection
    def _reset(self) -> None:
        self._carry = self.env.reset()
        shape = self.env.batch_size
        n = max(1, shape.numel())
        # Fresh ids for every sub-env after a full reset: an id never spans two episodes (split_trajs relies on it).
        self._traj_ids = (torch.arange(n) + self._next_traj_id).reshape(shape)
        self._next_traj_id += n

    def reset(self, index: Any = None) -> None:
        """Resets the env(s) (all of them: ``index`` is accepted for TorchRL compatibility).

        With ``trajs_per_batch``, the trajectories being assembled and those not yet yielded are dropped, so
        later batches hold only steps taken after the reset.
        """
        if self._traj_assembler is not None:
            self._traj_assembler.clear()
        self._reset()

    def _update_traj_ids(self, data: TensorDictBase) -> None:
        done = data.get(("next", "done"), None)
        if done is None or self._traj_ids is None or not done.any():  # the common case: one check per step
            return
        mask = done.reshape(*self._traj_ids.shape, -1).any(-1) if done.ndim > self._traj_ids.ndim else done
        mask = mask.reshape(self._traj_ids.shape)
        n_new = int(mask.sum())
        if n_new:
            fresh = (mask.reshape(-1).cumsum(0) - 1 + self._next_traj_id).reshape(mask.shape)
            self._traj_ids = torch.where(mask, fresh, self._traj_ids)
            self._next_traj_id += n_new

    def rollout(self, *, interrupt: Callable[[], bool] | None = None) -> TensorDictBase:
        """Collects one batch (TorchRL's ``rollout``): ``frames_per_batch`` steps from the carried state.

        The loop is the rollout engine (:func:`tdrl.envs.rollout_engine.run_rollout`); the env state carries
        over to the next batch. The frames are not counted against ``total_frames`` (see
        :meth:`next_batch`).

        Args:
            interrupt: checked after each step; ``True`` ends the batch early (preemption).

        Returns:
            A ``[*env.batch_size, T]`` tensordict, last dim named ``"time"``.
        """
        if self._carry is None or self.reset_at_each_iter:
            self._reset()
        env = self.env
        random_phase = self._frames < self.init_random_frames
        policy = self._random_policy if random_phase else self.policy
        carry = self._carry
        ids: list[torch.Tensor] = []
        loop = RolloutLoop(
            max_steps=self.frames_per_batch,
            policy=policy,
            policy_device=self.policy_device,
            cast=self.policy_device is not None and self.policy_device != env.device,
            reset_when_done=self.reset_when_done,
            final_carry="maybe_reset" if self.reset_when_done else "step_mdp",
            # Random steps carry the policy's other outputs (log-probs, loc/scale...) as zeros, so every
            # batch has the same layout and a storage built from the first one accepts the rest.
            fill=self._policy_outputs_template(carry) if random_phase and policy is not self.policy else None,
            on_step=(lambda data: self._track_traj_ids(ids, data)) if self.track_traj_ids else None,
            interrupt=interrupt,
        )
        with set_exploration_type(self.exploration_type), torch.no_grad():
            batch, self._carry = run_rollout(env, carry, loop)
        if ids:  # set once per batch: a nested set per step costs more than the stack
            batch.set(_TRAJ_KEY, torch.stack(ids, env.batch_dims))
        self._stamp_policy_version(batch)
        if self.set_truncated:
            mark_last_truncated(batch, env.done_keys)
        if self.storing_device is not None and batch.device != self.storing_device:
            batch = batch.to(self.storing_device)
        batch.refine_names(*([None] * env.batch_dims), "time")
        return batch

    def _track_traj_ids(self, ids: list[torch.Tensor], data: TensorDictBase) -> None:
        ids.append(self._traj_ids)
        self._update_traj_ids(data)

    def next_batch(self, *, interrupt: Callable[[], bool] | None = None) -> TensorDictBase:
        """:meth:`rollout`, its frames counted against ``total_frames`` (the iterator's and workers' step)."""
        batch = self.rollout(interrupt=interrupt)
        self._frames += batch.numel()
        return batch

    def probe_batch(self) -> TensorDictBase:
        """A one-step batch showing the batch layout; the collector is left as new (next batch resets).

        Collector workers call it once to allocate their shared buffer.
        """
        probe = self.rollout(interrupt=lambda: True)
        self._carry = None  # the probe step is not data: the first real batch starts from a reset
        self._next_traj_id = 0
        return probe

    def _policy_outputs_template(self, td: TensorDictBase) -> TensorDictBase | None:
        """Zeros shaped like what the real policy adds to ``td`` (computed once, by calling it on a copy)."""
        if self._outputs_template is None:
            if self.policy is self._random_policy:
                self._outputs_template = td.empty()
            else:
                with set_exploration_type(self.exploration_type), torch.no_grad():
                    probe = apply_policy(self.env, td.clone(), self.policy, self.policy_device)
                added = [k for k in probe.keys(True, True) if k not in td.keys(True, True)]
                self._outputs_template = probe.select(*added).zero_() if added else td.empty()
        return self._outputs_template if not self._outputs_template.is_empty() else None

    def iterator(self) -> Iterator[TensorDictBase | None]:
        while self.total_frames < 0 or self._frames < self.total_frames:
            if self._closed:
                raise RuntimeError("the collector was shut down")
            batch = self.next_batch()
            self._iter += 1
            if self.split_trajs:
                batch = split_trajectories(batch, prefix="collector")
            if self.postproc is not None:
                batch = self.postproc(batch)
            if self.replay_buffer is not None and self.trajs_per_batch is None:  # else whole trajectories go in
                self.replay_buffer.extend(batch)
                yield None
            else:
                yield batch

    # ------------------------------------------------------------------ weights and state
    def _setup_weight_sync(self, weight_updater: Any, schemes: Mapping[str, WeightSyncScheme] | None) -> None:
        if weight_updater is not None and not isinstance(weight_updater, WeightUpdaterBase):
            weight_updater = weight_updater() if callable(weight_updater) else weight_updater
            if not isinstance(weight_updater, WeightUpdaterBase):
                raise TypeError(f"weight_updater must be a WeightUpdaterBase, got {type(weight_updater).__name__}")
        if weight_updater is not None:
            weight_updater.register_collector(self)
        self.weight_updater = weight_updater
        self.schemes = dict(schemes or {})
        for model_id, scheme in self.schemes.items():
            if model_id != "policy":
                raise KeyError(f"weight_sync_schemes: unknown model id {model_id!r}; the collector syncs 'policy'")
            # In one process the receiver is the collector's own policy: messages are applied on the spot.
            raw = getattr(self, "_raw_policy", self.policy)
            scheme.init_on_sender(model_id, model=None, senders=[scheme.receive], worker_weights=[policy_weights(raw)])
            scheme.init_on_receiver(model_id, model=raw, worker_idx=0)

    def update_policy_weights_(self, policy_or_weights: Any = None, *, worker_ids: Any = None, **kwargs: Any) -> None:
        """Loads new weights into the policy.

        Args:
            policy_or_weights: a module (its weights are copied), a ``TensorDict`` of parameters (as from
                ``TensorDict.from_module``), or a ``state_dict``. ``None`` does nothing: the collector's
                policy is the caller's object, so in-place updates are already visible.
            worker_ids: ignored (one worker).
            **kwargs: accepted for TorchRL compatibility (its weight-sync options), unused.
        """
        self._push_weights(policy_or_weights, worker_ids)
        self.increment_version()

    def _push_weights(self, policy_or_weights: Any, worker_ids: Any) -> None:
        if "policy" in self.schemes:
            if policy_or_weights is not None:
                self.schemes["policy"].send(policy_or_weights)
            return
        if self.weight_updater is not None:
            self.weight_updater.push_weights(policy_or_weights, worker_ids)
            return
        if policy_or_weights is None:
            return
        if not isinstance(self.policy, torch.nn.Module):
            raise TypeError(f"the collector's policy ({type(self.policy).__name__}) has no weights to update")
        if isinstance(policy_or_weights, torch.nn.Module):
            weights = TensorDict.from_module(policy_or_weights)
        elif isinstance(policy_or_weights, TensorDictBase):
            weights = policy_or_weights
        elif isinstance(policy_or_weights, Mapping):
            self.policy.load_state_dict(policy_or_weights)
            return
        else:
            raise TypeError(
                f"update_policy_weights_ takes a module, a TensorDict of weights or a state_dict, "
                f"got {type(policy_or_weights).__name__}"
            )
        current = TensorDict.from_module(self.policy)
        if set(weights.keys(True, True)) != set(current.keys(True, True)):
            raise KeyError(
                "the new weights do not match the policy's: missing "
                f"{sorted(map(str, set(current.keys(True, True)) - set(weights.keys(True, True))))}, unexpected "
                f"{sorted(map(str, set(weights.keys(True, True)) - set(current.keys(True, True))))}"
            )
        with torch.no_grad():
            current.update_(weights)

    def get_policy_weights(self) -> TensorDictBase | None:
        """The policy's parameters and buffers (``None`` for a policy without weights)."""
        return policy_weights(self.policy)

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        return self.env.set_seed(seed, static_seed=static_seed)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "frames": self._frames,
            "iter": self._iter,
            "next_traj_id": self._next_traj_id,
        }
        if self._policy_version is not None:
            state["policy_version"] = self._policy_version
        env_state = getattr(self.env, "state_dict", None)
        if callable(env_state):
            state["env_state_dict"] = env_state()
        if isinstance(self.policy, torch.nn.Module):
            state["policy_state_dict"] = self.policy.state_dict()
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self._frames = int(state_dict.get("frames", 0))
        self._iter = int(state_dict.get("iter", 0))
        self._next_traj_id = int(state_dict.get("next_traj_id", 0))
        if self._policy_version is not None and "policy_version" in state_dict:
            self._policy_version = int(state_dict["policy_version"])
        if "env_state_dict" in state_dict and hasattr(self.env, "load_state_dict"):
            self.env.load_state_dict(state_dict["env_state_dict"])
        if "policy_state_dict" in state_dict and isinstance(self.policy, torch.nn.Module):
            self.policy.load_state_dict(state_dict["policy_state_dict"])
        self._carry = None

    def shutdown(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if not self.env.is_closed:
            self.env.close()

    def __repr__(self) -> str:
        return (
            f"Collector(env={type(self.env).__name__}, frames_per_batch={self.requested_frames_per_batch}, "
            f"total_frames={self.total_frames}, frames={self._frames})"
        )
