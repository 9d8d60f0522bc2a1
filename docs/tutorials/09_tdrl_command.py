"""The tdrl command, presets and configs

`tdrl train` trains an algorithm from a preset (a YAML file composed against the structured configs) with
`KEY=VALUE` overrides, validates the whole config before it builds anything, and writes a run folder. This
tutorial drives the command from Python with `subprocess`, as a shell would; every command here also runs
as written in a terminal (drop the `tdrl(...)` wrapper).
"""

# %%
# ## Presets
# `tdrl presets` lists the presets with the return and wall-clock time `benchmarks/learning/run.py`
# measured for them (`docs/results.md`). `algo=` and `env=` pick one (`algo=dqn` is `dqn_cartpole`).
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"


def tdrl(*args: str) -> str:
    """`tdrl ARGS` (the console script runs this same module), its output as text."""
    out = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True)
    return out.stdout + out.stderr


print(tdrl("presets"))

# %%
# ## The resolved config
# `--print-config` composes the preset, applies the overrides, validates the result (types, ranges,
# `frames_per_batch` divisible by `num_envs`, ...) and prints it without creating anything. Here: DQN on
# Acrobot with another learning rate; only the first lines are shown.
config = tdrl("train", "algo=dqn", "env=Acrobot-v1", "optim.lr=5e-4", "--print-config")
print("\n".join(config.splitlines()[:14]))

# %%
# ## Mistakes are caught before any work
# A misspelt key gets the closest valid one, a value of the wrong type names the key and what it expects,
# and a config that fails validation leaves no run folder behind.
print(tdrl("train", "optim.lr=fast").strip().splitlines()[-1])
print(tdrl("train", "colector.total_frames=1000").strip().splitlines()[-1])
print(tdrl("train", "env.num_envs=3", "collector.frames_per_batch=1024").strip().splitlines()[-1])

# %%
# ## A run and its folder
# A short PPO CartPole run (a few thousand frames; the preset trains for 99,840): the folder holds the
# config as run, metrics (CSV and TensorBoard), checkpoints (`checkpoint.pt`, `best.pt` from the periodic
# evaluation), a learning-curve PNG and `summary.json`.
work = Path(tempfile.mkdtemp())
frames = 1024 if TINY else 8192
run_dir = work / "cartpole"
tdrl("train", f"collector.total_frames={frames}", "eval.episodes=2", "eval.interval=512",
     "eval.interval_episodes=1", f"run_dir={run_dir}", "--no-progress")
summary = json.loads((run_dir / "summary.json").read_text())
print({k: summary[k] for k in ("frames", "eval_policy", "eval_return_mean", "wall_time_s")})
print(sorted(p.name for p in run_dir.iterdir()))

# %%
# ## A YAML of your own
# A config file holds every section (a preset is one); the simplest way to write one is to save a resolved
# config and edit it. `--config-path`/`--config-name` load it, and overrides still apply on top.
(work / "mine.yaml").write_text(tdrl("train", "env.num_envs=4", "--print-config"))
mine = tdrl("train", "--config-path", str(work), "--config-name", "mine", "optim.lr=5e-4", "--print-config")
print("\n".join(line for line in mine.splitlines() if line.startswith("#") or line.strip().startswith(("lr:", "num_envs:"))))
