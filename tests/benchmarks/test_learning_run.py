"""``benchmarks/learning/run.py``: result rows, merging, the generated table, figures and preset headers."""

from __future__ import annotations

import doctest
import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "learning"))
results_table = importlib.import_module("results_table")
run = importlib.import_module("run")


def _row(preset: str, seed: int, final: float, *, frames: int = 99_840, tail: float | None = None) -> dict:
    curve = {"frames": [20_000, 60_000, 99_840], "value": [100.0, final, final], "wall_time": [10.0, 30.0, 50.0]}
    return {
        "preset": preset, "seed": seed, "algo": preset.split("_")[0], "env": "CartPole-v1", "frames": frames,
        "final_return": final, "final_return_std": 1.0, "eval_episodes": 10, "frames_to_threshold": 60_000,
        "time_to_threshold_s": 30.0, "tail_min": tail, "wall_time_s": 50.0, "frames_per_s": 2000.0,
        "time_split_s": {"optim": 30.0, "collect": 15.0}, "curve_key": "r_eval_periodic", "curve": curve,
        "overrides": [], "machine": "2 cores test", "versions": "tdrl test", "date": "2026-01-01",
    }


def test_doctests_of_the_table_module_pass():
    assert doctest.testmod(results_table).failed == 0


def test_merge_replaces_the_row_of_the_same_preset_and_seed_and_keeps_the_others(tmp_path):
    store = tmp_path / "results.json"
    results_table.save_rows(store, [_row("ppo_cartpole", 0, 300.0), _row("ppo_cartpole", 1, 500.0)])
    results_table.save_rows(store, results_table.merge_rows(results_table.load_rows(store),
                                                            [_row("ppo_cartpole", 0, 490.0), _row("dqn_cartpole", 0, 500.0)]))
    rows = results_table.load_rows(store)
    assert [(r["preset"], r["seed"], r["final_return"]) for r in rows] == [
        ("dqn_cartpole", 0, 500.0), ("ppo_cartpole", 0, 490.0), ("ppo_cartpole", 1, 500.0)]


def test_load_rows_rejects_a_file_that_is_not_a_list_of_rows(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"preset": "x"}))
    with pytest.raises(ValueError, match="list of result rows"):
        results_table.load_rows(bad)
    assert results_table.load_rows(tmp_path / "missing.json") == []


def test_gate_verdicts_need_two_passing_seeds_and_dqn_needs_no_collapse():
    rows = [_row("ppo_cartpole", 0, 500.0), _row("ppo_cartpole", 1, 300.0), _row("ppo_cartpole", 2, 480.0),
            _row("dqn_cartpole", 0, 500.0, tail=120.0), _row("dqn_cartpole", 1, 500.0, tail=490.0)]
    text = results_table.render_markdown(rows, figures={"ppo_cartpole": "results/ppo_cartpole.png"})
    ppo = next(line for line in text.splitlines() if line.startswith("| `ppo_cartpole` | last"))
    dqn = next(line for line in text.splitlines() if line.startswith("| `dqn_cartpole` | last"))
    assert "500.0 / 300.0 / 480.0" in ppo and "| pass |" in ppo
    assert "1/2 seeds pass" in dqn  # seed 0 collapsed in the last 20%
    assert "Not measured yet" in text and "`sac_pendulum`" in text
    assert "![ppo_cartpole](results/ppo_cartpole.png)" in text
    over_budget = _row("ppo_cartpole", 0, 500.0, frames=204_800)
    assert not results_table.gate_passes(over_budget, results_table.GATES["ppo_cartpole"])


