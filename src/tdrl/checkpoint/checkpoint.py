"""``Checkpoint``: named components written under one manifest, restored in full or in part.

Layout (a folder, or the same tree in a ZIP archive)::

    manifest.json                    # format, versions, metadata, per component: adapter, files, sha256
    components/0000-<name>/...       # what the component's adapter wrote

A save is atomic: the tree is built next to the destination and renamed over it. A load checks the
manifest's format version (applying registered migrations), each component's adapter and the SHA-256 of
each file it reads, before restoring anything; nothing is unpickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
import warnings
import zipfile
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

import tensordict
import torch

from tdrl import __version__
from tdrl.checkpoint._types import (
    CheckpointError,
    CheckpointFormat,
    CheckpointLoadResult,
    CheckpointOptions,
    CheckpointStrictness,
)
from tdrl.checkpoint.adapters import CheckpointAdapter, default_adapter

__all__ = ["Checkpoint"]

_FORMAT = "tdrl.checkpoint"
_FORMAT_VERSION = 1
_MANIFEST = "manifest.json"


def _versions() -> dict[str, str]:
    return {"tdrl": __version__, "torch": torch.__version__, "tensordict": tensordict.__version__}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fd:
        for block in iter(lambda: fd.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace(tmp: Path, path: Path) -> None:
    """Moves ``tmp`` onto ``path`` (file or folder); the old ``path`` is removed only once ``tmp`` is in place."""
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old) if old.is_dir() else old.unlink()


def _safe_extract(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for member in zf.namelist():
            target = (dest / member).resolve()
            if not target.is_relative_to(dest.resolve()):
                raise CheckpointError(f"{archive}: archive member {member!r} points outside the checkpoint")
        zf.extractall(dest)


class Checkpoint:
    """Saves and restores named components (modules, optimizers, replay buffers, RNG state, plain data).

    Components are registered by keyword (``Checkpoint(policy=net, optimizer=opt)``) or with
    :meth:`register`; each gets an adapter from its type (``state_dict``/``load_state_dict`` objects,
    ``dumps``/``loads`` objects, JSON data) unless one is given.

    Args:
        format: ``"directory"`` or ``"archive"`` (one ZIP file).
        strict: what a load does about missing or incompatible components: ``"error"``, ``"warn"``, ``"ignore"``.
        archive_compression: ``"stored"`` (default: replay buffers compress their own data) or ``"deflated"``.
        save_components: the components :meth:`save` writes by default (default: all).
        **components: ``name=component`` registrations.

    Examples:
        >>> import tempfile
        >>> net = torch.nn.Linear(2, 1)
        >>> path = Checkpoint(policy=net, progress={"frames": 10}).save(tempfile.mkdtemp() + "/ckpt")
        >>> progress = {}
        >>> result = Checkpoint(policy=torch.nn.Linear(2, 1), progress=progress).load(path)
        >>> sorted(result.loaded), progress
        (['policy', 'progress'], {'frames': 10})
    """

    _MIGRATIONS: ClassVar[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {}

    def __init__(
        self,
        *,
        format: CheckpointFormat = "directory",  # noqa: A002 - TorchRL's argument name
        strict: CheckpointStrictness = "error",
        archive_compression: Literal["stored", "deflated"] = "stored",
        save_components: Collection[str] | None = None,
        **components: Any,
    ) -> None:
        self._check_choice("format", format, ("directory", "archive"))
        self._check_choice("strict", strict, ("error", "warn", "ignore"))
        self._check_choice("archive_compression", archive_compression, ("stored", "deflated"))
        self.format = format
        self.strict = strict
        self.archive_compression = archive_compression
        self.save_components = None if save_components is None else set(save_components)
        self._components: dict[str, Any] = {}
        self._adapters: dict[str, CheckpointAdapter | None] = {}
        self._options: dict[str, CheckpointOptions] = {}
        self._type_adapters: dict[type, CheckpointAdapter] = {}
        for name, component in components.items():
            self.register(name, component)

    @staticmethod
    def _check_choice(arg: str, value: Any, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            raise ValueError(f"Checkpoint: {arg} must be one of {allowed}, got {value!r}")

    # ------------------------------------------------------------------ registration
    @property
    def components(self) -> dict[str, Any]:
        """The registered components by name."""
        return dict(self._components)

    def register(self, name: str, component: Any, *, adapter: CheckpointAdapter | None = None,
                 options: CheckpointOptions | None = None) -> Checkpoint:
        """Registers ``component`` under ``name`` (replacing a previous one); returns ``self``."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"Checkpoint: invalid component name {name!r}")
        self._components[name] = component
        self._adapters[name] = adapter
        self._options[name] = options or CheckpointOptions()
        return self

    def register_adapter(self, component_type: type, adapter: CheckpointAdapter) -> Checkpoint:
        """Uses ``adapter`` for every component that is an instance of ``component_type``; returns ``self``."""
        self._type_adapters[component_type] = adapter
        return self

    @classmethod
    def register_migration(cls, from_version: int, migration: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Registers how a manifest of ``format_version == from_version`` becomes one of the next version."""
        cls._MIGRATIONS[int(from_version)] = migration

    def _adapter(self, name: str) -> CheckpointAdapter:
        adapter = self._adapters[name]
        if adapter is not None:
            return adapter
        component = self._components[name]
        for typ, registered in self._type_adapters.items():
            if isinstance(component, typ):
                return registered
        try:
            return default_adapter(component)
        except CheckpointError as err:
            raise CheckpointError(f"component {name!r}: {err}") from None

    # ------------------------------------------------------------------ save
    def save(self, path: str | os.PathLike, *, components: Collection[str] | None = None,
             component_options: Mapping[str, CheckpointOptions] | None = None,
             format: CheckpointFormat | None = None,  # noqa: A002 - TorchRL's argument name
             metadata: Mapping[str, Any] | None = None) -> Path:
        """Writes the components (all, ``save_components``, or ``components``) to ``path``; returns the path."""
        fmt = format or self.format
        self._check_choice("format", fmt, ("directory", "archive"))
        names = self._select(components if components is not None else self.save_components, "save")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        build = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
        try:
            manifest = self._write_tree(build, names, dict(component_options or {}), metadata, fmt)
            (build / _MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
            if fmt == "directory":
                _replace(build, path)
            else:
                self._zip(build, path)
        finally:
            if build.exists():
                shutil.rmtree(build)
        return path

    def _select(self, requested: Collection[str] | None, action: str) -> list[str]:
        if requested is None:
            return sorted(self._components)
        unknown = sorted(set(requested) - set(self._components))
        if unknown and action == "save":
            raise CheckpointError(f"cannot save unregistered components {unknown}; registered: {sorted(self._components)}")
        return sorted(set(requested) & set(self._components))

    def _write_tree(self, root: Path, names: list[str], options: dict[str, CheckpointOptions],
                    metadata: Mapping[str, Any] | None, fmt: str) -> dict[str, Any]:
        entries = {}
        for index, name in enumerate(names):
            rel = f"components/{index:04d}-{name}"
            folder = root / rel
            folder.mkdir(parents=True)
            adapter = self._adapter(name)
            opts = self._options[name].merged(options.get(name))
            try:
                adapter.save(self._components[name], folder, args=tuple(opts.save_args or ()),
                             kwargs=dict(opts.save_kwargs or {}))
            except CheckpointError:
                raise
            except Exception as err:
                raise CheckpointError(f"failed to save checkpoint component {name!r}: {err}") from err
            files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
            entries[name] = {
                "adapter": adapter.adapter_id,
                "adapter_version": adapter.format_version,
                "path": rel,
                "files": {f: _sha256(folder / f) for f in files},
            }
        return {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "checkpoint_id": uuid.uuid4().hex,
            "container": fmt,
            "created_at": datetime.now(timezone.utc).isoformat(),
            "versions": _versions(),
            "metadata": json.loads(json.dumps(dict(metadata or {}), default=str)),
            "components": entries,
        }

    def _zip(self, build: Path, path: Path) -> None:
        compression = zipfile.ZIP_STORED if self.archive_compression == "stored" else zipfile.ZIP_DEFLATED
        tmp = path.with_name(f".{path.name}.zip-{uuid.uuid4().hex[:8]}")
        with zipfile.ZipFile(tmp, "w", compression=compression) as zf:
            for file in sorted(p for p in build.rglob("*") if p.is_file()):
                zf.write(file, str(file.relative_to(build)))
        _replace(tmp, path)

    # ------------------------------------------------------------------ inspection
    @classmethod
    def manifest(cls, path: str | os.PathLike) -> dict[str, Any]:
        """The manifest of the checkpoint at ``path`` (migrated to the current format version)."""
        path = Path(path)
        try:
            if path.is_dir():
                raw = (path / _MANIFEST).read_text()
            else:
                with zipfile.ZipFile(path) as zf:
                    raw = zf.read(_MANIFEST).decode()
        except (OSError, KeyError, zipfile.BadZipFile) as err:
            raise CheckpointError(f"{path} is not a tdrl checkpoint (no readable {_MANIFEST}): {err}") from err
        manifest = json.loads(raw)
        if manifest.get("format") != _FORMAT:
            raise CheckpointError(f"{path}: manifest format {manifest.get('format')!r}, expected {_FORMAT!r}")
        return cls._migrate(manifest, path)

    @classmethod
    def _migrate(cls, manifest: dict[str, Any], path: Path) -> dict[str, Any]:
        version = int(manifest.get("format_version", 0))
        while version < _FORMAT_VERSION:
            if version not in cls._MIGRATIONS:
                raise CheckpointError(f"{path}: format_version {version} and no migration registered from it")
            manifest = cls._MIGRATIONS[version](dict(manifest))
            version = int(manifest.get("format_version", version + 1))
        if version > _FORMAT_VERSION:
            raise CheckpointError(f"{path}: format_version {version} is newer than this tdrl ({_FORMAT_VERSION})")
        return manifest

    @classmethod
    def is_checkpoint(cls, path: str | os.PathLike) -> bool:
        """Whether ``path`` holds a readable tdrl checkpoint."""
        try:
            cls.manifest(path)
        except (CheckpointError, ValueError):
            return False
        return True

    # ------------------------------------------------------------------ load
    def load(self, path: str | os.PathLike, *, components: Collection[str] | None = None,
             component_options: Mapping[str, CheckpointOptions] | None = None, map_location: Any = None,
             tensor_load_kwargs: Mapping[str, Any] | None = None,
             strict: CheckpointStrictness | None = None) -> CheckpointLoadResult:
        """Restores the registered components (or those named in ``components``) from ``path``.

        Raises:
            CheckpointError: a requested component is missing or incompatible (``strict="error"``), a file's
                checksum does not match the manifest, or an adapter fails.
        """
        strict = strict or self.strict
        self._check_choice("strict", strict, ("error", "warn", "ignore"))
        path = Path(path)
        manifest = self.manifest(path)
        if path.is_dir():
            return self._load_tree(path, manifest, components, component_options, map_location,
                                   tensor_load_kwargs, strict)
        with tempfile.TemporaryDirectory(prefix=".tdrl-ckpt-") as tmp:
            _safe_extract(path, Path(tmp))
            return self._load_tree(Path(tmp), manifest, components, component_options, map_location,
                                   tensor_load_kwargs, strict)

    def _load_tree(self, root: Path, manifest: dict[str, Any], components: Collection[str] | None,
                   component_options: Mapping[str, CheckpointOptions] | None, map_location: Any,
                   tensor_load_kwargs: Mapping[str, Any] | None, strict: str) -> CheckpointLoadResult:
        saved = manifest["components"]
        requested = set(self._components) if components is None else set(components)
        result = CheckpointLoadResult(manifest=manifest, comparison=self._compare(manifest))
        result.missing = {n for n in requested if n not in saved}
        result.missing |= {n for n in requested if n in saved and n not in self._components}
        to_load = sorted(n for n in requested if n in saved and n in self._components)
        for name in to_load:
            adapter = self._adapter(name)
            entry = saved[name]
            if (entry["adapter"], int(entry["adapter_version"])) != (adapter.adapter_id, adapter.format_version):
                result.incompatible[name] = (
                    f"saved with adapter {entry['adapter']!r} v{entry['adapter_version']}, "
                    f"restoring with {adapter.adapter_id!r} v{adapter.format_version}"
                )
        self._report(result, strict)
        options = dict(component_options or {})
        for name in to_load:
            if name in result.incompatible:
                continue
            value = self._load_one(root, name, saved[name], options.get(name), map_location,
                                   dict(tensor_load_kwargs or {}))
            if value is not None:
                result.values[name] = value
            result.loaded.add(name)
        result.unrequested = set(saved) - result.loaded - set(result.incompatible)
        return result

    def _load_one(self, root: Path, name: str, entry: Mapping[str, Any], options: CheckpointOptions | None,
                  map_location: Any, tensor_load_kwargs: dict[str, Any]) -> Any:
        folder = root / entry["path"]
        for rel, digest in entry["files"].items():
            file = folder / rel
            if not file.is_file():
                raise CheckpointError(f"checkpoint component {name!r}: file {rel!r} is missing")
            if _sha256(file) != digest:
                raise CheckpointError(f"checkpoint component {name!r}: file {rel!r} is corrupted (sha256 mismatch)")
        opts = self._options[name].merged(options)
        try:
            return self._adapter(name).load(
                self._components[name], folder, map_location=map_location, tensor_load_kwargs=tensor_load_kwargs,
                args=tuple(opts.load_args or ()), kwargs=dict(opts.load_kwargs or {}),
            )
        except CheckpointError:
            raise
        except Exception as err:
            raise CheckpointError(f"Failed to load checkpoint component {name!r}: {err}") from err

    @staticmethod
    def _report(result: CheckpointLoadResult, strict: str) -> None:
        if not (result.missing or result.incompatible) or strict == "ignore":
            return
        message = "Checkpoint restore issues:"
        if result.missing:
            message += f" missing={sorted(result.missing)}"
        if result.incompatible:
            message += f" incompatible={result.incompatible}"
        if strict == "error":
            raise CheckpointError(message)
        warnings.warn(message, UserWarning, stacklevel=4)

    @staticmethod
    def _compare(manifest: Mapping[str, Any]) -> dict[str, Any]:
        runtime = _versions()
        saved = manifest.get("versions", {})
        versions = {
            lib: {"checkpoint": saved.get(lib), "runtime": runtime[lib], "matches": saved.get(lib) == runtime[lib]}
            for lib in runtime
        }
        return {"versions": versions, "version_skew": not all(v["matches"] for v in versions.values())}

    def __repr__(self) -> str:
        return f"Checkpoint(format={self.format!r}, strict={self.strict!r}, components={sorted(self._components)})"
