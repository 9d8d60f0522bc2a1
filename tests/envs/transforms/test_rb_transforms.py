"""MultiStepTransform: refused inside envs (the contract's env settings), n-step writes into replay
buffers (values are checked against TorchRL in test_golden_torchrl.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import LazyTensorStorage, MultiStep, ReplayBuffer
from tdrl.envs.transforms import MultiStepTransform

from ._contract import SETTINGS, TransformContract


class TestMultiStepTransform(TransformContract):
    def make_transform(self):
        return MultiStepTransform(3, gamma=0.9)

    @pytest.mark.parametrize("setting", SETTINGS)
    def test_env(self, setting):
        # A write-side replay-buffer transform: every env setting refuses it with the reason.
        env = self.build(setting)
        try:
            with pytest.raises((ValueError, RuntimeError), match="replay buffer"):
                env.rollout(3)
        finally:
            env.close()

    def check(self, rollout, setting):
        raise AssertionError("MultiStepTransform never runs in an env")

    def check_plain(self, data, out):
        assert out is not None and torch.equal(out["next", "reward"], data["next", "reward"])  # forward: identity

    def check_inv(self, transform):
        data = TensorDict({("next", "reward"): torch.ones(2, 5, 1), ("next", "done"): torch.zeros(2, 5, 1, dtype=torch.bool),
                           ("next", "obs"): torch.arange(10.0).view(2, 5, 1)}, [2, 5])
        out = transform.inv(data)
        assert out.batch_size == (2, 2)
        expected = MultiStep(gamma=0.9, n_steps=3)(data)[..., :2]
        torch.testing.assert_close(out["next", "reward"], expected["next", "reward"])
        torch.testing.assert_close(out["next", "obs"], data["next", "obs"][:, 2:4])
        more = transform.inv(data)  # continues from the 3 held-back steps
        assert more.batch_size == (2, 5)


def test_held_back_steps_are_written_later_and_n_steps_is_editable():
    t = MultiStepTransform(2, gamma=0.5)
    rb = ReplayBuffer(storage=LazyTensorStorage(50), transform=t)
    chunk = TensorDict({("next", "reward"): torch.ones(2, 1), ("next", "done"): torch.zeros(2, 1, dtype=torch.bool)}, [2])
    rb.extend(chunk)
    assert len(rb) == 0
    rb.extend(chunk)
    assert len(rb) == 2
    t.n_steps = 1  # the 2 held-back steps and the new ones: all but the last are written, none twice
    rb.extend(chunk)
    assert len(rb) == 5
    with pytest.raises(ValueError, match="strictly positive"):
        MultiStepTransform(0, gamma=0.9)


def test_bad_writes_are_named():
    t = MultiStepTransform(2, gamma=0.9)
    with pytest.raises(ValueError, match="time dim"):
        t.inv(TensorDict({("next", "reward"): torch.ones(1), ("next", "done"): torch.zeros(1, dtype=torch.bool)}))
    t.inv(TensorDict({("next", "reward"): torch.ones(2, 3, 1), ("next", "done"): torch.zeros(2, 3, 1, dtype=torch.bool)}, [2, 3]))
    with pytest.raises(ValueError, match="does not continue"):
        t.inv(TensorDict({("next", "reward"): torch.ones(3, 3, 1), ("next", "done"): torch.zeros(3, 3, 1, dtype=torch.bool)}, [3, 3]))
