"""``BatchSizeTransform``: gives an env a new batch size (an expansion of a stateless env, or a reshape)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.envs.transforms._base import Transform

__all__ = ["BatchSizeTransform"]


class BatchSizeTransform(Transform):
    """Changes the batch size of the env it is attached to.

    With ``batch_size``, the base env's specs and reset output are expanded to the new shape: the use is a
    non-batch-locked (stateless) env, stepped with any leading shape, made to run ``batch_size`` copies
    (e.g. inside a collector). With ``reshape_fn`` (a ``reshape``, ``flatten``, ``unflatten``, ``squeeze``
    or ``unsqueeze`` applied to tensordicts and specs alike), the env's outputs are reshaped and its inputs
    reshaped back to the base env's batch size before each step.

    Keyword Args:
        batch_size: the new batch size (the base env's must expand to it). Exclusive with ``reshape_fn``.
        reshape_fn: maps a tensordict (and a spec) of the base batch size to the new one.
        reset_func: ``reset_func(tensordict, tensordict_reset)`` builds the reset output from the reset
            input and the base env's reset output (with ``env=`` the transformed env if ``env_kwarg``).
        env_kwarg: pass ``env=`` to ``reset_func``.

    Examples:
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), BatchSizeTransform(reshape_fn=lambda x: x.unsqueeze(-1)))
        >>> env.batch_size, env.rollout(3).shape
        (torch.Size([1]), torch.Size([1, 3]))
    """

    def __init__(
        self,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        reshape_fn: Callable[[Any], Any] | None = None,
        reset_func: Callable[..., TensorDictBase] | None = None,
        env_kwarg: bool = False,
    ) -> None:
        if (batch_size is None) == (reshape_fn is None):
            raise ValueError("BatchSizeTransform: give exactly one of batch_size and reshape_fn")
        if reshape_fn is not None and not callable(reshape_fn):
            raise TypeError(f"BatchSizeTransform: reshape_fn must be callable, got {type(reshape_fn).__name__}")
        if reset_func is not None and not callable(reset_func):
            raise TypeError(f"BatchSizeTransform: reset_func must be callable, got {type(reset_func).__name__}")
        super().__init__()
        self.batch_size = None if batch_size is None else torch.Size(batch_size)
        self.reshape_fn = reshape_fn
        self.reset_func = reset_func
        self.env_kwarg = env_kwarg

    def _reshape(self, data: Any) -> Any:
        if self.batch_size is not None:
            return data.expand(self.batch_size)
        return self.reshape_fn(data)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.reset_func is not None:
            if self.env_kwarg:
                tensordict_reset = self.reset_func(tensordict, tensordict_reset, env=self.container)
            else:
                tensordict_reset = self.reset_func(tensordict, tensordict_reset)
        if self.batch_size is not None and tensordict_reset.batch_size == self.batch_size:
            return tensordict_reset  # reset_func built it at the new size
        return self._reshape(tensordict_reset)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.reshape_fn is not None:
            return self.reshape_fn(next_tensordict)
        return next_tensordict  # a stateless env steps at the input's shape already

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.reshape_fn is not None:
            parent = self.parent
            if parent is not None:
                return tensordict.reshape(parent.batch_size)
        return tensordict

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """The env's batch size after this transform, from the one before it."""
        if self.batch_size is not None:
            return self.batch_size
        return self.reshape_fn(torch.zeros(batch_size, device="meta")).shape

    def transform_output_spec(self, output_spec: Any) -> Any:
        return self._reshape(output_spec)

    def transform_input_spec(self, input_spec: Any) -> Any:
        return self._reshape(input_spec)
