"""``tdrl train --seeds`` (one after another, or in parallel processes) and ``tdrl compare``."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from tdrl.trainers.cli import main
from tdrl.trainers.commands.compare import parse_seeds
from tdrl.trainers.compare import find_runs, run_stats

from ._runs import TINY_CARTPOLE, tdrl

pytestmark = pytest.mark.integration


def _table_rows(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S.*?(seed_\d+|runs\)))\s+(.*)$", line)
        if m:
            rows[m.group(2)] = m.group(3).split()
    return rows


def _check_seed_runs(parent, seeds, stdout):
    for seed in seeds:
        run = parent / f"seed_{seed}"
        summary = json.loads((run / "summary.json").read_text())
        assert summary["frames"] == 512
        assert f"seed: {seed}" in (run / "config.yaml").read_text()
    rows = _table_rows(stdout)
    assert set(rows) == {*(f"seed_{s}" for s in seeds), "runs)"}, stdout
    first = rows[f"seed_{seeds[0]}"]
    assert first[0] == str(seeds[0]) and first[4] == "512"  # seed, final, best, eval return, frames
    assert Image.open(parent / "compare.png").size[0] > 100
    assert f"wrote {parent / 'compare.png'}" in stdout


def test_seeds_one_after_another_into_one_parent(tmp_path):
    parent = tmp_path / "seeds"
    out = tdrl("train", *TINY_CARTPOLE, f"run_dir={parent}", "seed=7", "--seeds", "0,1", "--no-progress")
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"seeds [0, 1] -> {parent}/seed_<seed> (one after another)" in out.stdout
    _check_seed_runs(parent, [0, 1], out.stdout)
    # different seeds, different runs: the first training returns differ
    curves = [(parent / f"seed_{s}" / "logs" / "scalars" / "r_episode.csv").read_text() for s in (0, 1)]
    assert curves[0] != curves[1]


def test_seeds_in_parallel_processes(tmp_path):
    parent = tmp_path / "par"
    out = tdrl("train", *TINY_CARTPOLE, f"run_dir={parent}", "--seeds", "3,4", "--parallel")
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"seed 3: pid \d+, log .*seed_3.log", out.stdout) and "seed 4: done" in out.stdout
    assert "done: ppo on CartPole-v1" in (parent / "seed_4.log").read_text()
    _check_seed_runs(parent, [3, 4], out.stdout)


def test_seeds_validate_before_any_folder(tmp_path, capsys):
    parent = tmp_path / "bad"
    assert main(["train", "optim.lr=fast", f"run_dir={parent}", "--seeds", "0,1"]) == 2
    assert "optim.lr=fast: expected a float" in capsys.readouterr().err
    assert main(["train", f"run_dir={parent}", "--seeds", "0,x"]) == 2
    assert "--seeds expects comma-separated integers such as 0,1,2, got '0,x'" in capsys.readouterr().err
    assert not parent.exists()
    (parent / "seed_1").mkdir(parents=True)
    assert main(["train", f"run_dir={parent}", "--seeds", "0,1"]) == 2
    assert "seed_1 already exist: pick another run_dir=" in capsys.readouterr().err
    with pytest.raises(ValueError, match="distinct"):
        parse_seeds("1,1")


def test_compare_runs_and_folders_of_runs(cartpole_run, tmp_path, capsys):
    out_png = tmp_path / "cmp.png"
    assert main(["compare", str(cartpole_run.parent), str(cartpole_run), "--out", str(out_png)]) == 0
    stdout = capsys.readouterr().out
    lines = stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "seed", "final"] and "frames" in lines[0] and "time" in lines[0]
    assert sum(str(cartpole_run) in line for line in lines) == 2
    assert "mean +- std (2 runs)" in stdout and f"wrote {out_png}" in stdout
    stats = run_stats(cartpole_run)
    assert stats.finished and stats.frames == 512 and stats.best_return >= stats.final_return > 0
    assert Image.open(out_png).size[0] > 100


def test_compare_reads_an_unfinished_run_from_its_logs(cartpole_run, tmp_path):
    import shutil

    run = tmp_path / "running"
    shutil.copytree(cartpole_run, run)
    (run / "summary.json").unlink()
    stats = run_stats(run)
    done = run_stats(cartpole_run)
    assert not stats.finished and stats.frames == done.frames and stats.best_return == done.best_return
    assert stats.final_return == done.final_return and stats.time_s is not None


def test_compare_errors_name_the_path(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("")
    assert main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} is neither a run folder (no config.yaml) nor a folder of runs; it holds: x.txt" in err
    with pytest.raises(FileNotFoundError, match="no run folder at"):
        find_runs([tmp_path / "missing"])
