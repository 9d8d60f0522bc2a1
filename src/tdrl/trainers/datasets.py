"""Datasets of offline runs: a replay buffer loaded from disk and checked against the env it is used with.

A dataset is any of:

- a folder written by :meth:`tdrl.data.ReplayBuffer.dumps`;
- a run folder of an off-policy run (``tdrl train algo=td3 ...``): its ``checkpoint.pt`` holds the run's
  replay buffer, i.e. every transition the run collected up to its buffer size (the classic "replay"
  dataset of offline RL benchmarks);
- a trainer checkpoint file (``checkpoint.pt``) of such a run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tensordict.utils import NestedKey

from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
from tdrl.envs import EnvBase
from tdrl.trainers.checkpoint import CheckpointError, load_checkpoint

__all__ = ["DatasetError", "check_dataset", "load_dataset", "transition_specs"]

_RUN_CHECKPOINT = "checkpoint.pt"


class DatasetError(ValueError):
    """A dataset cannot be read, or does not fit the env (the message names the key and what was expected)."""


def _buffer_state_from_checkpoint(file: Path) -> dict[str, Any]:
    state = load_checkpoint(file)
    hook_state = state.get("modules", {}).get("replay_buffer")
    if not hook_state or "replay_buffer" not in hook_state:
        raise DatasetError(
            f"{file} holds no replay buffer: only off-policy runs (algo=sac/td3/ddpg/dqn) store one in their checkpoint"
        )
    return hook_state["replay_buffer"]


def load_dataset(path: str | os.PathLike, *, batch_size: int, allow_pickle_unsafe: bool = False) -> TensorDictReplayBuffer:
    """A replay buffer holding the transitions at ``path`` (see the module docstring for what it may be).

    Nothing is unpickled: trainer checkpoints load with ``weights_only=True`` and buffer folders through
    :meth:`~tdrl.data.ReplayBuffer.loads`, which verifies every file's size and checksum first.

    Args:
        path: a ``ReplayBuffer.dumps`` folder, an off-policy run folder or its ``checkpoint.pt``.
        batch_size: the sample size of the returned buffer.
        allow_pickle_unsafe: passed to :meth:`~tdrl.data.ReplayBuffer.loads` (only for trusted folders).

    Raises:
        DatasetError: nothing readable at ``path`` (a corrupted or pickled file is named), or it holds no
            transitions.
    """
    source = Path(path)
    try:
        buffer = _load_buffer(source, batch_size, allow_pickle_unsafe)
    except CheckpointError as err:
        raise DatasetError(f"dataset.path={str(source)!r} cannot be loaded: {err}") from None
    buffer.batch_size = batch_size  # the loaded state carries the batch size of the run that wrote it
    if len(buffer) == 0:
        raise DatasetError(f"the dataset at {source} holds no transitions")
    return buffer


def _load_buffer(source: Path, batch_size: int, allow_pickle_unsafe: bool) -> TensorDictReplayBuffer:
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(1), batch_size=batch_size)
    if source.is_dir() and (source / _RUN_CHECKPOINT).exists() or source.is_file():
        file = source / _RUN_CHECKPOINT if source.is_dir() else source
        buffer.load_state_dict(_buffer_state_from_checkpoint(file))
    elif source.is_dir():
        try:
            buffer.loads(source, allow_pickle_unsafe=allow_pickle_unsafe)
        except FileNotFoundError as err:
            raise DatasetError(
                f"dataset.path={str(source)!r} is neither a run folder (no {_RUN_CHECKPOINT}) nor a folder written by "
                f"ReplayBuffer.dumps ({err})"
            ) from err
    else:
        raise DatasetError(f"dataset.path={str(source)!r} does not exist")
    return buffer


def transition_specs(env: EnvBase) -> dict[NestedKey, Any]:
    """What one stored transition of ``env`` holds: key -> unbatched spec (observations, action, next entries)."""
    specs: dict[NestedKey, Any] = {}
    obs_keys = list(env.observation_spec.keys(True, True))
    done_keys = list(env.full_done_spec.keys(True, True))
    for key in obs_keys:
        specs[key] = env.observation_spec[key]
        specs[_next(key)] = env.observation_spec[key]
    specs["action"] = env.action_spec
    for key in env.full_reward_spec.keys(True, True):
        specs[_next(key)] = env.full_reward_spec[key]
    for key in done_keys:
        specs[_next(key)] = env.full_done_spec[key]
    return specs


def _next(key: NestedKey) -> tuple[str, ...]:
    return ("next", *key) if isinstance(key, tuple) else ("next", key)


def check_dataset(buffer: Any, env: EnvBase, *, ignore: Iterable[NestedKey] = ()) -> None:
    """Checks that ``buffer`` holds every entry a transition of ``env`` has, with the spec's shape and dtype.

    Args:
        buffer: a replay buffer of flat transitions (storage batch ``[N]``).
        env: the env the offline policy will act in (its batch size is ignored).
        ignore: keys not to check (e.g. a ``RewardSum``'s ``"episode_reward"``, which learning never reads).

    Raises:
        DatasetError: naming the first missing or mismatching key, the expected shape/dtype and what was found.
    """
    data = buffer[:1]
    skipped = set(ignore)
    batch_dims = env.batch_size
    for key, spec in transition_specs(env).items():
        if key in skipped or (isinstance(key, tuple) and key[1:] and key[-1] in skipped):
            continue
        shape = spec.shape[len(batch_dims):]
        if key not in data.keys(True, True):
            present = sorted(str(k) for k in data.keys(True, True))
            raise DatasetError(f"the dataset has no entry {key!r}, which the env's transitions hold "
                               f"(expected shape {tuple(shape)}, dtype {spec.dtype}); dataset keys: {present}")
        value = data.get(key)
        if tuple(value.shape[1:]) != tuple(shape) or value.dtype != spec.dtype:
            raise DatasetError(
                f"dataset entry {key!r} does not match the env: expected shape {tuple(shape)} and dtype "
                f"{spec.dtype} per transition, found {tuple(value.shape[1:])} and {value.dtype} "
                "(was the dataset collected in another env?)"
            )
