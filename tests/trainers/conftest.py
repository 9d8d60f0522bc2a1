"""Fixtures shared by the trainers tests."""

from __future__ import annotations

import pytest

from ._runs import train_cartpole


@pytest.fixture(scope="session")
def cartpole_run(tmp_path_factory):
    """A tiny CartPole PPO run folder (512 frames, with best.pt), trained once with ``tdrl train``."""
    return train_cartpole(tmp_path_factory.mktemp("cartpole") / "run")
