"""Resume, evaluate, load and export a policy

What happens after `tdrl train`: continuing a run from its last checkpoint, evaluating it (and knowing
which policy was evaluated), loading the policy into your own program, and exporting it as a file that
runs without tdrl.
"""

# %%
# ## A run to work with
# A short PPO CartPole run with a periodic evaluation, so that the folder keeps `best.pt` (the best
# evaluated policy) beside `checkpoint.pt` (the last state, from which a run resumes). `tdrl_cli` runs the
# command as a shell would.
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import tdrl

TINY = os.environ.get("TDRL_TUTORIAL_TINY") == "1"
FRAMES = 1024 if TINY else 8192


def tdrl_cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tdrl.trainers.cli", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout


run_dir = Path(tempfile.mkdtemp()) / "cartpole"
train = ["train", f"collector.total_frames={FRAMES}", "eval.episodes=2", "eval.interval=512",
         "eval.interval_episodes=1", f"run_dir={run_dir}", "--no-progress"]

# %%
# ## Stop it, then resume
# The run is interrupted as a Ctrl-C would (SIGINT) once its first evaluation has written `best.pt`: it
# finishes the current step, writes `checkpoint.pt` and its summary, and exits with status 130.
# `tdrl resume RUN_DIR` rebuilds the run from its `config.yaml` and continues from `checkpoint.pt` (model,
# optimiser, collector and RNG states, the replay buffer of off-policy runs) to the configured length.
proc = subprocess.Popen([sys.executable, "-m", "tdrl.trainers.cli", *train], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 300
while not (run_dir / "best.pt").exists() and proc.poll() is None and time.monotonic() < deadline:
    time.sleep(0.2)
proc.send_signal(signal.SIGINT)
print("interrupted run exited with", proc.wait(timeout=300))
stopped = json.loads((run_dir / "summary.json").read_text())
print("frames when stopped:", stopped["frames"], "| interrupted:", stopped["interrupted"])
tdrl_cli("resume", str(run_dir), "--no-progress")
print("frames after resume:", json.loads((run_dir / "summary.json").read_text())["frames"])
print(tdrl_cli("resume", str(run_dir)).strip())  # a finished run: nothing to do, and it says so

# %%
# ## Evaluate
# `tdrl eval` plays deterministic episodes and says which policy it evaluated: `--policy best` (the
# default: `best.pt`) or `--policy last` (`checkpoint.pt`). `--json` adds the figures as a last line of JSON.
print(tdrl_cli("eval", str(run_dir), "--episodes", "3").strip())
last = tdrl_cli("eval", str(run_dir), "--episodes", "3", "--policy", "last", "--json")
print(json.loads(last.splitlines()[-1]))

# %%
# ## Load it in your own program
# `tdrl.load_policy` returns a module from observations to actions in the env's own format (an action
# index for CartPole, as gymnasium expects), one observation or a batch.
import gymnasium as gym  # noqa: E402

policy = tdrl.load_policy(run_dir)
env = gym.make("CartPole-v1")
obs, _ = env.reset(seed=0)
total, done = 0.0, False
while not done:
    obs, reward, terminated, truncated, _ = env.step(int(policy(obs)))
    total, done = total + reward, terminated or truncated
print("episode return in plain gymnasium:", total, "| batch of 8:", tuple(policy(torch.zeros(8, 4)).shape))

# %%
# ## Export it
# `tdrl export` writes the deterministic policy as a standalone file: `exported-program` (`torch.export`,
# the successor of TorchScript), `torchscript`, or `onnx` (extra `export`). Loading it needs torch only.
out = run_dir / "policy.pt2"
tdrl_cli("export", str(run_dir), "--format", "exported-program", "--out", str(out))
exported = torch.export.load(str(out)).module()
obs = torch.randn(5, 4)
print("exported actions:", exported(obs).tolist(), "| same as load_policy:",
      torch.equal(exported(obs), policy(obs)))
