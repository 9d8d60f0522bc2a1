"""Tiny dataset files in the on-disk formats of Minari, D4RL, OpenML and the DQN Atari replay.

Shared by the tests (built in ``tmp_path``) and by ``golden/record_datasets.py``, which points TorchRL 0.14.1 at
the same files. Only numpy, h5py and the standard library are used, so the files do not depend on tdrl.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

MINARI_ID = "tdrl/pendulum/tiny-v0"
D4RL_ID = "hopper-medium-v2"
# Episode lengths of the Minari file: the second one ends by termination, the others by truncation.
MINARI_LENGTHS = (5, 3, 4)


def _box(low: list[float], high: list[float], dtype: str = "float32") -> str:
    return json.dumps({"type": "Box", "dtype": dtype, "shape": [len(low)], "low": low, "high": high})


def write_minari(minari_root: Path, dataset_id: str = MINARI_ID, *, dict_obs: bool = False) -> Path:
    """Writes ``<minari_root>/<dataset_id>/data/{main_data.hdf5,metadata.json}`` as Minari's HDF5 storage does."""
    import h5py

    data_dir = Path(minari_root) / dataset_id / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    with h5py.File(data_dir / "main_data.hdf5", "w", track_order=True) as file:
        for ep, steps in enumerate(MINARI_LENGTHS):
            group = file.create_group(f"episode_{ep}")
            group.attrs["id"] = ep
            group.attrs["seed"] = ep
            group.attrs["total_steps"] = steps
            obs = rng.standard_normal((steps + 1, 3)).astype(np.float32)
            if dict_obs:
                sub = group.create_group("observations")
                sub.create_dataset("observation", data=obs)
                sub.create_dataset("achieved_goal", data=obs[:, :2] * 2)
            else:
                group.create_dataset("observations", data=obs)
            group.create_dataset("actions", data=rng.uniform(-2, 2, (steps, 1)).astype(np.float32))
            group.create_dataset("rewards", data=rng.standard_normal(steps))
            terminations = np.zeros(steps, dtype=bool)
            truncations = np.zeros(steps, dtype=bool)
            (terminations if ep == 1 else truncations)[-1] = True
            group.create_dataset("terminations", data=terminations)
            group.create_dataset("truncations", data=truncations)
            infos = group.create_group("infos")
            infos.create_dataset("success", data=np.arange(steps + 1) % 2 == 0)
            infos.create_dataset("x_position", data=rng.standard_normal(steps + 1))
    obs_space = _box([-1.0] * 3, [1.0] * 3)
    if dict_obs:
        obs_space = json.dumps(
            {
                "type": "Dict",
                "subspaces": {
                    "achieved_goal": json.loads(_box([-2.0] * 2, [2.0] * 2)),
                    "observation": json.loads(obs_space),
                },
            }
        )
    metadata = {
        "total_episodes": len(MINARI_LENGTHS),
        "total_steps": sum(MINARI_LENGTHS),
        "data_format": "hdf5",
        "jpeg_encoding": True,
        "observation_space": obs_space,
        "action_space": _box([-2.0], [2.0]),
        "dataset_id": dataset_id,
        "algorithm_name": "random",
        "author": ["tdrl"],
        "author_email": ["tdrl@example.com"],
        "code_permalink": "https://example.com",
        "minari_version": "0.5.4",
        "dataset_size": 0.01,
        "description": "tiny test dataset",
        "requirements": [],
        "env_spec": None,
        "eval_env_spec": None,
        "ref_min_score": None,
        "ref_max_score": None,
        "num_episodes_average_score": None,
    }
    (data_dir / "metadata.json").write_text(json.dumps(metadata))
    return data_dir


