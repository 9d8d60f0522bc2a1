"""Calling the value network on ``s_t`` and ``s_{t+1}`` for the value-estimator modules.

Two layouts, as in TorchRL:

* two streams (``shifted=False``): the network sees the root entries and the ``"next"`` entries. Without
  functional parameters both are stacked and evaluated in one call (the network is batch-agnostic).
* one shifted stream (``shifted=True``): a ``[..., T + budget, ...]`` sequence holding ``s_0 .. s_{T-1}``,
  the true next observation after every internal truncation (``done & ~terminated``) and after the last
  step. Later samples are shifted right; those whose next slot falls past ``T + budget`` are marked
  invalid (``"shifted_valid"``) and their outputs zeroed by the estimator.
"""

from __future__ import annotations

from typing import cast

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey

__all__ = ["ShiftedLayout", "call_split", "shifted_layout", "two_stream_inputs"]


def call_split(
    value_net: TensorDictModuleBase,
    data: TensorDictBase,
    value_key: NestedKey,
    *,
    chunk_size: int | None = None,
    num_chunks: int | None = None,
    chunk_dim: int = 0,
) -> torch.Tensor:
    """Runs ``value_net`` on ``data`` (optionally in chunks along ``chunk_dim``) and returns ``value_key``.

    Args:
        value_net: the value network.
        data: its input.
        value_key: the entry holding the value in the network's output.
        chunk_size: evaluate at most this many elements of ``chunk_dim`` per call.
        num_chunks: or split ``chunk_dim`` into this many calls.
        chunk_dim: the batch dimension to split along.

    Returns:
        the values.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> net = TensorDictModule(lambda x: x.sum(-1, keepdim=True), ["obs"], ["state_value"])
        >>> data = TensorDict({"obs": torch.ones(4, 3)}, [4])
        >>> call_split(net, data, "state_value", chunk_size=3).flatten()
        tensor([3., 3., 3., 3.])
    """
    if chunk_size is None and num_chunks is None:
        return value_net(data).get(value_key)
    if not -data.ndim <= chunk_dim < data.ndim:
        raise ValueError(f"value_chunk_dim={chunk_dim} is out of range for a {data.ndim}-dim input")
    chunk_dim %= data.ndim
    size = data.shape[chunk_dim]
    if num_chunks is not None:
        chunks = data.tensor_split(min(num_chunks, max(size, 1)), dim=chunk_dim)
    else:
        chunks = data.split(cast(int, chunk_size), dim=chunk_dim)  # not None: checked above
    if len(chunks) == 1:
        return value_net(data).get(value_key)
    return torch.cat([value_net(chunk).get(value_key) for chunk in chunks], dim=chunk_dim)


def two_stream_inputs(
    data: TensorDictBase, in_keys: list[NestedKey], value_key: NestedKey
) -> tuple[TensorDictBase, TensorDictBase]:
    """The value-network inputs at ``t`` (root) and ``t + 1`` (``"next"``).

    Missing ``"next"`` inputs are taken from the root; ``NaN`` next inputs (compact storage of absent
    next observations) are replaced by the root entries so that they do not poison the estimates; the
    ``"is_init"`` flag of the root is carried over so that recurrent networks restart at the right step.

    Args:
        data: the trajectory tensordict.
        in_keys: the value network's input keys.
        value_key: the value entry (kept when present, for ``skip_existing``).

    Returns:
        ``(root, next)`` tensordicts with the same batch size.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"obs": torch.zeros(2, 1), "next": {"obs": torch.ones(2, 1)}}, [2])
        >>> root, nxt = two_stream_inputs(data, ["obs"], "state_value")
        >>> nxt["obs"].flatten()
        tensor([1., 1.])
    """
    root = data.select(*in_keys, value_key, strict=False)
    nxt = data.get("next").select(*in_keys, value_key, strict=False)
    for key in in_keys:
        root_value = root.get(key, None)
        if root_value is None:
            continue
        next_value = nxt.get(key, None)
        if next_value is None:
            nxt.set(key, root_value)
        elif next_value.is_floating_point() and next_value.shape == root_value.shape:
            nxt.set(key, torch.where(torch.isnan(next_value), root_value, next_value))
    is_init = root.get("is_init", None)
    if is_init is not None and nxt.get("is_init", None) is not None:
        nxt.set("is_init", nxt.get("is_init") | is_init)
    return root, nxt


