"""Stateless tensor functions behind the transforms (the ``F.x`` side of ``nn.X``)."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

__all__ = ["cat_frames"]


def _window_mask(done_mask: Tensor, lead_shape: torch.Size, N: int) -> Tensor:
    """Brings a ``done_mask`` to shape ``(*lead_shape, N)`` (an extra singleton before ``N`` is allowed)."""
    if done_mask.dtype != torch.bool:
        raise TypeError(f"cat_frames: done_mask must be a bool tensor, got {done_mask.dtype}")
    if done_mask.ndim == len(lead_shape) + 2 and done_mask.shape[-2] == 1:
        done_mask = done_mask.squeeze(-2)
    if done_mask.shape[-1] != N or done_mask.shape[:-1] != lead_shape:
        raise ValueError(
            f"cat_frames: done_mask has shape {tuple(done_mask.shape)}, expected {(*lead_shape, N)} "
            "(the tensor's dims up to time_dim, then the window size N)"
        )
    return done_mask


def cat_frames(
    tensor: Tensor,
    N: int,
    dim: int,
    *,
    padding: Literal["same", "constant"] = "same",
    padding_value: float = 0.0,
    time_dim: int = -1,
    done_mask: Tensor | None = None,
) -> Tensor:
    """Concatenates, for every time step, the window of the ``N`` last frames along ``dim``.

    Output position ``t`` holds frames ``t - N + 1, ..., t`` (oldest first) concatenated along ``dim``.
    Frames before the start of the trajectory are padded: with ``padding="same"`` by the first frame of
    the trajectory, with ``"constant"`` by ``padding_value``. This is the offline form of
    :class:`~tdrl.envs.transforms.CatFrames` ("Playing Atari with Deep RL", https://arxiv.org/abs/1312.5602).

    Args:
        tensor: the frames; its ``time_dim`` axis is time.
        N: the window size.
        dim: the (negative) axis along which the ``N`` frames are concatenated.

    Keyword Args:
        padding: ``"same"`` or ``"constant"``.
        padding_value: the value used by ``"constant"`` padding.
        time_dim: the (negative) time axis.
        done_mask: optional bool mask of shape ``(*tensor.shape[:time_dim + 1], N)`` flagging the window
            slots that reach across a trajectory boundary (they form a prefix of each window).

    Returns:
        A tensor shaped like ``tensor`` with its ``dim`` size multiplied by ``N``.

    Examples:
        >>> import torch
        >>> frames = torch.arange(1.0, 5.0).view(4, 1)
        >>> cat_frames(frames, 3, -1, time_dim=-2, padding="constant")
        tensor([[0., 0., 1.],
                [0., 1., 2.],
                [1., 2., 3.],
                [2., 3., 4.]])
    """
    if dim >= 0 or time_dim >= 0:
        raise ValueError(f"cat_frames: dim and time_dim must be negative, got dim={dim}, time_dim={time_dim}")
    if padding not in ("same", "constant"):
        raise ValueError(f"cat_frames: padding must be 'same' or 'constant', got {padding!r}")
    if N < 1:
        raise ValueError(f"cat_frames: N must be >= 1, got {N}")
    ndim = tensor.ndim
    time_pos = ndim + time_dim
    cat_pos = ndim + dim
    if time_pos < 0 or cat_pos < 0:
        raise ValueError(f"cat_frames: dim={dim} / time_dim={time_dim} out of range for a {ndim}-d tensor")
    T = tensor.shape[time_pos]
    if N > 1:
        if padding == "same" and done_mask is None:
            pad = tensor.narrow(time_pos, 0, 1).expand(
                *tensor.shape[:time_pos], N - 1, *tensor.shape[time_pos + 1 :]
            )
        else:
            shape = list(tensor.shape)
            shape[time_pos] = N - 1
            pad = tensor.new_full(shape, padding_value)
        padded = torch.cat([pad, tensor], time_pos)
    else:
        padded = tensor
    if done_mask is None and time_pos != cat_pos:
        # One concatenation of N shifted views: a single kernel writes the output.
        return torch.cat([padded.narrow(time_pos, k, T) for k in range(N)], cat_pos)
    windows = padded.unfold(time_pos, N, 1)  # (..., T, ..., N)
    if done_mask is not None:
        mask = _window_mask(done_mask, tensor.shape[: time_pos + 1], N)
        extra = (1,) * (ndim - time_pos - 1)
        if padding == "same":
            first_valid = mask.sum(-1, keepdim=True)
            index = torch.maximum(torch.arange(N, device=tensor.device), first_valid).clamp_max_(N - 1)
            index = index.reshape(*index.shape[:-1], *extra, N).expand(windows.shape)
            windows = windows.gather(-1, index)
        else:
            windows = windows.masked_fill(mask.reshape(*mask.shape[:-1], *extra, N), padding_value)
    # The window axis goes right before the concatenation axis, then the two are merged.
    windows = windows.movedim(-1, cat_pos)
    return windows.flatten(cat_pos, cat_pos + 1)