def test_plot_draws_mean_and_spread_and_refuses_rows_without_curves(tmp_path):
    out = results_table.plot_preset("ppo_cartpole", [_row("ppo_cartpole", 0, 500.0), _row("ppo_cartpole", 1, 400.0)],
                                    tmp_path / "fig" / "ppo.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = _row("ppo_cartpole", 0, 1.0)
    empty["curve"] = {"frames": [], "value": [], "wall_time": []}
    with pytest.raises(ValueError, match="no run has a learning curve"):
        results_table.plot_preset("ppo_cartpole", [empty], tmp_path / "x.png")


def test_update_header_rewrites_only_its_own_lines():
    text = "# PPO on CartPole.\n# Measured (benchmarks/learning/run.py --update-headers; old)\n#   old figures\nalgo: ppo\n"
    once = results_table.update_header(text, "ppo_cartpole", [_row("ppo_cartpole", 0, 500.0)])
    twice = results_table.update_header(once, "ppo_cartpole", [_row("ppo_cartpole", 0, 490.0)])
    assert once.startswith("# PPO on CartPole.\n# Measured") and "old figures" not in once
    assert "490.0" in twice and "500.0" not in twice and twice.endswith("algo: ppo\n")
    assert "Not measured yet" in results_table.update_header(twice, "ppo_cartpole", [])


def test_a_tiny_real_run_writes_a_row_the_table_and_a_figure(tmp_path):
    """The whole script on a 512-frame PPO run: trains through tdrl train's path, evaluates, renders."""
    out = tmp_path / "docs" / "results.md"
    # The tiny budget only fits the ppo_cartpole preset through overrides, which write experiment rows;
    # train_one + render are what the docs path runs.
    row = run.train_one("ppo_cartpole", 0, runs_dir=tmp_path / "runs", episodes=10,
                        overrides=["collector.total_frames=512", "collector.frames_per_batch=256",
                                   "eval.interval=256", "eval.interval_episodes=2", "eval.max_steps=30",
                                   "trainer.num_epochs=1", "logger.tensorboard=false"])
    assert row["frames"] == 512 and row["eval_episodes"] == 10 and row["curve_key"] == "r_eval_periodic"
    assert row["curve"]["frames"] == [256, 512] and row["frames_per_s"] > 0 and "cores" in row["machine"]
    store = out.parent / "results" / "results.json"
    results_table.save_rows(store, results_table.merge_rows([], [row]))
    run.render(results_table.load_rows(store), out=out, headers=False)
    assert "| `ppo_cartpole` | 0 | 512 |" in out.read_text()
    assert (out.parent / "results" / "ppo_cartpole.png").exists()
    with pytest.raises(ValueError, match="differs from preset 'ppo_cartpole'"):  # trained with overrides
        run.adopt("ppo_cartpole", tmp_path / "runs" / "ppo_cartpole-seed0", episodes=10)
    with pytest.raises(FileExistsError, match="exists"):
        run.train_one("ppo_cartpole", 0, runs_dir=tmp_path / "runs", episodes=10, overrides=[])


def test_the_cli_refuses_unknown_presets_and_too_few_episodes(capsys):
    with pytest.raises(SystemExit):
        run.main(["no_such_preset"])
    assert "unknown preset" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run.main(["ppo_cartpole", "--episodes", "3"])
    assert "--episodes must be >= 10" in capsys.readouterr().err


def test_adopt_ignores_the_progress_bar_only(tmp_path, monkeypatch):
    # A run trained with trainer.progress_bar=false trains the same; any other difference is still refused.
    shipped = run.compose_run_config(["preset=sac_pendulum", "seed=1", f"run_dir={tmp_path}"])
    (tmp_path / "summary.json").write_text("{}")
    monkeypatch.setattr(run, "summarise", lambda preset, seed, run_dir, summary, **kw: {"preset": preset, "seed": seed})
    quiet = shipped.copy()
    quiet.trainer.progress_bar = False
    monkeypatch.setattr(run, "load_run_config", lambda run_dir: quiet)
    assert run.adopt("sac_pendulum", tmp_path, episodes=10) == {"preset": "sac_pendulum", "seed": 1}
    quiet.trainer.log_interval = 7
    with pytest.raises(ValueError, match=r"differs from preset 'sac_pendulum' in \['trainer'\]"):
        run.adopt("sac_pendulum", tmp_path, episodes=10)
