"""No code runs from a data file: a malicious pickle planted in each load path is refused and never executed.

Each planted payload, if unpickled, creates a marker file (``open(marker, "w")``); every test asserts the
load fails with a clear error *and* the marker does not exist. Load paths: ``ReplayBuffer.loads`` / ``load``
(format-1 memmap folders with a pickled non-tensor leaf, the attack of issue 13, and format-2 folders),
``Storage.loads`` of every storage, transform and sampler states, trainer checkpoints (``load_checkpoint``,
``tdrl resume``, ``tdrl eval``), offline datasets (``load_dataset`` and ``tdrl train algo=cql
dataset.path=...``), and config files (YAML tags and Hydra ``_target_``).
"""

from __future__ import annotations

import json
import pickle
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from tensordict import TensorDict

import tdrl.data as data
from tdrl._utils.safe_files import CheckpointError
from tdrl.data.replay_buffers import checkpointers
from tdrl.trainers.algorithms.configs.presets import compose_run_config as compose_config
from tdrl.trainers.algorithms.configs.safe_targets import (
    UnsafeTargetError,
    allow_any_target,
    check_targets,
    safe_instantiate,
)
from tdrl.trainers.checkpoint import load_checkpoint
from tdrl.trainers.cli import main as cli_main
from tdrl.trainers.datasets import DatasetError, load_dataset


