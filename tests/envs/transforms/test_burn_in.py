"""BurnInTransform on replay-buffer samples (the golden comparison is in test_golden_torchrl.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.data import LazyTensorStorage, ReplayBuffer
from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import BurnInTransform

from ._envs import VectorEnv


def _accumulate():
    lin = torch.nn.Linear(1, 1)
    torch.nn.init.ones_(lin.weight)
    torch.nn.init.zeros_(lin.bias)
    return TensorDictModule(lambda x, h: lin(x) + h, in_keys=["x", "h"], out_keys=[("next", "h")])


def test_replay_buffer_sample_is_burnt_in():
    data = TensorDict({"x": torch.ones(4, 5, 1), "h": torch.zeros(4, 5, 1)}, [4, 5])
    rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=BurnInTransform(_accumulate(), burn_in=2), batch_size=2)
    rb.extend(data)
    sample = rb.sample()
    assert sample.batch_size == (2, 3)
    assert sample["h"][:, 0].flatten().tolist() == [1.0, 1.0]  # next h of the last burn-in step (h=0, x=1)
    assert (sample["h"][:, 1:] == 0).all()


def test_missing_carried_entry_is_created_and_burn_in_zero_is_identity():
    t = BurnInTransform(_accumulate(), burn_in=1, out_keys=["h"])
    data = TensorDict({"x": torch.full((2, 3, 1), 2.0), "h": torch.zeros(2, 3, 1)}, [2, 3])
    assert BurnInTransform(_accumulate(), burn_in=0)(data) is data
    with pytest.warns(UserWarning, match="ignored"):
        BurnInTransform(_accumulate(), burn_in=1, out_keys=[("next", "h")])
    assert t(data.clone())["h"][:, 0].flatten().tolist() == [2.0, 2.0]


def test_errors():
    with pytest.raises(ValueError, match="TensorDictModules"):
        BurnInTransform([torch.nn.Linear(1, 1)], burn_in=1)
    with pytest.raises(ValueError, match="non-negative"):
        BurnInTransform(_accumulate(), burn_in=-1)
    with pytest.raises(ValueError, match="T > burn_in"):
        BurnInTransform(_accumulate(), burn_in=3)(TensorDict({"x": torch.ones(2, 3, 1), "h": torch.ones(2, 3, 1)}, [2, 3]))
    env = TransformedEnv(VectorEnv(), BurnInTransform(
        TensorDictModule(torch.nn.Identity(), in_keys=["observation"], out_keys=[("next", "h")]), burn_in=1))
    with pytest.raises(RuntimeError, match="replay-buffer"):
        env.reset()
