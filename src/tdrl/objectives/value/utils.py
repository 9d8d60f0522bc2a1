"""Input checks and layout helpers shared by the functional value estimators.

The estimators take ``[*B, T, *F]`` tensors with time at ``time_dim``; internally they work with time on
the last dimension, which makes every step of a recurrence a cheap slice. These helpers check the inputs
once, up front, and move time there and back.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = [
    "check_done",
    "check_time_dim",
    "coefficient",
    "not_mask",
    "from_time_last",
    "prepare_inputs",
    "TimeLastInputs",
    "same_shape",
    "standardize",
    "time_last_flags",
    "to_time_last",
]


def same_shape(fn: str, **tensors: torch.Tensor | None) -> torch.Size:
    """Checks that all the given tensors (``None`` skipped) share one shape and returns it.

    Args:
        fn: name of the calling function, used in the error message.
        **tensors: the tensors to check, by argument name.

    Returns:
        the common shape.

    Raises:
        RuntimeError: listing every argument with its shape when they differ (TorchRL raises
            ``RuntimeError`` here too).

    Examples:
        >>> import torch
        >>> same_shape("f", reward=torch.zeros(2, 3, 1), done=torch.zeros(2, 3, 1, dtype=torch.bool))
        torch.Size([2, 3, 1])
    """
    shape = None
    for value in tensors.values():
        if value is None:
            continue
        if not isinstance(value, torch.Tensor):
            bad = {k: type(v).__name__ for k, v in tensors.items() if not isinstance(v, torch.Tensor)}
            raise TypeError(f"{fn}: expected tensors, got {bad}")
        if shape is None:
            shape = value.shape
        elif value.shape != shape:
            shapes = ", ".join(f"{k}={tuple(v.shape)}" for k, v in tensors.items() if v is not None)
            raise RuntimeError(
                f"{fn}: all inputs must share one shape [*batch, time, *feature], got {shapes}"
            )
    if shape is None:
        raise ValueError(f"{fn}: no tensor given")
    return shape


def check_done(fn: str, **flags: torch.Tensor | None) -> None:
    """Checks that the done/terminated flags are boolean tensors.

    Args:
        fn: name of the calling function, used in the error message.
        **flags: the flags, by argument name (``None`` skipped).

    Examples:
        >>> import torch
        >>> check_done("f", done=torch.zeros(3, 1, dtype=torch.bool))
    """
    for name, flag in flags.items():
        if flag is not None and flag.dtype != torch.bool:
            raise TypeError(f"{fn}: {name} must be a torch.bool tensor, got dtype {flag.dtype}")


def check_time_dim(fn: str, time_dim: int, shape: torch.Size) -> int:
    """Returns ``time_dim`` as a non-negative index into ``shape``.

    Args:
        fn: name of the calling function, used in the error message.
        time_dim: the time dimension, negative values count from the end.
        shape: the shape of the inputs.

    Returns:
        the non-negative time dimension.

    Examples:
        >>> import torch
        >>> check_time_dim("f", -2, torch.Size([4, 10, 1]))
        1
    """
    ndim = len(shape)
    if not isinstance(time_dim, int) or not -ndim <= time_dim < ndim:
        raise ValueError(f"{fn}: time_dim={time_dim!r} is not a dimension of inputs of shape {tuple(shape)}")
    return time_dim % ndim


def to_time_last(tensor: torch.Tensor, time_dim: int) -> torch.Tensor:
    """Moves ``time_dim`` to the last dimension (a view).

    Args:
        tensor: the input.
        time_dim: its (non-negative) time dimension.

    Returns:
        a view with time last.

    Examples:
        >>> import torch
        >>> to_time_last(torch.zeros(4, 10, 1), 1).shape
        torch.Size([4, 1, 10])
    """
    return tensor.movedim(time_dim, -1)


def from_time_last(tensor: torch.Tensor, time_dim: int) -> torch.Tensor:
    """Inverse of :func:`to_time_last`.

    Args:
        tensor: a tensor with time last.
        time_dim: the (non-negative) time dimension to put it back to.

    Returns:
        a view with time at ``time_dim``.

    Examples:
        >>> import torch
        >>> from_time_last(torch.zeros(4, 1, 10), 1).shape
        torch.Size([4, 10, 1])
    """
    return tensor.movedim(-1, time_dim)


def coefficient(
    fn: str, name: str, value: float | torch.Tensor, shape: torch.Size, time_dim: int, like: torch.Tensor
) -> float | torch.Tensor:
    """Normalizes a discount-like argument (``gamma``, ``lmbda``, thresholds).

    Args:
        fn: name of the calling function, used in the error message.
        name: name of the argument, used in the error message.
        value: a Python number, a one-element tensor or a tensor broadcastable to ``shape``
            (per-element values, e.g. one ``gamma`` per step).
        shape: the shape of the inputs, time at ``time_dim``.
        time_dim: the (non-negative) time dimension.
        like: an input tensor; tensor coefficients are moved to its device and dtype.

    Returns:
        a float, a 0-d tensor, or a tensor of the inputs' shape with time last.

    Examples:
        >>> import torch
        >>> coefficient("f", "gamma", 0.9, torch.Size([2, 3, 1]), 1, torch.zeros(()))
        0.9
        >>> coefficient("f", "gamma", torch.full((2, 3, 1), 0.9), torch.Size([2, 3, 1]), 1, torch.zeros(())).shape
        torch.Size([2, 1, 3])
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, torch.Tensor)):
        raise TypeError(f"{fn}: {name} must be a number or a tensor, got {type(value).__name__}")
    if not isinstance(value, torch.Tensor):
        return float(value)
    value = value.to(device=like.device, dtype=like.dtype)
    if value.numel() == 1:
        return value.reshape(())
    try:
        broadcast = torch.broadcast_shapes(value.shape, shape)
    except RuntimeError:
        broadcast = None
    if broadcast != shape:
        raise ValueError(
            f"{fn}: {name} must be a scalar or broadcastable to the inputs' shape {tuple(shape)}, "
            f"got shape {tuple(value.shape)}"
        )
    return to_time_last(value.expand(shape), time_dim)


