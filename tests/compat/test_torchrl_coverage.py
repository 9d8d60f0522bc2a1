"""The coverage generator behind docs/migrating-from-torchrl.md (benchmarks/torchrl_coverage.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("torchrl_coverage", ROOT / "benchmarks" / "torchrl_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_classify_and_render(coverage, tmp_path):
    allow = tmp_path / "allow.toml"
    allow.write_text('[[entry]]\npattern = "torchrl.envs*:IsaacGym*"\nreason = "GPU only"\n')
    names = {"torchrl.envs": ["GymEnv", "IsaacGymEnv", "NotAThing"], "torchrl.envs.transforms": ["GymEnv"],
             "torchrl.nowhere": ["X"]}
    status = coverage.classify(names, coverage._load_allow(allow))
    assert status["torchrl.envs"] == {"GymEnv": "provided", "IsaacGymEnv": "allowed: GPU only",
                                      "NotAThing": "missing"}
    assert status["torchrl.nowhere"] == {"X": "missing"}  # tdrl.nowhere does not import
    distinct = coverage._distinct(status)
    assert distinct["GymEnv"] == "missing"  # provided under envs but not under envs.transforms
    text = coverage.render(status, "0.14.1")
    assert "| distinct public names in TorchRL 0.14.1 | 4 |" in text
    assert "| `NotAThing` | **missing** |" in text


def test_allow_list_entries_need_a_reason(coverage, tmp_path):
    allow = tmp_path / "allow.toml"
    allow.write_text('[[entry]]\npattern = "*:X"\nreason = ""\n')
    with pytest.raises(ValueError, match="no reason"):
        coverage._load_allow(allow)


def test_committed_inputs_are_well_formed(coverage):
    data = json.loads(coverage.NAMES.read_text())
    assert data["torchrl"] == "0.14.1" and set(data["modules"]) == set(coverage.MODULES)
    assert coverage._load_allow(coverage.ALLOW)


def test_report_keeps_the_torchrl_programs_section(coverage):
    old = "# doc\n\n## Summary\n\n<!-- torchrl-programs:start -->\n## programs\n| a |\n<!-- torchrl-programs:end -->\n"
    new = "# doc\n\n## Summary\n\nnew counts\n\n## Every name\n\nrows\n"
    kept = coverage.keep_sections(old, new)
    assert kept.index("new counts") < kept.index("## programs\n| a |") < kept.index("## Every name")
    assert kept.count("<!-- torchrl-programs:start -->") == 1
    assert coverage.keep_sections("# no section\n", new) == new