def write_d4rl(path: Path, *, n: int = 12, with_timeouts: bool = True, with_next_obs: bool = False) -> Path:
    """Writes a D4RL-style HDF5 file: flat ``observations``/``actions``/``rewards``/``terminals``/``timeouts``."""
    import h5py

    rng = np.random.default_rng(1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    terminals = np.zeros(n, dtype=bool)
    terminals[4] = True
    timeouts = np.zeros(n, dtype=bool)
    timeouts[8] = True
    obs = rng.standard_normal((n, 4)).astype(np.float32)
    with h5py.File(path, "w") as file:
        file.create_dataset("observations", data=obs)
        if with_next_obs:
            file.create_dataset("next_observations", data=np.roll(obs, -1, 0) + 0.5)
        file.create_dataset("actions", data=rng.uniform(-1, 1, (n, 2)).astype(np.float32))
        file.create_dataset("rewards", data=rng.standard_normal(n).astype(np.float32))
        file.create_dataset("terminals", data=terminals)
        if with_timeouts:
            file.create_dataset("timeouts", data=timeouts)
        file.create_dataset("infos/qpos", data=rng.standard_normal((n, 3)))
        file.create_dataset("metadata/algorithm", data="SAC")
        file.create_dataset("metadata/policy/fc0/weight", data=rng.standard_normal((2, 2)).astype(np.float32))
    return path


def write_openml_arff(root: Path, name: str) -> Path:
    """Writes ``<root>/<name>.arff`` shaped like OpenML's ``adult``, ``mushroom`` or ``MagicTelescope``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    if name == "adult":
        attrs = ["age NUMERIC", "workclass {Private,'Self-emp',Gov}", "'fnlwgt' REAL",
                 "occupation {Sales,'Tech-support',Craft}", "hours INTEGER", "class {'>50K','<=50K'}"]
        rows = []
        for i in range(12):
            occupation = "?" if i == 5 else ["Sales", "'Tech-support'", "Craft"][i % 3]
            workclass = ["Private", "'Self-emp'", "Gov"][(i * 7) % 3]
            rows.append(f"{20 + 3 * i},{workclass},{rng.uniform(1e4, 1e5):.2f},{occupation},"
                        f"{int(rng.integers(10, 60))},{['>50K', '<=50K'][i % 2]!r}")
    elif name == "mushroom":
        attrs = ["cap-shape {b,c,x}", "odor {a,n,p,s}", "class {e,p}"]
        rows = [f"{'bcx'[i % 3]},{'anps'[(i * 5) % 4]},{'ep'[i % 2]}" for i in range(10)]
    elif name == "MagicTelescope":
        attrs = ["fLength NUMERIC", "fWidth REAL", "'fSize' numeric", "class {g,h}"]
        rows = []
        for i in range(10):
            a, b, c = rng.standard_normal(3) * [10, 3, 1] + [20, 5, 2]
            rows.append(f"{a:.4f}, {b:.4f}, {c:.4f}, {'gh'[i % 3 == 0]}")
    else:
        raise ValueError(name)
    lines = ["% tiny test file", f"@RELATION {name}", ""] + [f"@ATTRIBUTE {a}" for a in attrs]
    path = root / f"{name}.arff"
    path.write_text("\n".join(lines + ["", "@DATA", *rows]) + "\n")
    return path


def write_atari_dqn(root: Path, dataset_id: str = "Pong/5", *, steps: int = 7) -> Path:
    """Writes one DQN-replay checkpoint: ``<root>/<game>/<run>/replay_logs/$store$_<key>_ckpt.0.gz`` files."""
    game, run = dataset_id.split("/")
    logs = Path(root) / game / run / "replay_logs"
    logs.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    arrays = {
        "observation": rng.integers(0, 255, (steps, 84, 84), dtype=np.uint8),
        "action": rng.integers(0, 6, steps).astype(np.int32),
        "reward": rng.standard_normal(steps).astype(np.float32),
        "terminal": (np.arange(steps) % 4 == 3).astype(np.uint8),
    }
    for key, array in arrays.items():
        with gzip.open(logs / f"$store$_{key}_ckpt.0.gz", "wb") as file:
            np.save(file, array, allow_pickle=False)
    return logs
