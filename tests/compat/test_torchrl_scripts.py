"""TorchRL's own tutorials and multi-agent sota scripts (pytorch/rl) run on tdrl after the import swap.

They are TorchRL's text and are not copied into this repository: point ``TORCHRL_TUTORIALS_DIR`` at a checkout's
``tutorials/sphinx-tutorials`` folder and ``TORCHRL_SOTA_DIR`` at its ``sota-implementations`` folder (the
tests skip without them). A tutorial run rewrites ``torchrl`` to ``tdrl`` and changes only budget assignments
(``frames_per_batch = ...``: top-level lines, by name); a sota run copies ``multiagent/`` (script, YAML, ``utils/``)
with the same rewrite and passes Hydra overrides that only shrink the budget. Each runs in a fresh interpreter
with a non-interactive matplotlib backend. ``python tests/compat/test_torchrl_scripts.py NAME --torchrl`` runs
the same budget on TorchRL (no swap) with the interpreter that runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"  # the tdrl under test

# tutorial -> {top-level variable: tiny value (source text)}
BUDGETS: dict[str, dict[str, str]] = {
    "multiagent_ppo": {
        "frames_per_batch": "120",
        "n_iters": "2",
        "num_epochs": "1",
        "minibatch_size": "60",
        "max_steps": "20",
    },
    "multiagent_competitive_ddpg": {
        "frames_per_batch": "100",
        "n_iters": "2",
        "memory_size": "1_000",
        "n_optimizer_steps": "2",
        "train_batch_size": "16",
        "max_steps": "10",
    },
}
NEEDS = {"multiagent_ppo": ("vmas",), "multiagent_competitive_ddpg": ("vmas", "tqdm", "matplotlib")}


# case -> (multi-agent sota script, Hydra overrides (budget only: frames, iterations, epochs, batch sizes, eval envs)
_SOTA_COMMON = (
    "collector.frames_per_batch=40", "collector.n_iters=2", "env.max_steps=10", "train.num_epochs=1",
    "train.minibatch_size=20", "eval.evaluation_episodes=2", "eval.evaluation_interval=1",
)
SOTA: dict[str, tuple[str, tuple[str, ...]]] = {
    "mappo_ippo": ("mappo_ippo", _SOTA_COMMON),
    "ippo": ("mappo_ippo", (*_SOTA_COMMON, "model.centralised_critic=false")),
    "maddpg_iddpg": ("maddpg_iddpg", _SOTA_COMMON),
    "iql": ("iql", _SOTA_COMMON),
    "qmix": ("qmix_vdn", _SOTA_COMMON),
    "vdn": ("qmix_vdn", (*_SOTA_COMMON, "loss.mixer_type=vdn")),
    "sac": ("sac", _SOTA_COMMON),
    "sac_discrete": ("sac", (*_SOTA_COMMON, "env.continuous_actions=false")),
}


def _folder(var: str) -> Path | None:
    value = os.environ.get(var)
    return Path(value) if value and Path(value).is_dir() else None


def tutorials_dir() -> Path | None:
    return _folder("TORCHRL_TUTORIALS_DIR")


def prepared(name: str, *, swap: bool = True) -> str:
    """The tutorial's text with the budget overrides applied (and ``torchrl`` spelled ``tdrl`` with ``swap``)."""
    folder = tutorials_dir()
    if folder is None:
        raise FileNotFoundError("set TORCHRL_TUTORIALS_DIR to a pytorch/rl checkout's tutorials/sphinx-tutorials")
    source = (folder / f"{name}.py").read_text()
    for var, value in BUDGETS[name].items():
        source, count = re.subn(rf"^{var} = [^\n#]*?(?=\s*(?:#|$))", f"{var} = {value}", source, count=1, flags=re.M)
        if count != 1:
            raise ValueError(f"{name}.py has no top-level assignment `{var} = ...` to override")
    return _swap(source) if swap else source


def _swap(text: str) -> str:
    return re.sub(r"\btorchrl\b", "tdrl", text)


