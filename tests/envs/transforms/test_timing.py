"""Timer: step, policy and reset times."""

from __future__ import annotations

import time

import pytest
import torch

from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import Timer

from ._contract import TransformContract
from ._envs import VectorEnv


class TestTimer(TransformContract):
    has_plain = False

    def make_transform(self):
        return Timer()

    def check(self, rollout, setting):
        assert (rollout["next", "time_step"] > 0).all()
        assert (rollout["next", "time_reset"] == 0).all()
        assert (rollout["time_policy"][..., 0] == 0).all()  # the root after a reset


def test_timer_measures_the_policy():
    env = TransformedEnv(VectorEnv(), Timer(time_key="t"))

    def slow_policy(td):
        time.sleep(0.02)
        return td.set("action", torch.zeros(2, dtype=torch.float64))

    r = env.rollout(3, slow_policy)
    assert set(r["next"].keys()) >= {"t_step", "t_policy", "t_reset"}
    assert (r["next", "t_policy"] >= 0.02).all()
    assert (r["t_reset"][0] > 0) and r["t_step"][0] == 0
    assert env.observation_spec["t_step"].shape == ()
    with pytest.raises(ValueError, match="three out_keys"):
        Timer(out_keys=["a"])
