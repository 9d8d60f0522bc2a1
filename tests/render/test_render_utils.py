"""``tdrl.render`` helpers against TorchRL 0.14.1 (``render_utils_torchrl_0_14_1.json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tdrl import render
from tdrl.envs import GymEnv, StepCounter, TransformedEnv

sys.path.insert(0, str(Path(__file__).parent))
from _utils_scenario import run  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "render_utils_torchrl_0_14_1.json").read_text())


def test_helpers_match_torchrl():
    assert json.loads(json.dumps(run(render))) == GOLDEN


def test_import_from_file(tmp_path):
    path = tmp_path / "factory.py"
    path.write_text("def make():\n    return 42\n")
    assert render.import_from_string(f"{path}:make")() == 42
    assert render.import_from_string(f"{path}:make") is render.import_from_string(f"{path}:make")
    with pytest.raises(ImportError, match="no file"):
        render.import_from_string(f"{tmp_path / 'missing.py'}:make")


def test_add_step_counter_and_seed_env():
    env = render.add_step_counter(GymEnv("Pendulum-v1"), 3)
    assert isinstance(env, TransformedEnv) and [type(t) for t in env.transform] == [StepCounter]
    assert render.add_step_counter(env, 3) is env
    assert env.rollout(10).shape == (3,)
    render.seed_env(env, 1)
    first = env.reset()["observation"]
    render.seed_env(env, 1)
    assert (env.reset()["observation"] == first).all()
    render.seed_env(env, None)
    assert render.add_step_counter("not an env", 3) == "not an env"
    env.close()


def test_parse_nested_key_rejects_other_types():
    with pytest.raises(TypeError, match="int"):
        render.parse_nested_key(3)
