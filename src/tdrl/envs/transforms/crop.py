"""Crops of ``(..., C, H, W)`` images in plain torch: ``CenterCrop`` and ``Crop`` (TorchRL delegates to torchvision).

A crop larger than the image is padded with zeros, as torchvision's ``center_crop`` does, so the output always
has the requested size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["CenterCrop", "Crop", "center_crop", "crop"]


def crop(image: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """The ``height x width`` window of ``image`` whose top-left corner is ``(top, left)``; zero-padded outside.

    Examples:
        >>> crop(torch.arange(16.0).view(1, 4, 4), 1, 1, 2, 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    if image.ndim < 2:
        raise ValueError(f"crop expects an image of shape (..., H, W), got shape {tuple(image.shape)}")
    if height <= 0 or width <= 0:
        raise ValueError(f"crop size must be positive, got height={height}, width={width}")
    img_h, img_w = image.shape[-2:]
    bottom, right = top + height, left + width
    pad = (max(0, -left), max(0, right - img_w), max(0, -top), max(0, bottom - img_h))
    if any(pad):
        flat = image.reshape(-1, 1, img_h, img_w) if image.ndim != 4 else image
        flat = F.pad(flat, pad)
        image = flat.reshape(*image.shape[:-2], *flat.shape[-2:])
        top, left = top + pad[2], left + pad[0]
    return image[..., top : top + height, left : left + width]


def center_crop(image: torch.Tensor, height: int, width: int | None = None) -> torch.Tensor:
    """The centred ``height x width`` window of ``image`` (torchvision's rounding of the offsets).

    Examples:
        >>> center_crop(torch.arange(25.0).view(5, 5), 3).shape
        torch.Size([3, 3])
        >>> center_crop(torch.ones(1, 2, 2), 4)[0, :, 0]
        tensor([0., 1., 1., 0.])
    """
    width = height if width is None else width
    img_h, img_w = image.shape[-2:]
    # A too-small side is padded first, the odd pixel going after (torchvision's layout); the offsets below
    # are then 0 on that side.
    pad_top = (height - img_h) // 2 if height > img_h else 0
    pad_left = (width - img_w) // 2 if width > img_w else 0
    img_h, img_w = max(img_h, height), max(img_w, width)
    top = int(round((img_h - height) / 2.0)) - pad_top
    left = int(round((img_w - width) / 2.0)) - pad_left
    return crop(image, top, left, height, width)


class _CropBase(Transform):
    def __init__(self, w: int, h: int | None, in_keys: Sequence[NestedKey] | None,
                 out_keys: Sequence[NestedKey] | None) -> None:
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)
        if int(w) <= 0 or (h is not None and int(h) <= 0):
            raise ValueError(f"{type(self).__name__}: crop sizes must be positive, got w={w}, h={h}")
        self.w = int(w)
        self.h = int(h) if h is not None else int(w)

    def _out_leaf(self, leaf: Any) -> Any:
        shape = (*leaf.shape[:-2], self.h, self.w)
        if isinstance(leaf, Bounded):
            # Zero padding can put 0 outside the original bounds only when it was excluded: keep them.
            low = leaf.low.min().item()
            high = leaf.high.max().item()
            return Bounded(low=min(low, 0), high=max(high, 0), shape=shape, dtype=leaf.dtype, device=leaf.device)
        return Unbounded(shape=shape, dtype=leaf.dtype, device=leaf.device)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in observation_spec.keys(True, True):
                observation_spec[out_key] = self._out_leaf(observation_spec[in_key])
        return observation_spec


class CenterCrop(_CropBase):
    """Crops the centre of ``(..., C, H, W)`` images to ``h x w``.

    Args:
        w: output width.
        h: output height (default ``w``).
        in_keys: images to crop (default ``["pixels"]``).
        out_keys: destinations (default ``in_keys``).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = CenterCrop(2)
        >>> t(TensorDict({"pixels": torch.rand(3, 6, 6)}, []))["pixels"].shape
        torch.Size([3, 2, 2])
    """

    def __init__(self, w: int, h: int | None = None, in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None) -> None:
        super().__init__(w, h, in_keys, out_keys)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return center_crop(obs, self.h, self.w)


class Crop(_CropBase):
    """Crops ``(..., C, H, W)`` images to the ``h x w`` window at ``(top, left)``.

    Args:
        w: output width.
        h: output height (default ``w``).
        top: first row of the window.
        left: first column of the window.
        in_keys: images to crop (default ``["pixels"]``).
        out_keys: destinations (default ``in_keys``).

    Examples:
        >>> from tensordict import TensorDict
        >>> img = torch.arange(16.0).view(1, 4, 4)
        >>> Crop(2, 1, top=2, left=1)(TensorDict({"pixels": img}, []))["pixels"]
        tensor([[[ 9., 10.]]])
    """

    def __init__(self, w: int, h: int | None = None, top: int = 0, left: int = 0,
                 in_keys: Sequence[NestedKey] | None = None, out_keys: Sequence[NestedKey] | None = None) -> None:
        super().__init__(w, h, in_keys, out_keys)
        self.top = int(top)
        self.left = int(left)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return crop(obs, self.top, self.left, self.h, self.w)
