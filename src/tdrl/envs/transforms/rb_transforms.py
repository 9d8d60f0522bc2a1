"""Replay-buffer write transforms: ``MultiStepTransform`` (n-step returns across ``extend`` calls)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.postprocs import MultiStep
from tdrl.envs.transforms._base import Transform

__all__ = ["MultiStepTransform"]

_ENV_ERR = ("MultiStepTransform only acts on data written to a replay buffer (ReplayBuffer(transform=...)); "
            "it cannot be used inside an environment")


class MultiStepTransform(Transform):
    r"""Writes n-step returns into a replay buffer, across successive ``extend`` calls.

    Each written batch ``[*batch, T]`` is appended to the last ``n_steps`` steps of the previous one (kept
    by the transform), rewritten as :class:`~tdrl.data.MultiStep` does (``("next", "reward")`` becomes
    :math:`\sum_{i<k_t} \gamma^i r_{t+i}`, the other ``"next"`` entries come from step :math:`t+k_t-1`,
    and ``"steps_to_next_obs"``, ``"gamma"``, ``"nonterminal"`` and ``("next", "original_reward")`` are
    added), and the last ``n_steps`` steps are held back until the next call, when their look-ahead is
    known. A first batch of at most ``n_steps`` steps writes nothing. The time dim is the last batch dim.

    Args:
        n_steps: the look-ahead (>= 1); may be changed between calls.
        gamma: the discount.
        reward_keys: the ``"next"`` reward entries (default ``["reward"]``).
        done_key: the ``"next"`` entry that ends a trajectory (default ``"done"``).
        done_keys: the ``"next"`` done entries left unshifted (default done, terminated, truncated).
        mask_key: an optional validity mask (default ``"mask"``), and-ed into ``"nonterminal"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(20), transform=MultiStepTransform(2, gamma=0.5))
        >>> def chunk(start):
        ...     return TensorDict({("next", "reward"): torch.ones(4, 1), ("next", "done"): torch.zeros(4, 1, dtype=torch.bool),
        ...                        ("next", "obs"): torch.arange(start + 1.0, start + 5.0).unsqueeze(-1)}, [4])
        >>> _ = rb.extend(chunk(0)); len(rb)
        2
        >>> _ = rb.extend(chunk(4)); len(rb), rb[:]["next", "reward"].flatten().tolist()
        (6, [1.5, 1.5, 1.5, 1.5, 1.5, 1.5])
    """

    def __init__(self, n_steps: int, gamma: float, *, reward_keys: Sequence[NestedKey] | None = None,
                 done_key: NestedKey | None = None, done_keys: Sequence[NestedKey] | None = None,
                 mask_key: NestedKey | None = None) -> None:
        super().__init__()
        self.gamma = gamma
        self.n_steps = n_steps
        self.reward_keys = ["reward"] if reward_keys is None else list(reward_keys)
        self.done_key = "done" if done_key is None else done_key
        self.done_keys = ["done", "terminated", "truncated"] if done_keys is None else list(done_keys)
        self.mask_key = "mask" if mask_key is None else mask_key
        self._buffer: TensorDictBase | None = None

    @property
    def n_steps(self) -> int:
        """The look-ahead window (can be changed during training)."""
        return self._n_steps

    @n_steps.setter
    def n_steps(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"MultiStepTransform: n_steps must be a strictly positive integer, got {value!r}")
        self._n_steps = value

    def _multistep(self) -> MultiStep:
        op = MultiStep(gamma=self.gamma, n_steps=self.n_steps)
        op.reward_keys = tuple(self.reward_keys)
        op.done_key, op.done_keys, op.mask_key = self.done_key, tuple(self.done_keys), self.mask_key
        return op

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        if not tensordict.batch_dims:
            raise ValueError("MultiStepTransform: written data needs a time dim (the last batch dim), got "
                             "batch size []")
        if self._buffer is None:
            total = tensordict
        else:
            if self._buffer.batch_size[:-1] != tensordict.batch_size[:-1]:
                raise ValueError(
                    f"MultiStepTransform: batch size {tuple(tensordict.batch_size)} does not continue the previous "
                    f"write's {tuple(self._buffer.batch_size)} (the leading dims must match)"
                )
            total = torch.cat([self._buffer, tensordict], -1)
        self._buffer = total[..., -self.n_steps:].copy()
        if total.shape[-1] <= self.n_steps:
            return None
        return self._multistep()(total)[..., : -self.n_steps]

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        """Returns the n-step rewritten steps ready to be written, or None when none are yet."""
        return self._inv_call(tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError(_ENV_ERR)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        raise ValueError(_ENV_ERR)

    def __repr__(self) -> str:
        return f"MultiStepTransform(n_steps={self.n_steps}, gamma={self.gamma})"
