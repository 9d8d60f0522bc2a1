"""How one component is written to and read from its folder: the ``CheckpointAdapter`` family.

Nothing here unpickles: state dicts are stored as a JSON skeleton (dict keys keep their type) plus tensors,
either as a tensordict memory-mapped folder (raw bytes + JSON metadata, ``"directory"``) or one
``torch.save`` file read back with ``weights_only=True`` (``"torch"``). Objects with ``dumps``/``loads``
(replay buffers) write their own folder.
"""

from __future__ import annotations

import abc
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from tensordict import TensorDict

from tdrl.checkpoint._types import CheckpointError, StateDictFormat

__all__ = [
    "CheckpointAdapter",
    "DumpLoadCheckpointAdapter",
    "GlobalRNGState",
    "JSONCheckpointAdapter",
    "StateDictCheckpointAdapter",
    "decode_state",
    "encode_state",
]


def encode_state(obj: Any, tensors: dict[str, torch.Tensor], where: str = "state") -> Any:
    """``obj`` as JSON data; tensors are moved into ``tensors`` and replaced by ``{"__tensor__": name}``.

    Dicts become ``{"__dict__": [[key, value], ...]}`` so integer keys (optimizer states) survive.

    Examples:
        >>> tensors = {}
        >>> encode_state({0: (1, torch.ones(2))}, tensors)
        {'__dict__': [[0, {'__tuple__': [1, {'__tensor__': 'tensor_00000000'}]}]]}
    """
    if isinstance(obj, torch.Tensor):
        name = f"tensor_{len(tensors):08d}"
        tensors[name] = obj.detach()
        return {"__tensor__": name}
    if isinstance(obj, Mapping):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise CheckpointError(f"{where}: dict key {key!r} of type {type(key).__name__} cannot be stored")
            items.append([key, encode_state(value, tensors, f"{where}[{key!r}]")])
        return {"__dict__": items}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode_state(v, tensors, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [encode_state(v, tensors, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return encode_state(torch.from_numpy(obj.copy()), tensors, where)
    if isinstance(obj, torch.dtype):
        return {"__dtype__": str(obj).removeprefix("torch.")}
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    raise CheckpointError(
        f"{where}: a {type(obj).__name__} cannot be stored safely (tensors, numbers, strings, lists, tuples "
        "and dicts only); register a CheckpointAdapter for it"
    )


def decode_state(data: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """The inverse of :func:`encode_state`.

    Examples:
        >>> tensors = {}
        >>> decode_state(encode_state({"a": (1, [2.5])}, tensors), tensors)
        {'a': (1, [2.5])}
    """
    if isinstance(data, list):
        return [decode_state(v, tensors) for v in data]
    if isinstance(data, dict):
        if "__tensor__" in data:
            return tensors[data["__tensor__"]]
        if "__dict__" in data:
            return {key: decode_state(value, tensors) for key, value in data["__dict__"]}
        if "__tuple__" in data:
            return tuple(decode_state(v, tensors) for v in data["__tuple__"])
        if "__dtype__" in data:
            return getattr(torch, data["__dtype__"])
        raise CheckpointError(f"unknown entry in a checkpoint state: {sorted(data)}")
    return data


class CheckpointAdapter(abc.ABC):
    """Writes one component into a folder and restores it from there.

    Subclasses set ``adapter_id`` (stored in the manifest, checked on load) and ``format_version``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from tdrl.checkpoint import Checkpoint
        >>> class TextAdapter(CheckpointAdapter):  # a component stored as one text file
        ...     adapter_id = "example.text"
        ...     def save(self, component, path, *, args, kwargs):
        ...         path.mkdir(parents=True, exist_ok=True)
        ...         (path / "text.txt").write_text(component["text"])
        ...     def load(self, component, path, *, map_location, tensor_load_kwargs, args, kwargs):
        ...         component["text"] = (path / "text.txt").read_text()
        >>> ckpt = Checkpoint()
        >>> _ = ckpt.register("note", {"text": "hello"}, adapter=TextAdapter())
        >>> path = ckpt.save(tempfile.mkdtemp() + "/ckpt")
        >>> [p.name for p in Path(path).rglob("*.txt")]
        ['text.txt']
        >>> note = {}
        >>> _ = Checkpoint().register("note", note, adapter=TextAdapter()).load(path)
        >>> note
        {'text': 'hello'}
    """

    adapter_id: ClassVar[str] = "custom"
    format_version: ClassVar[int] = 1

    @abc.abstractmethod
    def save(self, component: Any, path: Path, *, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """Writes ``component`` under the (existing or to be created) folder ``path``."""

    @abc.abstractmethod
    def load(self, component: Any, path: Path, *, map_location: Any, tensor_load_kwargs: Mapping[str, Any],
             args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """Restores ``component`` from ``path``; may return a value (reported in ``CheckpointLoadResult.values``)."""


class StateDictCheckpointAdapter(CheckpointAdapter):
    """For objects with ``state_dict()`` / ``load_state_dict()`` (modules, optimizers, loggers, ...).

    Args:
        payload_format: ``"directory"`` (memory-mapped tensors) or ``"torch"`` (one ``weights_only`` file).

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> net, copy = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
        >>> path = Path(tempfile.mkdtemp())
        >>> StateDictCheckpointAdapter("torch").save(net, path, args=(), kwargs={})
        >>> sorted(p.name for p in path.iterdir())
        ['state.json', 'tensors.pt']
        >>> StateDictCheckpointAdapter().load(copy, path, map_location=None, tensor_load_kwargs={}, args=(), kwargs={})
        >>> torch.equal(copy.weight, net.weight)
        True
    """

    adapter_id = "tdrl.state_dict"

    def __init__(self, payload_format: StateDictFormat = "directory") -> None:
        if payload_format not in ("directory", "torch"):
            raise ValueError(f"payload_format must be 'directory' or 'torch', got {payload_format!r}")
        self.payload_format = payload_format

    def save(self, component: Any, path: Path, *, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        tensors: dict[str, torch.Tensor] = {}
        skeleton = encode_state(component.state_dict(*args, **kwargs), tensors)
        path.mkdir(parents=True, exist_ok=True)
        (path / "state.json").write_text(json.dumps({"payload_format": self.payload_format, "state": skeleton}))
        if self.payload_format == "torch":
            torch.save({k: v.cpu().contiguous() for k, v in tensors.items()}, path / "tensors.pt")
        elif tensors:
            TensorDict({k: v.cpu().contiguous() for k, v in tensors.items()}, []).memmap(path / "tensors")

    def load(self, component: Any, path: Path, *, map_location: Any, tensor_load_kwargs: Mapping[str, Any],
             args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        header = json.loads((path / "state.json").read_text())
        if header["payload_format"] == "torch":
            tensors = torch.load(path / "tensors.pt", map_location=map_location, weights_only=True,
                                 **tensor_load_kwargs)
        elif (path / "tensors").exists():
            # clone(): the memory map must not outlive the files (an archive is extracted to a temp folder).
            mapped = TensorDict.load_memmap(path / "tensors")
            tensors = {k: v.clone() if map_location is None else v.to(map_location).clone() for k, v in mapped.items()}
        else:
            tensors = {}
        component.load_state_dict(decode_state(header["state"], tensors), *args, **kwargs)


class DumpLoadCheckpointAdapter(CheckpointAdapter):
    """For objects that write their own folder with ``dumps(path)`` and read it with ``loads(path)`` (replay buffers).

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> rb = ReplayBuffer(storage=LazyTensorStorage(8))
        >>> _ = rb.extend(torch.arange(5.0))
        >>> path = Path(tempfile.mkdtemp()) / "rb"
        >>> DumpLoadCheckpointAdapter().save(rb, path, args=(), kwargs={})
        >>> restored = ReplayBuffer(storage=LazyTensorStorage(8))
        >>> DumpLoadCheckpointAdapter().load(restored, path, map_location=None, tensor_load_kwargs={}, args=(), kwargs={})
        >>> len(restored)
        5
    """

    adapter_id = "tdrl.dump_load"

    def save(self, component: Any, path: Path, *, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        component.dumps(path, *args, **kwargs)

    def load(self, component: Any, path: Path, *, map_location: Any, tensor_load_kwargs: Mapping[str, Any],
             args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        component.loads(path, *args, **kwargs)


class JSONCheckpointAdapter(CheckpointAdapter):
    """For plain data (dicts, lists, numbers, strings): written as ``value.json``.

    On load a registered dict or list is updated in place, and the value is returned.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp())
        >>> JSONCheckpointAdapter().save({"frames": 10}, path, args=(), kwargs={})
        >>> progress = {"frames": 0}
        >>> JSONCheckpointAdapter().load(progress, path, map_location=None, tensor_load_kwargs={}, args=(), kwargs={})
        {'frames': 10}
        >>> progress
        {'frames': 10}
    """

    adapter_id = "tdrl.json"
    state_filename = "value.json"

    def save(self, component: Any, path: Path, *, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        path.mkdir(parents=True, exist_ok=True)
        try:
            text = json.dumps(component, allow_nan=True)
        except TypeError as err:
            raise CheckpointError(f"a JSON component must hold plain data: {err}") from err
        (path / self.state_filename).write_text(text)

    def load(self, component: Any, path: Path, *, map_location: Any, tensor_load_kwargs: Mapping[str, Any],
             args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        value = json.loads((path / self.state_filename).read_text())
        if isinstance(component, dict) and isinstance(value, dict):
            component.clear()
            component.update(value)
        elif isinstance(component, list) and isinstance(value, list):
            component[:] = value
        return value


class GlobalRNGState:
    """The process's random state (Python ``random``, NumPy's global generator, torch CPU and CUDA) as a component.

    Examples:
        >>> rng = GlobalRNGState()
        >>> state = rng.state_dict()
        >>> a = torch.rand(1)
        >>> rng.load_state_dict(state)
        >>> bool(torch.rand(1) == a)
        True
    """

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss = random.getstate()
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        state: dict[str, Any] = {
            "python": {"version": version, "internal": list(internal), "gauss_next": gauss},
            "numpy": {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                      "has_gauss": int(has_gauss), "cached": float(cached)},
            "torch_cpu": torch.get_rng_state(),
        }
        if torch.cuda.is_available():
            state["torch_cuda"] = list(torch.cuda.get_rng_state_all())
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        missing = {"python", "numpy", "torch_cpu"} - set(state_dict)
        if missing:
            raise CheckpointError(f"GlobalRNGState: the saved state lacks {sorted(missing)}")
        py = state_dict["python"]
        random.setstate((py["version"], tuple(py["internal"]), py["gauss_next"]))
        npy = state_dict["numpy"]
        keys = torch.as_tensor(npy["keys"]).cpu().numpy().astype(np.uint32)
        np.random.set_state((npy["kind"], keys, npy["pos"], npy["has_gauss"], npy["cached"]))
        torch.set_rng_state(torch.as_tensor(state_dict["torch_cpu"]).cpu())
        if "torch_cuda" in state_dict and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([torch.as_tensor(s).cpu() for s in state_dict["torch_cuda"]])


def default_adapter(component: Any) -> CheckpointAdapter:
    """The adapter a component gets when none is registered for its type."""
    if callable(getattr(component, "state_dict", None)) and callable(getattr(component, "load_state_dict", None)):
        return StateDictCheckpointAdapter()
    if callable(getattr(component, "dumps", None)) and callable(getattr(component, "loads", None)):
        return DumpLoadCheckpointAdapter()
    if isinstance(component, (dict, list, str, int, float, bool)) or component is None:
        return JSONCheckpointAdapter()
    raise CheckpointError(
        f"no checkpoint adapter for a {type(component).__name__}: it has neither state_dict/load_state_dict "
        "nor dumps/loads and is not plain data; pass adapter= to register() or call register_adapter()"
    )
