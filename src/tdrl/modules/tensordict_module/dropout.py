"""Consistent dropout: the dropout mask drawn during the rollout is stored and reused by the update.

With plain dropout, the policy that acted and the policy scored in the loss use different masks, which biases
on-policy ratios (PPO). Here the mask travels in the tensordict (Hausknecht & Wagener, 2022,
https://arxiv.org/abs/2202.11818).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, dispatch
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data import Unbounded
from tdrl.envs.transforms import TensorDictPrimer

__all__ = ["ConsistentDropout", "ConsistentDropoutModule"]


class ConsistentDropout(nn.Module):
    """Dropout that returns (and accepts) its mask: ``(x * mask, mask)`` in training mode, ``x`` in eval mode.

    The mask already carries the ``1 / (1 - p)`` scaling.

    Args:
        p: drop probability. Defaults to ``0.5``.

    Examples:
        >>> import torch
        >>> drop = ConsistentDropout(0.5)
        >>> y, mask = drop(torch.ones(4, 3))
        >>> torch.equal(drop(torch.ones(4, 3), mask=mask)[0], y)
        True
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"ConsistentDropout: p must be in [0, 1), got {p}.")
        self.p = p

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if not self.training:
            return x
        if mask is None:
            mask = self.make_mask(input=x)
        return x * mask, mask

    def make_mask(self, *, input: torch.Tensor | None = None, shape: torch.Size | None = None) -> torch.Tensor:
        """Draws a scaled Bernoulli mask like ``input`` or of ``shape``.

        Args:
            input: a tensor whose shape, dtype and device the mask takes.
            shape: the mask shape (default dtype and device).

        Returns:
            The mask.
        """
        if input is None and shape is None:
            raise ValueError("ConsistentDropout.make_mask needs input= or shape=.")
        ones = torch.ones_like(input) if input is not None else torch.ones(shape)
        return F.dropout(ones, self.p, training=True)


class ConsistentDropoutModule(TensorDictModuleBase):
    """TensorDict wrapper of :class:`ConsistentDropout`: reads ``[x, mask]`` and writes ``[x_out, mask]``.

    A missing mask is drawn and written; a present one is reused. In eval mode the input passes through.

    Args:
        p: drop probability.
        in_keys: the input key (the mask key ``f"mask_{id(self)}"`` is appended) or ``[input, mask]``.
        out_keys: output keys (default: ``in_keys``).
        input_shape: shape of the masked input, needed by :meth:`make_tensordict_primer`.
        input_dtype: its dtype (default: the default dtype).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> mod = ConsistentDropoutModule(0.5, in_keys=["x", "mask"])
        >>> td = mod(TensorDict(x=torch.ones(4, 3), batch_size=[4]))
        >>> again = mod(TensorDict(x=torch.ones(4, 3), mask=td["mask"], batch_size=[4]))
        >>> torch.equal(again["x"], td["x"])
        True
    """

    def __init__(
        self,
        p: float,
        in_keys: NestedKey | list[NestedKey],
        out_keys: NestedKey | list[NestedKey] | None = None,
        input_shape: torch.Size | None = None,
        input_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if isinstance(in_keys, (str, tuple)):
            in_keys = [in_keys, f"mask_{id(self)}"]
        if out_keys is None:
            out_keys = list(in_keys)
        elif isinstance(out_keys, (str, tuple)):
            out_keys = [out_keys, f"mask_{id(self)}"]
        if len(in_keys) != 2 or len(out_keys) != 2:
            raise ValueError(f"ConsistentDropoutModule needs two in_keys and out_keys ([value, mask]); got "
                             f"{in_keys} and {out_keys}.")
        self.in_keys = list(in_keys)
        self.out_keys = list(out_keys)
        self.input_shape = input_shape
        self.input_dtype = input_dtype
        self.consistent_dropout = ConsistentDropout(p)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        x = tensordict.get(self.in_keys[0])
        if not self.consistent_dropout.training:
            tensordict.set(self.out_keys[0], x)
            return tensordict
        x, mask = self.consistent_dropout(x, mask=tensordict.get(self.in_keys[1], None))
        tensordict.set(self.out_keys[0], x)
        tensordict.set(self.out_keys[1], mask)
        return tensordict

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """Returns a primer that draws a fresh mask at every env reset.

        Returns:
            A ``TensorDictPrimer`` for the mask key.
        """
        if self.input_shape is None:
            raise RuntimeError("ConsistentDropoutModule.make_tensordict_primer needs input_shape= at construction.")
        dtype = self.input_dtype or torch.get_default_dtype()
        return TensorDictPrimer(
            primers={self.in_keys[1]: Unbounded(shape=self.input_shape, dtype=dtype)},
            default_value=functools.partial(self.consistent_dropout.make_mask, shape=self.input_shape),
            expand_specs=False,
        )
