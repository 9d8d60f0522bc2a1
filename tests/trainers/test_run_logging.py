"""What a run shows: the progress bar's fields, TensorBoard's grouped tags and HParams, the learning-curve plot."""

from __future__ import annotations

import pytest

from tdrl.record import learning_curve_figure
from tdrl.trainers.algorithms.configs import compose_run_config
from tdrl.trainers.run import train_run
from tdrl.trainers.run_logging import curve_options, progress_text, tensorboard_tag

TINY = ["collector.frames_per_batch=256", "collector.total_frames=768", "trainer.minibatch_size=128",
        "env.num_envs=2", "eval.episodes=1", "eval.max_steps=50", "eval.interval=256", "eval.interval_episodes=1",
        "trainer.save_interval=100000"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("run") / "ppo"
    train_run(compose_run_config([*TINY, f"run_dir={run}"]), progress_bar=False)
    return run


def test_progress_text_has_fixed_width_fields_named_return_and_eval():
    texts = [progress_text({}), progress_text({"r_episode": 9.0}),
             progress_text({"r_episode": -1234.56, "r_eval_periodic": 500.0, "r_eval_best": 500.0})]
    assert len({len(t) for t in texts}) == 1, texts
    assert all(t.startswith("return ") and "| eval " in t and "r_episode" not in t for t in texts)


def test_the_progress_bar_of_a_run_shows_return_and_the_last_evaluation(tmp_path, capsys):
    train_run(compose_run_config([*TINY, "collector.total_frames=512", f"run_dir={tmp_path / 'run'}"]),
              progress_bar=True)
    err = capsys.readouterr().err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("return ") and "| eval " in last and "r_episode" not in err, last
    assert "(best" in last and "eval       -" not in last  # the evaluation at 256 frames is shown


def test_tensorboard_tags_are_grouped_and_hparams_use_the_plugin(run_dir):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = event_accumulator.EventAccumulator(str(run_dir / "tensorboard"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"train/return", "train/reward_per_step", "eval/return", "eval/best_return", "eval/final_return",
            "time/wall_clock_s", "time/trainer/optim"} <= tags, sorted(tags)
    assert all(t.split("/", 1)[0] in ("train", "eval", "time") for t in tags), sorted(tags)
    assert [e.step for e in acc.Scalars("eval/return")] == [256, 512, 768]
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = start.session_start_info.hparams
    assert hparams["algo"].string_value == "ppo" and hparams["optim.lr"].number_value > 0
    assert "hparams" not in set(acc.Tags().get("tensors", []))  # no text blob


def test_tensorboard_tag_names_what_r_training_is():
    assert tensorboard_tag("r_training") == "train/reward_per_step"


def test_learning_curve_has_labels_title_smoothing_evaluations_and_solved_line(run_dir):
    fig = learning_curve_figure([run_dir], key="r_episode", **curve_options([run_dir], "r_episode"))
    ax = fig.axes[0]
    assert fig._suptitle.get_text() == "ppo on CartPole-v1, seed 0"
    assert ax.get_xlabel() == "frames" and ax.get_ylabel() == "episode return (training)"
    raw, smoothed, evals = ax.lines[0], ax.lines[1], ax.lines[2]
    assert raw.get_alpha() == 0.25 and smoothed.get_alpha() is None and smoothed.get_color() == raw.get_color()
    assert list(raw.get_ydata()) != list(smoothed.get_ydata()) or len(raw.get_ydata()) < 10
    assert evals.get_marker() == "o" and list(evals.get_xdata()) == [256, 512, 768]
    solved = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(solved) == 1 and list(solved[0].get_ydata()) == [475.0, 475.0]
    assert fig.axes[1].get_xlabel() == "wall time (s)"
    assert (run_dir / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_curve_options_of_an_env_without_threshold():
    assert curve_options([], "r_episode")["solved"] is None
