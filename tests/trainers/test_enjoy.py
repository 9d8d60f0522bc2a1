"""``tdrl enjoy``: a run's policy plays episodes rendered into a decodable MP4/GIF with one frame per step."""

from __future__ import annotations

import re

import pytest
from PIL import Image

from tdrl.trainers.cli import main
from tdrl.trainers.enjoy import enjoy_run

from ._runs import tdrl

pytestmark = pytest.mark.integration


def _printed_lengths(stdout: str) -> list[int]:
    return [int(n) for n in re.findall(r"episode \d+: return [\d.]+ \((\d+) steps\)", stdout)]


def test_enjoy_writes_an_mp4_with_one_frame_per_step_and_each_reset(cartpole_run, tmp_path):
    av = pytest.importorskip("av", reason="MP4 videos need PyAV (extra 'video')")
    out_file = tmp_path / "clip.mp4"
    out = tdrl("enjoy", str(cartpole_run), "--episodes", "2", "--video", str(out_file))
    assert out.returncode == 0, out.stderr[-2000:]
    lengths = _printed_lengths(out.stdout)
    assert len(lengths) == 2 and all(n > 0 for n in lengths), out.stdout
    expected = sum(lengths) + 2  # each episode's reset frame, then one per step
    assert f"wrote {out_file} ({expected} frames)" in out.stdout
    with av.open(str(out_file)) as container:
        stream = container.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        assert int(stream.average_rate) == 50  # CartPole's render_fps
    assert len(frames) == expected
    assert frames[0].shape == (400, 600, 3) and frames[0].std() > 0  # the rendered cart, not a blank frame
    # CartPole pays 1 per step: the printed return is the episode length
    assert re.findall(r"return ([\d.]+)", out.stdout)[:2] == [f"{n:.2f}" for n in lengths]


def test_enjoy_writes_a_gif_whose_duration_covers_every_frame(cartpole_run, tmp_path):
    result = enjoy_run(cartpole_run, episodes=1, video=tmp_path / "clip.gif", fps=20, max_steps=30)
    assert result.frames == result.lengths[0] + 1 and result.lengths[0] <= 30
    gif = Image.open(result.video)
    durations = []
    for i in range(gif.n_frames):
        gif.seek(i)
        durations.append(gif.info["duration"])
    # Pillow merges identical consecutive frames into one longer frame: the total time is what counts.
    assert sum(durations) == result.frames * 50
    assert gif.size == (600, 400)


def test_enjoy_without_video_plays_only(cartpole_run, tmp_path):
    result = enjoy_run(cartpole_run, episodes=3, record=False, which="last")
    assert result.video is None and result.frames == 0 and len(result.returns) == 3
    assert result.returns == [float(n) for n in result.lengths]


def test_enjoy_errors_exit_2_and_write_nothing(cartpole_run, tmp_path, capsys):
    assert main(["enjoy", str(tmp_path / "missing")]) == 2  # the command's own error path, in process
    assert f"tdrl enjoy: error: no run folder at {tmp_path / 'missing'}" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"VideoWriter writes .mp4 or .gif files, got '.*clip.avi'"):
        enjoy_run(cartpole_run, video=tmp_path / "clip.avi")
    with pytest.raises(ValueError, match="episodes must be >= 1, got 0"):
        enjoy_run(cartpole_run, episodes=0)
    assert list(tmp_path.iterdir()) == []
