"""CenterCrop and Crop in plain torch (torchvision's layout of the offsets and of the zero padding)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs.transforms import CenterCrop, Compose, Crop, ToTensorImage
from tdrl.envs.transforms.crop import center_crop, crop

from ._contract import TransformContract


class TestCenterCrop(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return Compose(ToTensorImage(), CenterCrop(4, 6))

    def check(self, rollout, setting):
        assert rollout["next", "pixels"].shape[-3:] == (3, 6, 4)


class TestCrop(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return Compose(ToTensorImage(), Crop(3, top=1, left=2, in_keys=["pixels"], out_keys=["crop"]))

    def check(self, rollout, setting):
        assert rollout["next", "crop"].shape[-3:] == (3, 3, 3)
        assert torch.equal(rollout["next", "crop"], rollout["next", "pixels"][..., 1:4, 2:5])


def test_center_crop_offsets_follow_torchvision():
    img = torch.arange(2 * 5 * 7.0).view(2, 5, 7)
    # torchvision: top = round((5 - 2) / 2) = 2, left = round((7 - 3) / 2) = 2
    assert torch.equal(center_crop(img, 2, 3), img[:, 2:4, 2:5])
    # a crop larger than the image is zero-padded, the odd pixel after
    padded = center_crop(torch.ones(1, 4, 4), 7)
    assert padded.shape == (1, 7, 7)
    assert padded[0, :, 3].tolist() == [0, 1, 1, 1, 1, 0, 0]
    mixed = center_crop(torch.ones(1, 5, 7), 6, 9)
    assert mixed[0, :, 0].sum() == 0 and mixed[0, -1].sum() == 0 and mixed.sum() == 35


def test_crop_window_and_errors():
    img = torch.arange(16.0).view(1, 4, 4)
    assert crop(img, 2, 1, 1, 2).tolist() == [[[9.0, 10.0]]]
    assert crop(img, 3, 3, 2, 2)[0].tolist() == [[15.0, 0.0], [0.0, 0.0]]  # outside: zeros
    with pytest.raises(ValueError, match="positive"):
        crop(img, 0, 0, 0, 2)
    with pytest.raises(ValueError, match="positive"):
        CenterCrop(0)
    out = Crop(2, 1, top=2, left=1)(TensorDict({"pixels": img}, []))
    assert out["pixels"].tolist() == [[[9.0, 10.0]]]