def _environ(swap: bool) -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    if swap:  # the tdrl under test, whatever the working directory
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def run(name: str, workdir: Path, *, swap: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """Runs tutorial ``name`` (budget overridden) in ``workdir``."""
    script = workdir / f"{name}.py"
    script.write_text(prepared(name, swap=swap))
    return subprocess.run(
        [sys.executable, str(script)], cwd=workdir, env=_environ(swap), capture_output=True, text=True,
        timeout=timeout,
    )


def run_sota(name: str, workdir: Path, *, swap: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """Runs multi-agent sota case ``name`` (see ``SOTA``) from a rewritten copy of ``multiagent/``, with CSV logging."""
    source = _folder("TORCHRL_SOTA_DIR")
    if source is None:
        raise FileNotFoundError("set TORCHRL_SOTA_DIR to a pytorch/rl checkout's sota-implementations")
    copy = workdir / "multiagent"
    for path in (source / "multiagent").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".yaml"):
            target = copy / path.relative_to(source / "multiagent")
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text()
            target.write_text(_swap(text) if swap else text)
    script, budget = SOTA[name]
    overrides = [*budget, "logger.backend=csv", f"hydra.run.dir={workdir / 'run'}"]
    return subprocess.run(
        [sys.executable, f"{script}.py", *overrides], cwd=copy, env=_environ(swap), capture_output=True, text=True,
        timeout=timeout,
    )


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_tutorial_runs_after_the_import_swap(name: str, tmp_path: Path) -> None:
    if tutorials_dir() is None:
        pytest.skip("TORCHRL_TUTORIALS_DIR is not set (a pytorch/rl checkout's tutorials/sphinx-tutorials)")
    for module in NEEDS[name]:
        pytest.importorskip(module)
    proc = run(name, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "torchrl" not in proc.stderr, proc.stderr[-3000:]
    iters = BUDGETS[name]["n_iters"]
    assert f"{iters}/{iters}" in proc.stderr, proc.stderr[-3000:]  # tqdm's bar went through every iteration


def test_budget_overrides_and_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "multiagent_ppo.py").write_text(
        "from torchrl.envs import VmasEnv\nframes_per_batch = 6_000  # frames\nn_iters = 5\nnum_epochs = 30\n"
        "minibatch_size = 400\nmax_steps = 100\ntotal = frames_per_batch * n_iters\n"
    )
    monkeypatch.setenv("TORCHRL_TUTORIALS_DIR", str(tmp_path))
    text = prepared("multiagent_ppo")
    assert text.startswith("from tdrl.envs import VmasEnv\nframes_per_batch = 120  # frames\nn_iters = 2\n")
    assert "total = frames_per_batch * n_iters" in text and "torchrl" not in text
    assert "from torchrl.envs" in prepared("multiagent_ppo", swap=False)
    (tmp_path / "multiagent_ppo.py").write_text("frames_per_batch = 10\n")
    with pytest.raises(ValueError, match="`n_iters = ...`"):
        prepared("multiagent_ppo")


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(SOTA))
def test_multiagent_sota_script_runs_after_the_import_swap(name: str, tmp_path: Path) -> None:
    folder = _folder("TORCHRL_SOTA_DIR")
    if folder is None:
        pytest.skip("TORCHRL_SOTA_DIR is not set (a pytorch/rl checkout's sota-implementations)")
    script = SOTA[name][0]
    if not (folder / "multiagent" / f"{script}.py").is_file():
        pytest.skip(f"{script}.py is not in {folder / 'multiagent'}")
    for module in ("vmas", "hydra"):
        pytest.importorskip(module)
    proc = run_sota(name, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "Iteration 1" in proc.stdout + proc.stderr  # both iterations of the budget ran
    scalars = list((tmp_path / "run").rglob("train_total_frames.csv"))
    assert scalars, "no CSV log written"


if __name__ == "__main__":
    runner = run_sota if sys.argv[1] in SOTA else run
    result = runner(sys.argv[1], Path.cwd(), swap="--torchrl" not in sys.argv)
    print(result.stdout[-3000:], result.stderr[-6000:], f"rc={result.returncode}")
    sys.exit(result.returncode)
