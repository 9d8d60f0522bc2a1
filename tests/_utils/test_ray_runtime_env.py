"""``tdrl.get_ray_default_runtime_env`` / ``merge_ray_runtime_env`` (TorchRL's Ray runtime-env helpers)."""

from __future__ import annotations

import pytest

import tdrl


def test_default_excludes_match_torchrl_list():
    excludes = tdrl.get_ray_default_runtime_env()["excludes"]
    assert len(excludes) == len(set(excludes)) == 25
    assert {".venv/", "tests/", "benchmarks/", "__pycache__/", "*.html"} <= set(excludes)


def test_merge_keeps_user_settings_and_forwards_env_vars(monkeypatch):
    monkeypatch.setenv("HF_HOME", "/tmp/hf")
    for key in ("WANDB_API_KEY", "HF_TOKEN", "TORCHRL_PROFILING"):
        monkeypatch.delenv(key, raising=False)
    config = {"num_cpus": 2, "runtime_env": {"excludes": ["data/", "tests/"], "env_vars": {"HF_HOME": "/mine"}}}
    out = tdrl.merge_ray_runtime_env(config)
    assert out is config and out["num_cpus"] == 2
    excludes = out["runtime_env"]["excludes"]
    assert "data/" in excludes and excludes.count("tests/") == 1 and ".venv/" in excludes
    assert out["runtime_env"]["env_vars"] == {"HF_HOME": "/mine"}  # the user's value wins, no key unset here added
    assert tdrl.merge_ray_runtime_env({})["runtime_env"]["env_vars"] == {"HF_HOME": "/tmp/hf"}


def test_merge_rejects_non_dict():
    with pytest.raises(TypeError, match="ray_init_config must be a dict"):
        tdrl.merge_ray_runtime_env([("num_cpus", 2)])  # type: ignore[arg-type]
