"""Configs for batched and transformed environments (groups ``env``: ``batched_env``, ``transformed_env``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from omegaconf import MISSING, DictConfig

from tdrl.envs import EnvBase, ParallelEnv, SerialEnv, TransformedEnv
from tdrl.trainers.algorithms.configs.common import ConfigBase, build
from tdrl.trainers.algorithms.configs.envs_libs import make_gym_env

__all__ = ["BatchedEnvConfig", "EnvConfig", "TransformedEnvConfig", "make_batched_env", "make_transformed_env"]


@dataclass
class EnvConfig(ConfigBase):
    """Parent of environment configs.

    Examples:
        >>> isinstance(TransformedEnvConfig(), EnvConfig), EnvConfig()._partial_
        (True, False)
    """

    _partial_: bool = False


@dataclass
class BatchedEnvConfig(EnvConfig):
    """A :class:`~tdrl.envs.ParallelEnv` or :class:`~tdrl.envs.SerialEnv` of ``num_workers`` copies of ``create_env_fn``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> cfg = BatchedEnvConfig(create_env_fn=GymEnvConfig(env_name="CartPole-v1", _partial_=True),
        ...                        num_workers=2, batched_env_type="serial")
        >>> env = instantiate(cfg)
        >>> env.batch_size
        torch.Size([2])
        >>> env.close()
    """

    create_env_fn: Any = MISSING
    num_workers: int = 1
    create_env_kwargs: dict = field(default_factory=dict)
    batched_env_type: str = "parallel"
    device: str | None = None
    _target_: str = "tdrl.trainers.algorithms.configs.envs.make_batched_env"

    def __post_init__(self) -> None:
        # Each worker builds its own env: a nested env config must stay a factory.
        if hasattr(self.create_env_fn, "_partial_"):
            self.create_env_fn._partial_ = True


def make_batched_env(
    create_env_fn: Any,
    num_workers: int = 1,
    create_env_kwargs: dict | None = None,
    batched_env_type: Literal["parallel", "serial"] = "parallel",
    device: str | None = None,
) -> EnvBase:
    """Builds a batched env; an env instance (a non-partial config) is shared, so it needs ``serial``.

    Examples:
        >>> import functools
        >>> from tdrl.envs import GymEnv
        >>> env = make_batched_env(functools.partial(GymEnv, "CartPole-v1"), 2, batched_env_type="serial")
        >>> env.batch_size
        torch.Size([2])
        >>> env.close()
    """
    if batched_env_type not in ("parallel", "serial"):
        raise ValueError(f"batched_env_type must be 'parallel' or 'serial', got {batched_env_type!r}")
    if isinstance(create_env_fn, EnvBase):
        if num_workers > 1:
            raise ValueError(
                "create_env_fn is an environment instance, which cannot be copied into several workers: "
                "set `_partial_: true` on its config"
            )
        instance = create_env_fn

        def create_env_fn() -> EnvBase:
            return instance

    if not callable(create_env_fn):
        raise TypeError(f"create_env_fn must be callable or an env, got {type(create_env_fn).__name__}")
    cls = ParallelEnv if batched_env_type == "parallel" else SerialEnv
    kwargs: dict[str, Any] = {"create_env_kwargs": dict(create_env_kwargs) if create_env_kwargs else None}
    if device is not None:
        kwargs["device"] = device
    return cls(num_workers, create_env_fn, **kwargs)


@dataclass
class TransformedEnvConfig(EnvConfig):
    """A :class:`~tdrl.envs.TransformedEnv` of ``base_env`` (an env or env config) and ``transform``.

    Examples:
        >>> from hydra.utils import instantiate
        >>> from tdrl.trainers.algorithms.configs.envs_libs import GymEnvConfig
        >>> from tdrl.trainers.algorithms.configs.transforms import StepCounterConfig
        >>> env = instantiate(TransformedEnvConfig(base_env=GymEnvConfig(env_name="CartPole-v1"),
        ...                                        transform=StepCounterConfig(max_steps=5)))
        >>> env.rollout(10).shape
        torch.Size([5])
    """

    base_env: Any = MISSING
    transform: Any = None
    cache_specs: bool = True
    auto_unwrap: bool | None = None
    _target_: str = "tdrl.trainers.algorithms.configs.envs.make_transformed_env"


def make_transformed_env(
    base_env: Any,
    transform: Any = None,
    cache_specs: bool = True,
    auto_unwrap: bool | None = None,
) -> TransformedEnv:
    """Wraps ``base_env`` (an env, or a factory of one) in ``transform``.

    A ``base_env`` mapping without ``_target_`` that sets ``env_name`` (as TorchRL's
    ``config_with_transforms.yaml`` writes it) is a gymnasium env: :func:`make_gym_env` with those fields.

    Examples:
        >>> from tdrl.envs import GymEnv, StepCounter
        >>> make_transformed_env(GymEnv("CartPole-v1"), StepCounter()).transform
        StepCounter(...)
    """
    if isinstance(base_env, (Mapping, DictConfig)) and "_target_" not in base_env:
        if "env_name" not in base_env:
            raise ValueError(
                f"training_env.base_env has no _target_ and no env_name (keys: {sorted(base_env)}): pick an env "
                "config (env@...base_env: gym) or give env_name"
            )
        base_env = make_gym_env(**{str(k): v for k, v in base_env.items() if k != "_partial_"})
    env = base_env() if callable(base_env) and not isinstance(base_env, EnvBase) else build(base_env)
    return TransformedEnv(env, transform, cache_specs, auto_unwrap=auto_unwrap)

