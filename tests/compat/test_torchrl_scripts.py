"""TorchRL's multi-agent sota scripts (pytorch/rl's ``sota-implementations/multiagent``) run on tdrl after the swap.

They are TorchRL's text and are not copied into this repository: point ``TORCHRL_SOTA_DIR`` at a checkout's
``sota-implementations`` folder (the tests skip without it). A run copies ``multiagent/`` (script, YAML, ``utils/``)
with ``torchrl`` rewritten to ``tdrl`` and passes Hydra overrides that only shrink the budget, in a fresh
interpreter with a non-interactive matplotlib backend. ``python tests/compat/test_torchrl_scripts.py NAME --torchrl``
runs the same budget on TorchRL (no swap). TorchRL's tutorials run through ``benchmarks/torchrl_programs.py``
(budgets in ``benchmarks/torchrl_programs_overrides.toml``; the table in ``docs/migrating-from-torchrl.md``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"  # the tdrl under test

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


def _swap(text: str) -> str:
    return re.sub(r"\btorchrl\b", "tdrl", text)


def _environ(swap: bool) -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    if swap:  # the tdrl under test, whatever the working directory
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


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
    result = run_sota(sys.argv[1], Path.cwd(), swap="--torchrl" not in sys.argv)
    print(result.stdout[-3000:], result.stderr[-6000:], f"rc={result.returncode}")
    sys.exit(result.returncode)
