"""``LBForagingEnv`` / ``LBForagingWrapper`` (the `lbforaging` extra): specs, group map and fixed-action rollouts
(including the step-limit truncation) equal TorchRL 0.14.1's (``golden_extra_libs_torchrl_0_14_1.pt``, recorded
by ``record_torchrl_extra_libs.py``); spec checks and errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("lbforaging", reason="lbforaging is not installed (the `lbforaging` extra)")

import gymnasium  # noqa: E402

from tdrl.envs import libs  # noqa: E402
from tdrl.envs.utils import check_env_specs  # noqa: E402

from .._golden_trace import assert_same_trace  # noqa: E402
from ._extra_libs_cases import CASES, run  # noqa: E402

GOLDEN = torch.load(Path(__file__).with_name("golden_extra_libs_torchrl_0_14_1.pt"), weights_only=True)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("lbforaging")))
def test_matches_torchrl(name: str) -> None:
    assert_same_trace(run(libs, name), GOLDEN["cases"][name])


def test_time_limit_is_a_truncation() -> None:
    trace = run(libs, "lbforaging_time_limit")
    last = trace["steps"][4]
    assert last["next:truncated"].item() and not last["next:terminated"].item()


@pytest.mark.parametrize("categorical", [True, False])
def test_check_env_specs(categorical: bool) -> None:
    env = libs.LBForagingEnv("Foraging-8x8-2p-1f-v3", seed=0, categorical_actions=categorical)
    check_env_specs(env)
    assert env.group_map == {"agents": ["0", "1"]}


def test_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown Level-Based Foraging id"):
        libs.LBForagingEnv("Foraging-bad-v0")
    with pytest.raises(TypeError, match="ForagingEnv"):
        libs.LBForagingWrapper(gymnasium.make("CartPole-v1"))
    with pytest.raises(ValueError, match="empty batch_size"):
        libs.LBForagingEnv("Foraging-8x8-2p-1f-v3", batch_size=[2])
    assert "Foraging-8x8-2p-1f-v3" in libs.LBForagingEnv.available_envs
