"""``examples/mappo/train.py`` (the `marl` extra): a smoke run with a tiny budget, and (slow) the full budget
of TorchRL's multiagent_ppo tutorial, where the team's episode reward must clearly improve."""

from __future__ import annotations

import importlib.util
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vmas", reason="vmas is not installed (the `marl` extra)")
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "mappo" / "train.py"


def _train():
    spec = importlib.util.spec_from_file_location("mappo_train", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_script_is_short_and_documented() -> None:
    assert len(SCRIPT.read_text().splitlines()) < 300
    assert (SCRIPT.parent / "README.md").is_file()


def test_smoke_run_reports_and_writes_figure(tmp_path) -> None:
    out = tmp_path / "r.json"
    result = _train().main(
        [
            "--total-frames",
            "400",
            "--frames-per-batch",
            "200",
            "--max-steps",
            "20",
            "--num-epochs",
            "1",
            "--minibatch-size",
            "100",
            "--hidden",
            "16",
            "--eval-episodes",
            "2",
            "--out",
            str(out),
        ]
    )
    saved = json.loads(out.read_text())
    assert saved["algo"] == result["algo"] == "mappo" and saved["eval_episodes"] == 2
    assert saved["frames"] == 400 and len(saved["curve"]) == 2
    assert isinstance(saved["eval_return_mean"], float)
    png = tmp_path / "curve.png"
    subprocess.run(
        [sys.executable, str(SCRIPT.parent / "plot_curve.py"), str(out), str(png)], check=True, timeout=120
    )
    assert png.stat().st_size > 1000


@pytest.mark.slow
def test_mappo_navigation_improves_clearly(tmp_path) -> None:
    """60,000 frames (762 s on the shared 2-core machine): the mean episode reward per agent of the last batch is at
    least 1.0 above the first batch's, and the deterministic last policy beats the first batch too."""
    result = _train().main(["--out", str(tmp_path / "r.json")])
    first, last = result["curve"][0]["episode_reward_mean"], result["curve"][-1]["episode_reward_mean"]
    assert last - first >= 1.0, result["curve"]
    assert result["eval_return_mean"] > first + 1.0, result["eval_return_mean"]


def test_runpy_entry_point(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(
        sys,
        "argv",
        [
            str(SCRIPT),
            "--total-frames",
            "200",
            "--frames-per-batch",
            "200",
            "--max-steps",
            "20",
            "--num-epochs",
            "1",
            "--minibatch-size",
            "200",
            "--hidden",
            "8",
            "--eval-episodes",
            "1",
        ],
    )
    runpy.run_path(str(SCRIPT), run_name="__main__")


def test_the_readme_figures_are_those_of_the_stored_run():
    # README.md quotes docs/results/mappo_navigation.json (written by `train.py --out`); a rerun that changes
    # the JSON must change the README too.
    root = SCRIPT.parents[2]
    run = json.loads((root / "docs" / "results" / "mappo_navigation.json").read_text())
    readme = (SCRIPT.parent / "README.md").read_text()
    curve = run["curve"]
    assert f"**{run['eval_return_mean']:.2f} +- {run['eval_return_std']:.2f}**" in readme
    assert f"({run['wall_time_s']:.0f} s)" in readme
    assert f"from {curve[0]['episode_reward_mean']:.2f} (first batch) to {curve[-1]['episode_reward_mean']:.2f}" in readme
    assert f"({run['total_frames']:,} frames)" in readme
