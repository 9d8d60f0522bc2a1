"""Configs for trainer hooks (group ``hook``), listed under a trainer's ``hooks`` field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from omegaconf import MISSING

from tdrl.trainers import LogScalar, RewardNormalizer
from tdrl.trainers.algorithms.configs.common import ConfigBase, normalize_key

__all__ = [
    "BatchSubSamplerConfig", "ClearCudaCacheConfig", "CountFramesLogConfig", "EarlyStoppingConfig", "HookConfig",
    "LogScalarConfig", "LogTimingConfig", "RewardNormalizerConfig", "SelectKeysConfig", "make_log_scalar",
    "make_reward_normalizer",
]


@dataclass
class HookConfig(ConfigBase):
    """Parent of hook configs.

    Examples:
        >>> isinstance(EarlyStoppingConfig(), HookConfig), HookConfig()._convert_
        (True, 'all')
    """

    _convert_: str = "all"


@dataclass
class ClearCudaCacheConfig(HookConfig):
    """:class:`~tdrl.trainers.ClearCudaCache`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> hook = instantiate(ClearCudaCacheConfig(interval=10))
        >>> type(hook).__name__, hook.interval
        ('ClearCudaCache', 10)
    """

    interval: int = MISSING
    _target_: str = "tdrl.trainers.ClearCudaCache"


@dataclass
class CountFramesLogConfig(HookConfig):
    """:class:`~tdrl.trainers.CountFramesLog`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> hook = instantiate(CountFramesLogConfig(frame_skip=4))
        >>> type(hook).__name__, hook.frame_skip
        ('CountFramesLog', 4)
    """

    frame_skip: int = 1
    log_pbar: bool = False
    _target_: str = "tdrl.trainers.CountFramesLog"


@dataclass
class EarlyStoppingConfig(HookConfig):
    """:class:`~tdrl.trainers.EarlyStopping`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> hook = instantiate(EarlyStoppingConfig(monitor="r_evaluation", patience=3))
        >>> type(hook).__name__, hook.patience
        ('EarlyStopping', 3)
    """

    monitor: str = "r_evaluation"
    mode: str = "max"
    min_delta: float = 0.0
    patience: int = 100_000
    wait_for: int = 1_000_000
    check_finite: bool = True
    _target_: str = "tdrl.trainers.EarlyStopping"


@dataclass
class LogScalarConfig(HookConfig):
    """:class:`~tdrl.trainers.LogScalar` (``key: [next, reward]`` is a nested key).

    Examples:
        >>> from hydra.utils import instantiate
        >>> instantiate(LogScalarConfig(logname="r")).key
        ('next', 'reward')
    """

    key: Any = field(default_factory=lambda: ["next", "reward"])
    logname: str | None = None
    log_pbar: bool = False
    include_std: bool = True
    reduction: str = "mean"
    _target_: str = "tdrl.trainers.algorithms.configs.hooks.make_log_scalar"


def make_log_scalar(
    key: Any = ("next", "reward"),
    logname: str | None = None,
    log_pbar: bool = False,
    include_std: bool = True,
    reduction: Literal["mean", "sum", "min", "max"] = "mean",
) -> LogScalar:
    """Builds a :class:`~tdrl.trainers.LogScalar` with ``key`` read as a nested key.

    Examples:
        >>> make_log_scalar(["next", "done"]).key
        ('next', 'done')
    """
    return LogScalar(normalize_key(key), logname, log_pbar, include_std, reduction)


@dataclass
class LogTimingConfig(HookConfig):
    """:class:`~tdrl.trainers.LogTiming`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> hook = instantiate(LogTimingConfig(prefix="t"))
        >>> type(hook).__name__, hook.prefix
        ('LogTiming', 't')
    """

    prefix: str = "time"
    percall: bool = True
    erase: bool = False
    _target_: str = "tdrl.trainers.LogTiming"


@dataclass
class SelectKeysConfig(HookConfig):
    """:class:`~tdrl.trainers.SelectKeys`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> hook = instantiate(SelectKeysConfig(keys=["observation"]))
        >>> list(hook(TensorDict(observation=torch.zeros(1), pixels=torch.zeros(1))).keys())
        ['observation']
    """

    keys: Any = field(default_factory=list)
    _target_: str = "tdrl.trainers.SelectKeys"


@dataclass
class RewardNormalizerConfig(HookConfig):
    """:class:`~tdrl.trainers.RewardNormalizer`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> hook = instantiate(RewardNormalizerConfig(decay=0.9, reward_key=["next", "reward"]))
        >>> type(hook).__name__, hook.reward_key
        ('RewardNormalizer', ('next', 'reward'))
    """

    decay: float = 0.999
    scale: float = 1.0
    eps: float | None = None
    log_pbar: bool = False
    reward_key: Any = None
    _target_: str = "tdrl.trainers.algorithms.configs.hooks.make_reward_normalizer"


def make_reward_normalizer(
    decay: float = 0.999, scale: float = 1.0, eps: float | None = None, log_pbar: bool = False, reward_key: Any = None
) -> RewardNormalizer:
    """Builds a :class:`~tdrl.trainers.RewardNormalizer` with ``reward_key`` read as a nested key.

    Examples:
        >>> make_reward_normalizer(reward_key=["next", "reward"]).reward_key
        ('next', 'reward')
    """
    return RewardNormalizer(decay, scale, eps, log_pbar, normalize_key(reward_key))


@dataclass
class BatchSubSamplerConfig(HookConfig):
    """:class:`~tdrl.trainers.BatchSubSampler`.

    Examples:
        >>> from hydra.utils import instantiate
        >>> import torch
        >>> from tensordict import TensorDict
        >>> hook = instantiate(BatchSubSamplerConfig(batch_size=4))
        >>> hook(TensorDict(observation=torch.arange(10.0), batch_size=[10])).batch_size
        torch.Size([4])
    """

    batch_size: int = MISSING
    sub_traj_len: int = 0
    min_sub_traj_len: int = 0
    _target_: str = "tdrl.trainers.BatchSubSampler"
