"""The ``tdrl`` command answers help, parsing and validation without loading torch (latency: benchmarks/cli_latency.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tdrl.trainers.algorithms.configs.presets import compose_run_config
from tdrl.trainers.cli import COMMANDS, main
from tdrl.trainers.commands.presets import read_results

HEAVY = ("torch", "tensordict", "gymnasium", "matplotlib", "wandb")
_LOADED = "import sys; print(sorted(m for m in {heavy} if m in sys.modules))"


def _python(code: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _loaded_after(statement: str, cwd=None) -> list[str]:
    out = _python(f"{statement}\n{_LOADED.format(heavy=HEAVY)}", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list


@pytest.mark.integration
def test_importing_the_cli_loads_nothing_heavy():
    assert _loaded_after("import tdrl.trainers.cli, tdrl") == []


@pytest.mark.integration
def test_help_and_a_rejected_config_load_nothing_heavy(tmp_path):
    code = ("from tdrl.trainers.cli import main\n"
            "for argv in (['--help'], ['train', '--help'], ['eval', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "assert main(['train', 'optim.lr=fast']) == 2 and main(['train', 'algo=spc']) == 2")
    assert _loaded_after(code, cwd=tmp_path) == []
    assert not list(tmp_path.iterdir())  # no run folder


@pytest.mark.integration
def test_print_config_validates_without_torch_and_writes_nothing(tmp_path):
    code = "from tdrl.trainers.cli import main\nassert main(['train', 'algo=dqn', 'env=Acrobot-v1', '--print-config']) == 0"
    assert "torch" not in _loaded_after(code, cwd=tmp_path)  # gymnasium loads: the env id is checked
    assert not list(tmp_path.iterdir())


def test_print_config_prints_the_resolved_preset(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "algo=dqn", "env=Acrobot-v1", "--print-config"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# resolved config: preset dqn_cartpole, overrides: algo=dqn env=Acrobot-v1")
    for line in ("algo: dqn", "  name: Acrobot-v1", "  optim_steps_per_batch: 128", "  save_interval: 10240", "  buffer_size:", "  tau:"):
        assert f"\n{line}" in out, line
    assert not list(tmp_path.iterdir())


def test_train_help_shows_each_key_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for text in ("optim.lr=0.0003  learning rate", "eval.interval_episodes=3", "env.num_envs=1",
                 "replay.batch_size=256", "collector.total_frames=(required)", "--print-config"):
        assert text in out, text


@pytest.mark.parametrize(("override", "hint"), [
    ("algo=spc", "Did you mean 'sac'?"),
    ("preset=ppo_cartpol", "Did you mean 'ppo_cartpole'?"),
    ("env=Cartpole-v1", "Did you mean 'CartPole-v1'"),
    ("optim.lrr=0.1", "Did you mean optim.'lr'?"),
])
def test_did_you_mean(capsys, tmp_path, override, hint):
    assert main(["train", override, f"run_dir={tmp_path / 'run'}"]) == 2
    assert hint in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_every_registered_command_is_listed(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for module in COMMANDS:
        name = module.rpartition(".")[2]
        assert {"evaluate": "eval"}.get(name, name) in out


def test_presets_reads_the_results_table(capsys, tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# results\n\n| preset | seed | frames | return | wall-clock (s) |\n|---|---|---|---|---|\n"
                       "| `ppo_cartpole` | 0 | 204,800 | 500.0 +- 0.0 (10) | 61 |\n"
                       "| `ppo_cartpole` | 1 | 204,800 | 490.0 +- 3.0 (10) | 59 |\n")
    assert main(["presets", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("ppo_cartpole"))
    frames = f"{compose_run_config(['preset=ppo_cartpole']).collector.total_frames:,}"  # the preset's, not the table's
    assert row.split()[-3:] == ["495.0", "60", "s"] and "CartPole-v1" in row and frames in row
    sac = next(line for line in out.splitlines() if line.startswith("sac_pendulum"))
    assert sac.split()[-2:] == ["-", "-"] and "no measured row" in out


def test_presets_without_a_results_file_says_so(capsys, tmp_path):
    assert main(["presets", "--results", str(tmp_path / "absent.md")]) == 0
    out = capsys.readouterr().out
    assert "absent.md not found" in out and "ppo_cartpole" in out


def test_read_results_ignores_tables_without_return_and_time():
    assert read_results("| preset | gate |\n|---|---|\n| `a` | x |\n") == {}
