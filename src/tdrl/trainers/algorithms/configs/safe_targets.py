"""Which ``_target_`` callables a config file may name: tdrl's, torch's and tensordict's, never their loaders.

Hydra's ``instantiate`` imports and calls whatever a ``_target_`` names, so a YAML file could otherwise run
``os.system`` or ``torch.load`` on a pickle. Every instantiate path of tdrl goes through
:func:`safe_instantiate`, which first walks the whole config and refuses (with :class:`UnsafeTargetError`):

- a target outside the ``tdrl``, ``torch`` and ``tensordict`` packages, including one reached through a
  module attribute (``tdrl.trainers.run.os.system`` resolves to ``os.system`` and is refused);
- a private name (a component starting with ``_``) and the loaders inside the allowed packages
  (``torch.load``, ``torch.hub``, ``torch.jit``, ``torch.package``, ``torch.ops``, ``torch.export``,
  ``torch.utils.cpp_extension``, ``torch.distributed``, ``TensorDict.load_memmap``, ...);
- arguments that switch pickle on: ``allow_pickle_unsafe: true``, ``allow_pickle: true``, ``weights_only: false``.

A user who trusts a config opts out with ``TDRL_ALLOW_ANY_TARGET=1`` in the environment or, in Python,
``with allow_any_target(): ...``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import os
import types
from collections.abc import Iterator, Mapping
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

__all__ = ["ALLOWED_ROOTS", "UnsafeTargetError", "allow_any_target", "check_targets", "safe_instantiate"]

#: The packages whose public callables a config may instantiate.
ALLOWED_ROOTS = ("tdrl", "torch", "tensordict")
_REFUSED_PREFIXES = (
    "torch.load", "torch.hub", "torch.jit", "torch.package", "torch.ops", "torch.classes", "torch.export",
    "torch.utils.cpp_extension", "torch.distributed", "torch.multiprocessing", "torch.serialization",
    "torch.utils.model_zoo", "torch.library", "torch.compiler", "torch.compile",
)
_LOADER_NAMES = {"load", "loads", "load_memmap", "load_memmap_", "load_state_dict", "from_pretrained",
                 "load_inline", "load_library", "from_file"}
_PICKLE_SWITCHES = {"allow_pickle_unsafe": True, "allow_pickle": True, "weights_only": False}
_ENV_OPT_OUT = "TDRL_ALLOW_ANY_TARGET"
_allow_any: contextvars.ContextVar[bool] = contextvars.ContextVar("tdrl_allow_any_target", default=False)


class UnsafeTargetError(ValueError):
    """A config names a ``_target_`` (or a pickle switch) tdrl refuses to instantiate from a file."""


@contextlib.contextmanager
def allow_any_target() -> Iterator[None]:
    """Within this block, configs may instantiate any ``_target_`` (only for configs you trust).

    Examples:
        >>> with allow_any_target():
        ...     check_targets({"_target_": "collections.OrderedDict"})
    """
    token = _allow_any.set(True)
    try:
        yield
    finally:
        _allow_any.reset(token)


def _opted_out() -> bool:
    return _allow_any.get() or os.environ.get(_ENV_OPT_OUT, "") not in ("", "0")


def _root(name: str | None) -> str:
    return (name or "").split(".", 1)[0]


@functools.lru_cache(maxsize=1024)
def _refusal(target: str) -> str | None:
    """Why ``target`` is refused, or ``None`` if it may be instantiated."""
    parts = target.split(".")
    if parts[0] not in ALLOWED_ROOTS:
        return f"it is outside the {', '.join(ALLOWED_ROOTS)} packages"
    if any(not p or p.startswith("_") for p in parts):
        return "it names a private (underscore) attribute"
    if any(target == p or target.startswith(p + ".") for p in _REFUSED_PREFIXES) or _LOADER_NAMES & set(parts[1:]):
        return "it loads code or pickled data"
    obj: Any = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                return None  # unresolvable: instantiate itself raises its import error
        owner = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
        if owner is not None and _root(owner) not in ALLOWED_ROOTS:
            return f"it resolves to {owner}.{getattr(obj, '__qualname__', part)}, outside the allowed packages"
    return None


def _as_container(cfg: Any) -> Any:
    if isinstance(cfg, (DictConfig, ListConfig)):
        try:
            return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
        except Exception:  # noqa: BLE001 - an unresolvable interpolation: check the raw strings
            return OmegaConf.to_container(cfg, resolve=False)
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return _as_container(OmegaConf.structured(cfg))
    return cfg


def _walk(node: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield f"{path}.{key}" if path else str(key), key, value
            yield from _walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def check_targets(cfg: Any, *, where: str = "config") -> None:
    """Raises :class:`UnsafeTargetError` if ``cfg`` names a refused ``_target_`` or a pickle switch.

    Args:
        cfg: a ``DictConfig`` / ``ListConfig``, a structured-config dataclass or plain dicts and lists.
        where: the name of ``cfg`` in messages.

    Examples:
        >>> check_targets({"net": {"_target_": "torch.nn.Linear", "in_features": 2, "out_features": 1}})
        >>> try:
        ...     check_targets({"x": {"_target_": "os.system", "_args_": ["touch pwned"]}})
        ... except UnsafeTargetError as err:
        ...     print(str(err)[:60])
        config.x._target_='os.system' is refused: it is outside the
    """
    if _opted_out():
        return
    hint = (f"A config file may instantiate public {', '.join(p + '.' for p in ALLOWED_ROOTS)} callables only; "
            f"for a config you trust, set {_ENV_OPT_OUT}=1 (or use allow_any_target() in Python)")
    container = _as_container(cfg)
    if not isinstance(container, (Mapping, list, tuple)):
        target = getattr(cfg, "_target_", None)
        container = {"_target_": target} if isinstance(target, str) else {}
    for path, key, value in _walk(container, where):
        if key == "_target_" and isinstance(value, str):
            reason = _refusal(value)
            if reason is not None:
                raise UnsafeTargetError(f"{path}={value!r} is refused: {reason}. {hint}")
        elif key in _PICKLE_SWITCHES and value is _PICKLE_SWITCHES[key]:
            raise UnsafeTargetError(f"{path}={value!r} is refused: it lets pickled data run code when loaded. {hint}")


def safe_instantiate(config: Any, *args: Any, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` after :func:`check_targets` (and the same arguments).

    Examples:
        >>> safe_instantiate({"_target_": "torch.nn.Identity"})
        Identity()
    """
    check_targets(config)
    return instantiate(config, *args, **kwargs)
