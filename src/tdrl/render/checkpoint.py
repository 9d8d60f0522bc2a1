"""Policy checkpoints for rendering (TorchRL's ``torchrl.render`` checkpoint helpers).

``save_render_checkpoint`` writes a policy's weights with the run's env metadata so a renderer can rebuild
the policy later; ``load_checkpoint`` reads it back as one payload dict (``"model_state_dict"``, the env
metadata at the top level, ``"frames"``, ``"metrics"``, ``"config"``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from tdrl.checkpoint import Checkpoint, CheckpointFormat

__all__ = ["checkpoint_hash", "infer_state_dict", "load_checkpoint", "save_render_checkpoint"]

_STATE_DICT_KEYS = ("model_state_dict", "policy", "state_dict")


class _Holder:
    """A mapping exposed as a ``state_dict``/``load_state_dict`` component (tensors need the state-dict adapter)."""

    def __init__(self, value: Mapping[str, Any] | None = None) -> None:
        self.value = None if value is None else dict(value)

    def state_dict(self) -> dict[str, Any]:
        return dict(self.value or {})

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.value = dict(state_dict)


def _has_tensor(value: Any) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, Mapping):
        return any(_has_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return False


def _component(value: Mapping[str, Any]) -> Any:
    return _Holder(value) if _has_tensor(value) else dict(value)


def save_render_checkpoint(
    path: str | os.PathLike | None,
    model: Any,
    *,
    env_metadata: Mapping[str, Any] | None = None,
    frames: int | None = None,
    metrics: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    format: CheckpointFormat | None = None,  # noqa: A002 - TorchRL's argument name
) -> Path | None:
    """Writes ``model``'s weights and the run's metadata; ``None``/``""`` as ``path`` disables it.

    Args:
        path: destination.
        model: a module (its ``state_dict()`` is saved) or a state dict.
        env_metadata: env facts (``"env_name"``, ``"env_backend"``, ...) stored at the payload's top level.
        frames: frames collected so far.
        metrics: scalar metrics.
        config: the run's configuration (plain data).
        extra: more top-level payload entries.
        format: ``None`` writes one ``torch.save`` file (plain data, read back with ``weights_only=True``);
            ``"directory"``/``"archive"`` write a :class:`~tdrl.checkpoint.Checkpoint`.

    Returns:
        The written path, or ``None`` when disabled.

    Examples:
        >>> import tempfile
        >>> path = save_render_checkpoint(tempfile.mkdtemp() + "/p.pt", torch.nn.Linear(2, 1),
        ...                               env_metadata={"env_name": "Pendulum-v1"}, frames=100)
        >>> payload = load_checkpoint(path)
        >>> payload["env_name"], payload["frames"], sorted(payload["model_state_dict"])
        ('Pendulum-v1', 100, ['bias', 'weight'])
    """
    if path is None or str(path) == "":
        return None
    path = Path(path).expanduser()
    state = dict(model) if isinstance(model, Mapping) else model.state_dict()
    if format is None:
        payload: dict[str, Any] = {"model_state_dict": state, **dict(env_metadata or {})}
        if frames is not None:
            payload["frames"] = int(frames)
        if metrics is not None:
            payload["metrics"] = dict(metrics)
        if config is not None:
            payload["config"] = dict(config)
        payload.update(dict(extra or {}))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        torch.save(payload, tmp)
        os.replace(tmp, path)
        return path
    components: dict[str, Any] = {"policy": _Holder(state)}
    if env_metadata is not None:
        components["environment_metadata"] = _component(env_metadata)
    if frames is not None:
        components["trainer_state"] = {"frames": int(frames)}
    if metrics is not None:
        components["metrics"] = dict(metrics)
    if config is not None:
        components["config"] = dict(config)
    if extra is not None:
        components["extra"] = _component(extra)
    return Checkpoint(format=format, **components).save(path)


def _load_unified(path: Path, map_location: Any) -> dict[str, Any]:
    saved = Checkpoint.manifest(path)["components"]
    targets = {
        name: (_Holder() if saved[name]["adapter"] == "tdrl.state_dict" else {})
        for name in ("policy", "environment_metadata", "trainer_state", "metrics", "config", "extra")
        if name in saved
    }
    Checkpoint(**targets).load(path, map_location=map_location)
    plain = {k: (v.value or {}) if isinstance(v, _Holder) else v for k, v in targets.items()}
    payload: dict[str, Any] = {}
    if "policy" in plain:
        payload["model_state_dict"] = plain["policy"]
    payload.update(plain.get("environment_metadata", {}))
    if "frames" in plain.get("trainer_state", {}):
        payload["frames"] = plain["trainer_state"]["frames"]
    for name in ("metrics", "config"):
        if plain.get(name):
            payload[name] = plain[name]
    payload.update(plain.get("extra", {}))
    return payload


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu", *,
                    weights_only: bool | None = None) -> Any:
    """Reads a checkpoint written by :func:`save_render_checkpoint` (or any ``torch.save`` file).

    Args:
        path: a local path.
        map_location: where tensors are loaded.
        weights_only: restrict ``torch.load`` to plain data (default ``True``; ``False`` unpickles
            arbitrary objects and must only be used on trusted files).
    """
    if "://" in str(path):
        raise ValueError(f"load_checkpoint reads local paths only, got {str(path)!r}")
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"checkpoint path does not exist: {path}")
    if Checkpoint.is_checkpoint(path):
        return _load_unified(path, map_location)
    try:
        return torch.load(path, map_location=map_location, weights_only=True if weights_only is None else weights_only)
    except Exception as err:
        raise RuntimeError(
            f"could not load checkpoint {path}: {err}. A file holding arbitrary objects needs weights_only=False "
            "(trusted files only)"
        ) from err


def checkpoint_hash(path: str | os.PathLike) -> str:
    """SHA-256 over a checkpoint's bytes (a file, or a folder's files with their relative paths).

    Examples:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp(), "f")
        >>> _ = p.write_bytes(b"abc")
        >>> checkpoint_hash(p)[:12]
        'ba7816bf8f01'
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"checkpoint path does not exist: {path}")
    digest = hashlib.sha256()
    for file in [path] if path.is_file() else sorted(path.rglob("*")):
        if not file.is_file():
            continue
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as fd:
            for block in iter(lambda: fd.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def infer_state_dict(payload: Any, key: str | None = None) -> Mapping[str, Tensor]:
    """Finds the model state dict in a checkpoint payload (``key``, else the usual keys, else the payload).

    Examples:
        >>> sorted(infer_state_dict({"policy": {"w": torch.ones(1)}, "frames": 3}))
        ['w']
    """
    if key is not None:
        if not isinstance(payload, Mapping) or key not in payload:
            raise KeyError(f"checkpoint payload has no state-dict key {key!r}")
        payload = payload[key]
    elif isinstance(payload, Mapping):
        for candidate in _STATE_DICT_KEYS:
            if _is_state_dict(payload.get(candidate)):
                payload = payload[candidate]
                break
    if _is_state_dict(payload):
        return payload
    raise TypeError(
        f"no tensor state dict found in the checkpoint payload; expected one of {list(_STATE_DICT_KEYS)} "
        "or a mapping of names to tensors"
    )


def _is_state_dict(value: Any) -> bool:
    return (isinstance(value, Mapping) and bool(value) and all(isinstance(k, str) for k in value)
            and any(torch.is_tensor(v) for v in value.values()))