def not_mask(mask: torch.Tensor, like: torch.Tensor | None = None) -> torch.Tensor:
    """``1 - mask`` as a tensor of ``like``'s dtype (``1.0`` where ``mask`` is ``False``).

    Multiplying by such a float mask is much cheaper on CPU than ``torch.where`` or ``masked_fill``
    with a bool mask, and bool -> float casts are several times slower than uint8 -> float ones, hence
    the reinterpretation of the (one-byte) bools as uint8. Without ``like`` the uint8 mask itself is
    returned, to be used as a factor of a float operation (it is promoted on the fly, no float copy).

    Args:
        mask: a boolean tensor.
        like: gives the dtype of the result.

    Returns:
        the mask, shaped like ``mask``.

    Examples:
        >>> import torch
        >>> not_mask(torch.tensor([True, False]), torch.zeros((), dtype=torch.float64))
        tensor([0., 1.], dtype=torch.float64)
    """
    inverted = ~mask
    if not torch.compiler.is_compiling():
        inverted = inverted.view(torch.uint8)
    return inverted if like is None else inverted.to(like.dtype)


def time_last_flags(
    fn: str, done: torch.Tensor, terminated: torch.Tensor | None, time_dim: int, like: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Checks the flags and returns ``(1 - done | terminated, 1 - terminated)`` time-last, as floats.

    Args:
        fn: name of the calling function, used in error messages.
        done: boolean done flags, time at ``time_dim``.
        terminated: boolean terminal flags or ``None`` (then ``done`` is used).
        time_dim: the (non-negative) time dimension.
        like: gives the dtype of the masks.

    Returns:
        ``(not_done, not_terminated)`` with time last, of ``like``'s dtype.

    Examples:
        >>> import torch
        >>> done = torch.tensor([False, True]).view(2, 1)
        >>> not_done, not_term = time_last_flags("f", done, None, 0, torch.zeros(()))
        >>> not_done
        tensor([[1., 0.]])
    """
    check_done(fn, done=done, terminated=terminated)
    done = to_time_last(done, time_dim)
    if terminated is None:
        not_done = not_mask(done, like)
        return not_done, not_done
    terminated = to_time_last(terminated, time_dim)
    # A terminated step is done even without its done flag (TorchRL trusts `done`; docs/differences.md), and
    # only termination cuts the bootstrap: a truncated step keeps V(s') (Pardo et al. 2018, arXiv:1712.00378).
    return not_mask(done | terminated, like), not_mask(terminated, like)


class TimeLastInputs(NamedTuple):
    """Checked estimator inputs with time on the last dimension (see :func:`prepare_inputs`)."""

    time_dim: int
    shape: torch.Size
    gamma: float | torch.Tensor
    lmbda: float | torch.Tensor
    value: torch.Tensor | None
    next_value: torch.Tensor
    reward: torch.Tensor
    not_done: torch.Tensor
    not_terminated: torch.Tensor

    def state_value(self, fn: str) -> torch.Tensor:
        """``V(s_t)`` time-last, for the estimators that need it (``None`` only for TD(0)/TD(1) targets)."""
        if self.value is None:
            raise ValueError(f"{fn}: state_value is required.")
        return self.value


def prepare_inputs(
    fn: str,
    time_dim: int,
    *,
    gamma: float | torch.Tensor,
    lmbda: float | torch.Tensor = 1.0,
    state_value: torch.Tensor | None,
    next_state_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    terminated: torch.Tensor | None,
) -> TimeLastInputs:
    """Checks the inputs of a multi-step estimator once and returns them time-last.

    Args:
        fn: name of the calling function, used in error messages.
        time_dim: the time dimension of the inputs.
        gamma: discount (number or tensor, see :func:`coefficient`).
        lmbda: lambda (number or tensor). Defaults to ``1.0``.
        state_value: ``V(s_t)`` or ``None``.
        next_state_value: ``V(s_{t+1})``.
        reward: rewards.
        done: boolean done flags.
        terminated: boolean terminal flags or ``None`` (then ``done``).

    Returns:
        the inputs with time last; the flags as float masks ``not_done = 1 - (done | terminated)`` and
        ``not_terminated = 1 - terminated``.

    Examples:
        >>> import torch
        >>> x, d = torch.zeros(2, 5, 1), torch.zeros(2, 5, 1, dtype=torch.bool)
        >>> inputs = prepare_inputs(
        ...     "f", -2, gamma=0.9, state_value=x, next_state_value=x, reward=x, done=d, terminated=None
        ... )
        >>> inputs.reward.shape, inputs.time_dim
        (torch.Size([2, 1, 5]), 1)
    """
    shape = same_shape(
        fn,
        state_value=state_value,
        next_state_value=next_state_value,
        reward=reward,
        done=done,
        terminated=terminated,
    )
    td = check_time_dim(fn, time_dim, shape)
    not_done, not_terminated = time_last_flags(fn, done, terminated, td, reward)
    return TimeLastInputs(
        time_dim=td,
        shape=shape,
        gamma=coefficient(fn, "gamma", gamma, shape, td, reward),
        lmbda=coefficient(fn, "lmbda", lmbda, shape, td, reward),
        value=None if state_value is None else to_time_last(state_value, td),
        next_value=to_time_last(next_state_value, td),
        reward=to_time_last(reward, td),
        not_done=not_done,
        not_terminated=not_terminated,
    )


def standardize(
    x: torch.Tensor,
    *,
    groups: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    eps: float = 1e-4,
) -> torch.Tensor:
    """Zero-mean, unit-variance ``x``, over the whole tensor or within each group of ``groups``.

    Args:
        x: the values.
        groups: integer ids whose leading dimensions match ``x`` (trailing singleton dims allowed);
            each distinct id is standardized separately.
        mask: boolean, broadcastable to ``x``: only these entries count in the statistics.
        eps: lower bound of the standard deviation.

    Returns:
        the standardized values (unbiased variance, like ``Tensor.std``).

    Examples:
        >>> import torch
        >>> standardize(torch.tensor([1.0, 3.0, 10.0, 20.0]), groups=torch.tensor([0, 0, 1, 1]))
        tensor([-0.7071,  0.7071, -0.7071,  0.7071])
    """
    if groups is None:
        if mask is None:
            return (x - x.mean()) / x.std().clamp_min(eps)
        groups = torch.zeros((), dtype=torch.long, device=x.device)
    while groups.ndim < x.ndim:
        groups = groups.unsqueeze(-1)
    if groups.ndim > x.ndim:
        raise ValueError(
            f"group ids of shape {tuple(groups.shape)} cannot index values of shape {tuple(x.shape)}"
        )
    flat = x.reshape(-1)
    weight = torch.ones_like(flat) if mask is None else mask.expand(x.shape).reshape(-1).to(flat.dtype)
    _, index = torch.unique(groups.expand(x.shape).reshape(-1), return_inverse=True)
    num_groups = int(index.max()) + 1 if index.numel() else 0
    count = flat.new_zeros(num_groups).index_add_(0, index, weight)
    mean = flat.new_zeros(num_groups).index_add_(0, index, flat * weight) / count.clamp_min(1)
    centered = flat - mean[index]
    var = flat.new_zeros(num_groups).index_add_(0, index, centered.square() * weight) / (count - 1).clamp_min(
        1
    )
    return (centered / var.sqrt().clamp_min(eps)[index]).reshape(x.shape)
