"""``MOGymEnv`` / ``MOGymWrapper`` (the `mogym` extra): vector-reward specs and fixed-action rollouts equal
TorchRL 0.14.1's (``golden_extra_libs_torchrl_0_14_1.pt``, recorded by ``record_torchrl_extra_libs.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("mo_gymnasium", reason="mo-gymnasium is not installed (the `mogym` extra)")

import mo_gymnasium  # noqa: E402

from tdrl.envs import libs  # noqa: E402
from tdrl.envs.utils import check_env_specs  # noqa: E402

from .._golden_trace import assert_same_trace  # noqa: E402
from ._extra_libs_cases import CASES, run  # noqa: E402

GOLDEN = torch.load(Path(__file__).with_name("golden_extra_libs_torchrl_0_14_1.pt"), weights_only=True)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("mo_")))
def test_matches_torchrl(name: str) -> None:
    assert_same_trace(run(libs, name), GOLDEN["cases"][name])


def test_wrapper_reads_the_reward_space() -> None:
    env = libs.MOGymWrapper(mo_gymnasium.make("fruit-tree-v0"))
    assert env.reward_spec.shape == (6,)
    check_env_specs(env)
    assert env.rollout(3)["next", "reward"].shape == (3, 6)
    assert "deep-sea-treasure-v0" in libs.MOGymEnv.available_envs


def test_num_envs_is_refused_with_the_alternative() -> None:
    with pytest.raises(ValueError, match="SerialEnv or ParallelEnv"):
        libs.MOGymEnv("deep-sea-treasure-v0", num_envs=2)
