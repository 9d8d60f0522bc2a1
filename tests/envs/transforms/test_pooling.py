"""TimeMaxPool."""

from __future__ import annotations

import pytest
import torch

from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import TimeMaxPool

from ._contract import TransformContract
from ._envs import VectorEnv


class TestTimeMaxPool(TransformContract):
    has_plain = False

    def make_transform(self):
        return TimeMaxPool(in_keys=["observation"], out_keys=["pooled"], T=3)

    def check(self, rollout, setting):
        obs, pooled = rollout["next", "observation"], rollout["next", "pooled"]
        assert (pooled >= obs).all()


def _reference(first, steps, T):
    seen, out = [first], []
    for x in steps:
        seen.append(x)
        out.append(torch.stack(seen[-T:]).amax(0))
    return torch.stack(out)


def test_matches_a_reference_window():
    env = TransformedEnv(VectorEnv(episode_len=100), TimeMaxPool(in_keys=["observation"], out_keys=["m"], T=3))
    env.set_seed(0)
    r = env.rollout(8)
    expected = _reference(r["observation"][0], list(r["next", "observation"].unbind(0)), 3)
    assert torch.equal(r["next", "m"], expected)
    assert torch.equal(r["m"][0], r["observation"][0])  # at reset: the reset observation itself


def test_errors():
    with pytest.raises(ValueError, match="T must"):
        TimeMaxPool(T=0)
    with pytest.raises(RuntimeError, match="inside an env"):
        TimeMaxPool()(VectorEnv().reset())
