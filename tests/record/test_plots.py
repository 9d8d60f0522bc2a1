"""Learning-curve PNGs from CSV run folders."""

from __future__ import annotations

import pytest

from tdrl.record import CSVLogger, load_curve, plot_runs


def _run(tmp_path, name, rows, resumed=()):
    log = CSVLogger("logs", log_dir=str(tmp_path / name))
    for step, value in list(rows) + list(resumed):
        log.log_scalar("r_episode", value, step=step)
        log.log_scalar("wall_time", step / 100, step=step)
    log.experiment.flush()
    return tmp_path / name


def test_resumed_rows_replace_earlier_ones(tmp_path):
    run = _run(tmp_path, "a", [(10, 1.0), (20, 2.0)], resumed=[(20, 5.0), (30, 6.0)])
    curve = load_curve(run)
    assert curve == {"frames": [10, 20, 30], "value": [1.0, 5.0, 6.0], "wall_time": [0.1, 0.2, 0.3]}


def test_plot_overlays_runs(tmp_path):
    a = _run(tmp_path, "a", [(10, 1.0), (20, 2.0)])
    b = _run(tmp_path, "b", [(10, 3.0), (20, 1.0)])
    out = plot_runs([a, b], out=tmp_path / "out" / "c.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert not list((tmp_path / "out").glob("*.tmp.png"))


def test_plot_without_data_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="r_episode"):
        plot_runs([tmp_path / "empty"], out=tmp_path / "x.png")
