from __future__ import annotations

import subprocess
import sys

import pytest

from tdrl.trainers.cli import main, make_env_from_name


def test_rollout_pendulum_prints_summary(capsys):
    assert main(["rollout", "--env", "pendulum", "--steps", "20", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check_env_specs(pendulum): ok" in out
    assert "frames: 20" in out


def test_rollout_gym_vectorised(capsys):
    assert main(["rollout", "--env", "CartPole-v1", "--steps", "10", "--num-envs", "2"]) == 0
    assert "frames: 20" in capsys.readouterr().out


def test_bad_dmc_name_is_a_clear_error(capsys):
    assert main(["rollout", "--env", "dmc:cheetah"]) == 2
    assert "dmc:DOMAIN/TASK" in capsys.readouterr().err


def test_make_env_from_name_types():
    assert type(make_env_from_name("pendulum")).__name__ == "PendulumEnv"
    assert type(make_env_from_name("CartPole-v1")).__name__ == "GymEnv"


@pytest.mark.integration
def test_console_script_help_and_version():
    out = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("tdrl ")
    out = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli"], capture_output=True, text=True)
    assert out.returncode == 2 and "rollout" in out.stdout