class ShiftedLayout:
    """Slots of the single shifted value-network call (see the module docstring).

    Args:
        done: ``("next", done)`` flags, shaped like the batch (trailing dims reduced with ``any``).
        terminated: ``("next", terminated)`` flags, same shape.
        time_dim: the time dimension of the batch.
        budget: number of extra slots beyond ``T``.

    Examples:
        >>> import torch
        >>> done = torch.tensor([[False, True, False, False]])
        >>> layout = ShiftedLayout(done, torch.zeros_like(done), time_dim=1, budget=1)
        >>> layout.root_slot, layout.valid
        (tensor([[0, 1, 3, 4]]), tensor([[ True,  True,  True, False]]))
    """

    def __init__(self, done: torch.Tensor, terminated: torch.Tensor, *, time_dim: int, budget: int) -> None:
        num_steps = done.shape[time_dim]
        reset = done & ~terminated
        reset.select(time_dim, num_steps - 1).fill_(False)
        resets = reset.long()
        shape = [1] * done.ndim
        shape[time_dim] = num_steps
        steps = torch.arange(num_steps, device=done.device).view(shape)
        self.time_dim = time_dim
        self.length = num_steps + budget
        self.root_slot = steps + torch.cumsum(resets, time_dim) - resets
        self.next_slot = self.root_slot + 1
        self.valid = self.next_slot < self.length
        self.root_valid = self.root_slot < self.length
        self.last_valid = self.valid & ~_next_along(self.valid, time_dim)
        self.next_insert = (reset & self.valid) | self.last_valid
        self.boundary_slot = num_steps + resets.sum(time_dim, keepdim=True)
        self.boundary_valid = self.boundary_slot < self.length

    def scatter(self, root: torch.Tensor, nxt: torch.Tensor | None) -> torch.Tensor:
        """Places one entry's root (and next) values in the ``T + budget`` sequence."""
        shape = list(root.shape)
        shape[self.time_dim] = self.length + 1  # + a sentinel slot for the masked-out writes
        out = root.new_zeros(shape)
        out = _scatter(out, self.root_slot, self.root_valid, root, self.time_dim, self.length)
        if nxt is not None:
            out = _scatter(out, self.next_slot, self.next_insert, nxt, self.time_dim, self.length)
            last = nxt.narrow(self.time_dim, nxt.shape[self.time_dim] - 1, 1)
            out = _scatter(out, self.boundary_slot, self.boundary_valid, last, self.time_dim, self.length)
        return out.narrow(self.time_dim, 0, self.length)

    def gather(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(V(s_t), V(s_{t+1}))`` read back from the values of the sequence."""
        return (
            _gather(values, self.root_slot.clamp_max(self.length - 1), self.time_dim),
            _gather(values, self.next_slot.clamp_max(self.length - 1), self.time_dim),
        )


def shifted_layout(
    data: TensorDictBase, done_key: NestedKey, terminated_key: NestedKey, *, time_dim: int, budget: int
) -> ShiftedLayout:
    """Builds the :class:`ShiftedLayout` of a trajectory tensordict.

    Args:
        data: the ``[*B, T]`` tensordict.
        done_key: the done key (under ``"next"``).
        terminated_key: the terminated key (under ``"next"``); defaults to done when absent.
        time_dim: the time dimension.
        budget: number of extra slots (``shifted_budget``).

    Returns:
        the layout.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"next": {"done": torch.zeros(1, 3, 1, dtype=torch.bool)}}, [1, 3])
        >>> shifted_layout(data, "done", "terminated", time_dim=1, budget=1).length
        4
    """
    done = data.get(("next", done_key))
    terminated = data.get(("next", terminated_key), done)
    flat = (*data.batch_size, -1)
    return ShiftedLayout(
        done.reshape(flat).any(-1), terminated.reshape(flat).any(-1), time_dim=time_dim, budget=budget
    )


def _next_along(mask: torch.Tensor, dim: int) -> torch.Tensor:
    tail = mask.narrow(dim, 1, mask.shape[dim] - 1)
    ones = torch.ones_like(mask.narrow(dim, 0, 1))
    return torch.cat([tail, ones], dim)


def _scatter(
    out: torch.Tensor, slot: torch.Tensor, mask: torch.Tensor, source: torch.Tensor, dim: int, sentinel: int
) -> torch.Tensor:
    index = torch.where(mask, slot, torch.full_like(slot, sentinel))
    while index.ndim < source.ndim:
        index = index.unsqueeze(-1)
    return out.scatter(dim, index.expand_as(source), source)


def _gather(values: torch.Tensor, slot: torch.Tensor, dim: int) -> torch.Tensor:
    index = slot
    while index.ndim < values.ndim:
        index = index.unsqueeze(-1)
    shape = list(values.shape)
    shape[dim] = slot.shape[dim]
    return values.gather(dim, index.expand(shape))
