"""``EnvCreator``: a picklable env factory (for worker processes) that can describe its env's specs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cloudpickle
import torch

from tdrl.data import Composite
from tdrl.envs.common import EnvBase

__all__ = ["EnvCreator", "EnvMetaData", "env_creator", "get_env_metadata"]


@dataclass
class EnvMetaData:
    """What a process needs to know about an env without building it: specs, batch size, device.

    Attributes:
        specs: ``Composite`` with ``input_spec`` and ``output_spec`` entries.
        batch_size: the env's batch size.
        device: the env's device.
        batch_locked: whether inputs must have the env's batch size.

    Examples:
        >>> from tdrl.envs import PendulumEnv, get_env_metadata
        >>> meta = get_env_metadata(PendulumEnv)
        >>> meta.batch_size, meta.batch_locked
        (torch.Size([]), False)
        >>> sorted(meta.specs["output_spec", "full_observation_spec"].keys())
        ['params', 'th', 'thdot']
    """

    specs: Composite
    batch_size: torch.Size
    device: torch.device | None
    batch_locked: bool

    def expand(self, *size: int) -> EnvMetaData:
        """Metadata of ``size`` copies of the env stacked in front (``(n, *batch_size)``)."""
        size_t = torch.Size(size)
        return EnvMetaData(
            specs=self.specs.expand(*size_t, *self.specs.shape),
            batch_size=torch.Size([*size_t, *self.batch_size]),
            device=self.device,
            batch_locked=self.batch_locked,
        )


def get_env_metadata(env_or_fn: EnvBase | Callable[..., EnvBase], kwargs: dict | None = None) -> EnvMetaData:
    """The ``EnvMetaData`` of an env (built with ``env_or_fn(**kwargs)`` and closed when a factory is given).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> get_env_metadata(PendulumEnv).specs["input_spec", "full_action_spec", "action"].shape
        torch.Size([1])
    """
    if isinstance(env_or_fn, EnvBase):
        env, owned = env_or_fn, False
    else:
        env, owned = env_or_fn(**(kwargs or {})), True
    try:
        return EnvMetaData(
            specs=env.specs.clone(),
            batch_size=env.batch_size,
            device=env.device,
            batch_locked=env.batch_locked,
        )
    finally:
        if owned:
            env.close()


class EnvCreator:
    """Wraps an env factory so that it pickles (with cloudpickle) and builds envs with fixed kwargs.

    Args:
        create_env_fn: callable returning an ``EnvBase``.
        create_env_kwargs: keyword arguments passed at each call.
        share_memory: kept for TorchRL compatibility (tdrl envs built by a creator hold no shared weights).
        **kwargs: merged into ``create_env_kwargs``.

    Examples:
        >>> import pickle
        >>> from tdrl.envs import PendulumEnv
        >>> creator = EnvCreator(lambda seed: PendulumEnv(seed=seed), create_env_kwargs={"seed": 0})
        >>> env = pickle.loads(pickle.dumps(creator))()
        >>> env.batch_size
        torch.Size([])
        >>> creator.meta_data.batch_size
        torch.Size([])
    """

    create_env_fn: Callable[..., EnvBase]
    create_env_kwargs: dict[str, Any]

    def __init__(
        self,
        create_env_fn: Callable[..., EnvBase],
        create_env_kwargs: dict | None = None,
        share_memory: bool = True,
        **kwargs: Any,
    ) -> None:
        if not callable(create_env_fn):
            raise TypeError(
                f"EnvCreator needs a callable returning an env, got {type(create_env_fn).__name__}"
            )
        if isinstance(create_env_fn, EnvCreator):
            create_env_kwargs = {**create_env_fn.create_env_kwargs, **(create_env_kwargs or {})}
            create_env_fn = create_env_fn.create_env_fn
        self.create_env_fn = create_env_fn
        self.create_env_kwargs = {**(create_env_kwargs or {}), **kwargs}
        self.share_memory = share_memory
        self._meta_data: EnvMetaData | None = None

    @property
    def meta_data(self) -> EnvMetaData:
        """Specs, batch size and device of the env (built once, then closed, on first access)."""
        if self._meta_data is None:
            self._meta_data = get_env_metadata(self.create_env_fn, self.create_env_kwargs)
        return self._meta_data

    def make_variant(self, **kwargs: Any) -> EnvCreator:
        """A creator with the same factory and ``kwargs`` overriding the stored ones."""
        return EnvCreator(
            self.create_env_fn, {**self.create_env_kwargs, **kwargs}, share_memory=self.share_memory
        )

    def __call__(self, **kwargs: Any) -> EnvBase:
        env = self.create_env_fn(**{**self.create_env_kwargs, **kwargs})
        if not isinstance(env, EnvBase):
            raise TypeError(f"EnvCreator: the factory returned {type(env).__name__}, not an EnvBase")
        return env

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["create_env_fn"] = cloudpickle.dumps(self.create_env_fn)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["create_env_fn"] = cloudpickle.loads(state["create_env_fn"])
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"EnvCreator({self.create_env_fn}, kwargs={self.create_env_kwargs})"


def env_creator(fn: Callable[..., EnvBase]) -> EnvCreator:
    """Wraps ``fn`` in an ``EnvCreator``.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env_creator(PendulumEnv)().batch_size
        torch.Size([])
    """
    return EnvCreator(fn)
