"""TargetReturn through the contract, its constant mode and its errors."""

from __future__ import annotations

import pytest

from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import TargetReturn

from ._contract import TransformContract
from ._envs import VectorEnv


class TestTargetReturn(TransformContract):
    has_plain = False

    def make_transform(self):
        return TargetReturn(5.0)

    def check(self, rollout, setting):
        root, nxt = rollout["target_return"], rollout["next", "target_return"]
        assert (nxt == root - rollout["next", "reward"]).all()
        assert (root[..., 0, :] == 5.0).all()
        # VectorEnv episodes end after 7 steps: the next one starts again at the target.
        assert (root[..., 7, :] == 5.0).all()


def test_target_return_constant_mode_and_errors():
    env = TransformedEnv(VectorEnv(), TargetReturn(2.5, mode="constant", out_keys=["rtg"]))
    rollout = env.rollout(4)
    assert (rollout["rtg"] == 2.5).all() and (rollout["next", "rtg"] == 2.5).all()
    with pytest.raises(ValueError, match="mode"):
        TargetReturn(1.0, mode="sum")
    with pytest.raises(KeyError, match="reward spec"):
        _ = TransformedEnv(VectorEnv(), TargetReturn(1.0, in_keys=["bonus"])).observation_spec