class _Payload:
    """Unpickling this object creates the file ``marker``: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "PWNED"


def _format1_buffer(root: Path, marker: Path) -> Path:
    """A buffer checkpoint laid out as main at 6c19787 wrote it, whose storage holds a pickled leaf."""
    snap = root / "ckpt-0123456789ab"
    td = TensorDict({"obs": torch.arange(4.0).view(2, 2)}, batch_size=[2])
    td.set_non_tensor("evil", _Payload(marker))
    td.memmap(prefix=str(snap / "storage" / "data"))
    assert (snap / "storage" / "data" / "evil" / "other.pickle").exists()  # tensordict pickled the leaf
    (snap / "storage" / "storage.json").write_text(json.dumps({"initialized": True, "_len": 2, "ndim": 1,
                                                              "is_tensor": False}))
    (snap / "sampler").mkdir()
    (snap / "writer").mkdir()
    (snap / "writer" / "writer.json").write_text(json.dumps({"_cursor": 2, "_write_count": 2}))
    torch.save({}, snap / "transforms.pt")
    (snap / "buffer_metadata.json").write_text(json.dumps({"batch_size": 2, "type": "TensorDictReplayBuffer"}))
    (root / "LATEST").write_text(json.dumps({"current": snap.name}))
    return root


def _dumped(root: Path, storage) -> Path:
    rb = data.TensorDictReplayBuffer(storage=storage, batch_size=2)
    rb.extend(TensorDict(obs=torch.arange(8.0).view(4, 2), batch_size=[4]))
    rb.dumps(root)
    return checkpointers.resolve_checkpoint(root)


def _replace_with_pickle(file: Path, obj) -> None:
    """Replaces ``file`` with a torch file holding ``obj`` and refreshes the manifest, as an attacker would."""
    torch.save(obj, file)
    snap = next(p for p in file.parents if (p / "MANIFEST.json").exists())
    (snap / "MANIFEST.json").unlink()
    checkpointers._write_manifest(snap)


@pytest.mark.parametrize("load", ["loads", "load"])
def test_buffer_folder_with_pickled_leaf_is_refused(tmp_path, marker, load):
    root = _format1_buffer(tmp_path / "ckpt", marker)
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8), batch_size=2)
    with pytest.raises(CheckpointError, match="pickled.*allow_pickle_unsafe=True"):
        getattr(rb, load)(root)
    assert not marker.exists()


@pytest.mark.parametrize("make", [lambda: data.LazyTensorStorage(8), lambda: data.LazyMemmapStorage(8)])
def test_storage_loads_with_pickled_leaf_is_refused(tmp_path, marker, make):
    root = _format1_buffer(tmp_path / "ckpt", marker)
    snap = checkpointers.resolve_checkpoint(root)
    (tmp_path / "s").mkdir()
    storage_root = tmp_path / "s"
    (storage_root / "LATEST").write_text(json.dumps({"current": snap.name}))
    (snap / "storage").rename(storage_root / snap.name)
    with pytest.raises(CheckpointError, match="pickled"):
        make().loads(storage_root)
    assert not marker.exists()


def test_opt_in_loads_the_trusted_pickle(tmp_path, marker):
    """The escape hatch exists and is named for what it does."""
    root = _format1_buffer(tmp_path / "ckpt", marker)
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8), batch_size=2)
    try:
        rb.loads(root, allow_pickle_unsafe=True)
    except Exception:  # noqa: BLE001 - the payload is no real leaf; what matters is that it ran
        pass
    assert marker.exists()


@pytest.mark.parametrize("make", [lambda: data.ListStorage(8), lambda: data.CompressedListStorage(8),
                                  lambda: data.LazyStackStorage(8)])
def test_list_storages_refuse_pickled_items(tmp_path, marker, make):
    snap = _dumped(tmp_path / "ckpt", make())
    _replace_with_pickle(snap / "storage" / "storage.pt", {"_storage": [_Payload(marker)]})
    rb = data.TensorDictReplayBuffer(storage=make(), batch_size=2)
    with pytest.raises(CheckpointError, match=r"storage\.pt holds pickled Python objects.*allow_pickle_unsafe"):
        rb.loads(tmp_path / "ckpt")
    assert not marker.exists()


def test_list_storage_dump_refuses_unpicklable_items_without_opt_in(tmp_path):
    storage = data.ListStorage(4)
    storage.set(range(2), [{"a": 1}, Fraction(1, 3)])
    with pytest.raises(TypeError, match="ListStorage item 1 holds a Fraction.*allow_pickle_unsafe=True"):
        storage.dumps(tmp_path / "c")
    assert not (tmp_path / "c" / "LATEST").exists()
    storage.dumps(tmp_path / "c", allow_pickle_unsafe=True)
    with pytest.raises(CheckpointError, match="pickled"):
        data.ListStorage(4).loads(tmp_path / "c")
    other = data.ListStorage(4)
    other.loads(tmp_path / "c", allow_pickle_unsafe=True)
    assert other.get(1) == Fraction(1, 3)


@pytest.mark.parametrize("part", ["transforms.pt", "sampler"])
def test_transform_and_sampler_states_refuse_pickles(tmp_path, marker, part):
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8), sampler=data.SamplerWithoutReplacement(),
                                     batch_size=2)
    rb.extend(TensorDict(obs=torch.arange(8.0).view(4, 2), batch_size=[4]))
    rb.dumps(tmp_path / "ckpt")
    snap = checkpointers.resolve_checkpoint(tmp_path / "ckpt")
    target = snap / part if part.endswith(".pt") else next((snap / part).iterdir())
    _replace_with_pickle(target, {"evil": _Payload(marker)})
    other = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(8), sampler=data.SamplerWithoutReplacement(),
                                        batch_size=2)
    with pytest.raises((CheckpointError, pickle.UnpicklingError)):
        other.loads(tmp_path / "ckpt")
    assert not marker.exists()


def _evil_checkpoint(file: Path, marker: Path) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": "tdrl-checkpoint-1", "state": {"modules": _Payload(marker)}}, file)


def test_trainer_checkpoint_refuses_pickles(tmp_path, marker):
    _evil_checkpoint(tmp_path / "checkpoint.pt", marker)
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt holds pickled Python objects"):
        load_checkpoint(tmp_path / "checkpoint.pt")
    assert not marker.exists()


@pytest.mark.parametrize("command", ["resume", "eval"])
def test_cli_resume_and_eval_refuse_pickled_checkpoints(tmp_path, marker, capsys, command):
    run = tmp_path / "run"
    cfg = compose_config(["env.name=CartPole-v1", "network.num_cells=[8]", f"run_dir={run}"])
    run.mkdir()
    (run / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    _evil_checkpoint(run / "checkpoint.pt", marker)
    args = [command, str(run), "--no-progress"] if command == "resume" else [command, str(run), "--episodes", "1"]
    assert cli_main(args) == 2
    assert "pickled Python objects" in capsys.readouterr().err
    assert not marker.exists()


def test_dataset_folder_with_pickled_leaf_is_refused(tmp_path, marker):
    root = _format1_buffer(tmp_path / "dataset", marker)
    with pytest.raises(DatasetError, match="dataset.path=.*pickled"):
        load_dataset(root, batch_size=2)
    assert not marker.exists()


@pytest.mark.integration
def test_cli_offline_train_refuses_pickled_dataset(tmp_path, marker, capsys):
    root = _format1_buffer(tmp_path / "dataset", marker)
    argv = ["train", "algo=cql", "env.name=Pendulum-v1", f"dataset.path={root}", f"run_dir={tmp_path / 'run'}",
            "optim.gradient_steps=2", "network.num_cells=[8]", "--no-progress"]
    assert cli_main(argv) == 2
    assert "pickled" in capsys.readouterr().err
    assert not marker.exists()
    assert not (tmp_path / "run" / "checkpoint.pt").exists()  # nothing trained


def test_yaml_python_tags_never_run(tmp_path, marker, capsys):
    """YAML is read by OmegaConf's safe loader: a python/object tag is a parse error, never a call."""
    (tmp_path / "config.yaml").write_text(f"algo: ppo\nenv:\n  name: !!python/object/apply:builtins.open ['{marker}', 'w']\n")
    with pytest.raises(Exception, match="(?i)could not determine a constructor|tag"):
        OmegaConf.load(tmp_path / "config.yaml")
    assert cli_main(["train", "--config-path", str(tmp_path), "--config-name", "config", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "config.yaml: not valid YAML" in err and "could not determine a constructor" in err
    assert not marker.exists()


@pytest.mark.parametrize("target", [
    "builtins.open",                          # outside the allowed packages
    "tdrl.trainers.run.os.system",             # an allowed module's attribute that is another package's function
    "torch.load",                              # a loader inside torch
    "tensordict.TensorDict.load_memmap",       # a loader inside tensordict
    "torch.hub.load",
    "tdrl._utils.safe_files.write_file",       # private
])
def test_hydra_targets_outside_the_allow_list_are_refused(marker, target):
    cfg = OmegaConf.create({"trainer": {"thing": {"_target_": target, "_args_": [str(marker), "w"]}}})
    with pytest.raises(UnsafeTargetError, match=r"config\.trainer\.thing\._target_=.*is refused.*TDRL_ALLOW_ANY"):
        check_targets(cfg)
    with pytest.raises(UnsafeTargetError, match=r"config\._target_=.*is refused"):
        safe_instantiate(cfg.trainer.thing)
    assert not marker.exists()


def test_hydra_pickle_switches_are_refused(tmp_path):
    cfg = OmegaConf.create({"_target_": "tdrl.trainers.datasets.load_dataset", "path": str(tmp_path),
                            "batch_size": 2, "allow_pickle_unsafe": True})
    with pytest.raises(UnsafeTargetError, match="allow_pickle_unsafe=True is refused"):
        safe_instantiate(cfg)


def test_hydra_torchrl_yaml_with_foreign_target_never_runs(tmp_path, marker, capsys):
    (tmp_path / "config.yaml").write_text(
        f"trainer:\n  _target_: builtins.open\n  _args_: ['{marker}', 'w']\n")
    assert cli_main(["train", "--config-path", str(tmp_path), "--config-name", "config"]) == 2
    assert "is refused" in capsys.readouterr().err
    assert not marker.exists()


def test_allowed_targets_and_opt_out(marker, monkeypatch):
    assert isinstance(safe_instantiate({"_target_": "torch.nn.Linear", "in_features": 2, "out_features": 1}),
                      torch.nn.Linear)
    with allow_any_target():
        safe_instantiate({"_target_": "builtins.open", "_args_": [str(marker), "w"]}).close()
    assert marker.exists()
    marker.unlink()
    monkeypatch.setenv("TDRL_ALLOW_ANY_TARGET", "1")
    safe_instantiate({"_target_": "builtins.open", "_args_": [str(marker), "w"]}).close()
    assert marker.exists()
