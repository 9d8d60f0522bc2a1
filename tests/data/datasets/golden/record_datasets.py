"""Records TorchRL 0.14.1's output on the tiny files of ``dataset_files.py`` (run with the anchor venv).

``~/.cache/torchrl-anchor-venv/bin/python tests/data/datasets/golden/record_datasets.py`` (needs h5py and
minari there). D4RL: TorchRL's direct download is pointed at the local file. Minari: TorchRL reads the local
Minari cache (``load_from_local_minari=True``); only the layout (keys, shapes, dtypes) and the metadata specs
are kept, because TorchRL 0.14.1 fills the rows with zeros (see docs/differences.md).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

import dataset_files as files  # noqa: E402


def layout(td):
    return {"/".join((k,) if isinstance(k, str) else k): [list(v.shape), str(v.dtype)]
            for k, v in td.items(True, True)}


def record_d4rl(tmp: Path) -> None:
    import torchrl.data.datasets.d4rl as d4rl_mod

    for name, kwargs in {"plain": {}, "next_obs": {"with_next_obs": True}, "no_timeouts": {"with_timeouts": False}}.items():
        raw = files.write_d4rl(tmp / f"{name}.hdf5", **kwargs)
        d4rl_mod._download_dataset_from_url = lambda url, path, raw=raw: str(raw)
        out = {}
        for split in (False, True):
            for use_trunc in (True, False):
                root = tmp / f"root-{name}-{split}-{use_trunc}"
                ds = d4rl_mod.D4RLExperienceReplay(files.D4RL_ID, 4, root=root, split_trajs=split,
                                                   use_truncated_as_done=use_trunc)
                data = ds._storage._storage
                out[f"split={split},trunc={use_trunc}"] = {k: v.clone() for k, v in data.items(True, True)}
        torch.save(out, HERE / f"d4rl_{name}.pt")


def record_minari(tmp: Path) -> None:
    from torchrl.data.datasets import MinariExperienceReplay

    cache = tmp / "minari"
    files.write_minari(cache)
    os.environ["MINARI_DATASETS_PATH"] = str(cache)
    ds = MinariExperienceReplay(files.MINARI_ID, 4, root=tmp / "mroot", load_from_local_minari=True)
    split = MinariExperienceReplay(files.MINARI_ID, 4, root=tmp / "mroot", split_trajs=True, download=False)
    meta = ds.metadata
    out = {
        "layout": layout(ds._storage._storage),
        "split_layout": layout(split._storage._storage),
        "sample_keys": sorted("/".join((k,) if isinstance(k, str) else k) for k in ds.sample().keys(True, True)),
        "observation_space": [type(meta["observation_space"]).__name__,
                              meta["observation_space"].space.low.tolist(), str(meta["observation_space"].dtype)],
        "action_space": [type(meta["action_space"]).__name__, meta["action_space"].space.high.tolist()],
        "metadata_keys": sorted(meta),
    }
    (HERE / "minari.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def _fetch_from_arff(folder: Path):
    """Stands in for scikit-learn's ``fetch_openml``: the local ARFF file as the frames it would return."""
    import numpy as np
    import pandas as pd
    from scipy.io import arff

    def fetch(name, version=None, return_X_y=False):
        records, meta = arff.loadarff(folder / f"{name}.arff")
        frame = pd.DataFrame(records)
        for col, kind in zip(meta.names(), meta.types()):
            if kind == "nominal":
                values = [v.decode() for v in frame[col]]
                frame[col] = pd.Series([np.nan if v == "?" else v for v in values]).astype("category")
        target = meta.names()[-1]
        return frame.drop(columns=[target]), frame[target]

    return fetch


def record_openml(tmp: Path) -> None:
    import sklearn.datasets
    from torchrl.data.datasets import OpenMLExperienceReplay

    folder = tmp / "arff"
    for table in ("adult", "mushroom", "MagicTelescope"):
        files.write_openml_arff(folder, table)
    sklearn.datasets.fetch_openml = _fetch_from_arff(folder)
    out = {}
    for name in ("adult_num", "adult_onehot", "mushroom_num", "mushroom_onehot", "magic"):
        ds = OpenMLExperienceReplay(name, 3, root=tmp / "openml-root")
        data = ds._storage._storage
        out[name] = {"X": data["X"].clone(), "y": data["y"].clone(), "max_outcome_val": ds.max_outcome_val}
    torch.save(out, HERE / "openml.pt")


def record_atari(tmp: Path) -> None:
    """TorchRL's processing of one local checkpoint (its download step is a gsutil call, left out)."""
    import glob

    from torchrl.data.datasets.atari_dqn import AtariDQNExperienceReplay, _AtariStorage

    logs = files.write_atari_dqn(tmp / "atari-raw" / "dqn", steps=7)
    runs = AtariDQNExperienceReplay._list_runs(None, sorted(glob.glob(str(logs / "*.gz"))))
    out = tmp / "atari-root" / "Pong/5"
    AtariDQNExperienceReplay._preproc_run(out / "0", runs, 0)
    rows = _AtariStorage(out).get(torch.arange(7))
    torch.save({"rows": {k: v.clone() for k, v in rows.exclude("metadata").items(True, True)},
                "metadata": rows["metadata"], "episodes": _AtariStorage(out).episodes.clone()}, HERE / "atari_dqn.pt")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        record_d4rl(Path(tmp))
        record_minari(Path(tmp))
        record_openml(Path(tmp))
        record_atari(Path(tmp))
