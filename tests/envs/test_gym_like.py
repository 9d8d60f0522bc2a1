"""``GymLikeEnv``: a subclass over a gym-like library env steps, frame-skips and reads infos as TorchRL 0.14.1's
(``golden_gym_like_torchrl_0_14_1.pt``, recorded by ``record_torchrl_gym_like.py``); readers and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tdrl.data as data
import tdrl.envs as envs
from tdrl.envs import GymLikeEnv, GymWrapper
from tdrl.envs.utils import check_env_specs

from ._golden_trace import assert_same_trace
from ._gym_like_cases import CASES, Walker, build, run

GOLDEN = torch.load(Path(__file__).with_name("golden_gym_like_torchrl_0_14_1.pt"), weights_only=True)


def _info_as_specced(ref: dict) -> dict:
    # TorchRL's default_info_dict_reader writes a scalar info value as it comes (shape ()), against its own
    # (1,) spec; tdrl's follows the spec (docs/differences.md). The values are compared as specced.
    steps = [{k: v.reshape(1) if k.endswith("dist") else v for k, v in step.items()} for step in ref["steps"]]
    return {**ref, "steps": steps}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torchrl(name: str) -> None:
    assert_same_trace(run(envs, data, name), _info_as_specced(GOLDEN["cases"][name]))


def test_check_env_specs_and_hierarchy() -> None:
    check_env_specs(build(envs, data, "walker_info"))
    assert issubclass(GymWrapper, GymLikeEnv)


def test_readers() -> None:
    env = build(envs, data, "walker")
    assert env.read_action(torch.tensor(2)) == 2
    term, trunc, done, stop = env.read_done(terminated=True, truncated=False)
    assert done.tolist() == [True] and trunc.tolist() == [False] and stop
    assert env.read_reward(1.5).tolist() == [1.5]
    obs = env.read_obs({"position": np.zeros(2, np.float32), "steps": np.ones(1, np.int64)})
    assert obs["steps"].dtype == torch.int64
    with pytest.raises(KeyError, match="not in the observation spec"):
        env.read_obs({"speed": np.zeros(1)})
    with pytest.raises(ValueError, match="no done"):
        env.read_done()


def test_partial_reset_and_missing_hooks_raise() -> None:
    from tensordict import TensorDict

    env = build(envs, data, "walker")
    with pytest.raises(RuntimeError, match="partial resets"):
        env._reset(TensorDict({"_reset": torch.tensor([False])}, []))

    class NoHooks(GymLikeEnv):
        def _make_specs(self, env: Walker) -> None:
            self.observation_spec = data.Composite(position=data.Unbounded((2,)), steps=data.Unbounded((1,)))
            self.action_spec = data.Categorical(3)

        def _set_seed(self, seed: int | None) -> None:
            pass

    with pytest.raises(TypeError, match="_reset_output_transform"):
        NoHooks(env=Walker()).reset()
