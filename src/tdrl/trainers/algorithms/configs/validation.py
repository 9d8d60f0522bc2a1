"""Checks a composed config against its targets' signatures before anything is built.

Every node with a ``_target_`` is resolved to its callable; each key must be a parameter the callable
accepts (following ``**kwargs`` up a class's bases), and each required parameter must be set unless the
node is ``_partial_``. A mistyped key is reported with its full path, a close match and the valid keys.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch
from hydra.utils import get_object
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from tdrl.trainers.algorithms.configs.errors import ConfigValidationError

__all__ = ["ConfigValidationError", "TargetSignature", "explain_key_error", "signature_of", "suggest", "validate_config"]

_SPECIAL_KEYS = frozenset({"_target_", "_partial_", "_recursive_", "_convert_", "_args_"})
# Constructors that take no configurable arguments: a ``**kwargs`` chain ending here is closed.
_TERMINAL_INITS = (object.__init__, torch.nn.Module.__init__)


@dataclasses.dataclass(frozen=True)
class TargetSignature:
    """What a ``_target_`` accepts: its keyword names, which of them are required, and whether ``**kwargs`` stays open."""

    accepted: frozenset[str]
    required: frozenset[str]
    open: bool


def _params(fn: Callable) -> tuple[list[inspect.Parameter], bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], True
    named = [
        p for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
    ]
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return named, has_var_kw


def signature_of(target: Callable | str) -> TargetSignature:
    """Collects the keyword arguments a callable or class accepts.

    For a class whose ``__init__`` takes ``**kwargs``, the parameters of the next ``__init__`` up the MRO are
    added, since that is where the keywords are forwarded; a chain ending at ``object``/``nn.Module`` is closed.

    Examples:
        >>> sig = signature_of("torch.nn.Linear")
        >>> sorted(sig.required), "bias" in sig.accepted, sig.open
        (['in_features', 'out_features'], True, False)
    """
    obj = get_object(target) if isinstance(target, str) else target
    if not isinstance(obj, type):
        named, open_kw = _params(obj)
        return TargetSignature(
            frozenset(p.name for p in named),
            frozenset(p.name for p in named if p.default is p.empty),
            open_kw,
        )
    accepted: set[str] = set()
    required: set[str] | None = None
    for klass in obj.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if init in _TERMINAL_INITS:
            return TargetSignature(frozenset(accepted), frozenset(required or ()), False)
        named, open_kw = _params(init)
        accepted.update(p.name for p in named)
        if required is None:
            required = {p.name for p in named if p.default is p.empty}
        if not open_kw:
            return TargetSignature(frozenset(accepted), frozenset(required), False)
    return TargetSignature(frozenset(accepted), frozenset(required or ()), True)


def suggest(key: str, valid: set[str] | frozenset[str]) -> str:
    """Formats the hint for an unknown ``key``: the closest valid key, then all of them.

    Examples:
        >>> suggest("clip_epsilonn", {"clip_epsilon", "entropy_coeff"})
        'did you mean clip_epsilon? valid keys: clip_epsilon, entropy_coeff'
    """
    close = difflib.get_close_matches(key, sorted(valid), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"{hint}valid keys: {', '.join(sorted(valid))}"


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _children(node: DictConfig | ListConfig, path: str, errors: list[str]) -> Iterator[tuple[str, Any]]:
    items = node.items_ex(resolve=False) if isinstance(node, DictConfig) else enumerate(node._iter_ex(resolve=False))
    keys = [k for k, _ in items] if isinstance(node, DictConfig) else list(range(len(node)))
    for key in keys:
        child_path = _join(path, key)
        if OmegaConf.is_missing(node, key):
            continue
        try:
            yield child_path, cast(Any, node)[key]  # DictConfig keys or ListConfig indices
        except OmegaConfBaseException as err:
            errors.append(f"{child_path}: cannot resolve ({err.__class__.__name__}: {str(err).splitlines()[0]})")


def _check_node(node: DictConfig, path: str, errors: list[str]) -> None:
    target = node.get("_target_")
    if not isinstance(target, str):
        return
    try:
        sig = signature_of(target)
    except Exception as err:  # noqa: BLE001 - any import failure is reported, not raised mid-walk
        errors.append(f"{_join(path, '_target_')}: cannot import {target!r} ({err.__class__.__name__}: {err})")
        return
    keys = {str(k) for k in node.keys()} - _SPECIAL_KEYS
    if not sig.open:
        for key in sorted(keys - sig.accepted):
            errors.append(f"{_join(path, key)}: unknown key; {suggest(key, sig.accepted)} (target: {target})")
    partial = bool(node.get("_partial_", False))
    n_args = len(node.get("_args_", ()) or ())
    if partial:
        return
    for name in sorted(sig.required):
        if name not in keys and n_args == 0:
            errors.append(f"{_join(path, name)}: required by {target} but not set")
        elif name in keys and OmegaConf.is_missing(node, name):
            errors.append(f"{_join(path, name)}: required by {target} but left as ??? (missing)")


def _walk(node: Any, path: str, errors: list[str], seen: set[int]) -> None:
    if not isinstance(node, (DictConfig, ListConfig)):
        return
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, DictConfig):
        _check_node(node, path, errors)
    for child_path, child in _children(node, path, errors):
        _walk(child, child_path, errors, seen)


def validate_config(cfg: Any, path: str = "") -> None:
    """Walks ``cfg`` and raises one :class:`ConfigValidationError` listing every problem found.

    Args:
        cfg: a composed ``DictConfig`` (or a node of it, e.g. ``cfg.trainer``), or a structured config.
        path: prefix of the reported key paths (e.g. ``"trainer"``).

    Raises:
        ConfigValidationError: unknown keys (with a suggestion and the valid keys), required keys left unset,
            unresolvable interpolations or targets that cannot be imported.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"net": {"_target_": "torch.nn.Linear", "in_features": 2, "out_featuress": 3}})
        >>> try:
        ...     validate_config(cfg)
        ... except ConfigValidationError as err:
        ...     print(str(err).splitlines()[1])
        net.out_featuress: unknown key; did you mean out_features? valid keys: bias, device, dtype, in_features, out_features (target: torch.nn.Linear)
    """
    if dataclasses.is_dataclass(cfg):
        cfg = OmegaConf.structured(cfg)
    errors: list[str] = []
    _walk(cfg, path, errors, set())
    if errors:
        raise ConfigValidationError(f"invalid config ({len(errors)} problem(s)):\n" + "\n".join(errors))


def explain_key_error(err: BaseException) -> str | None:
    """Rewrites OmegaConf's "key not in struct" error (raised while composing) with a suggestion, or ``None``.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Cfg:
        ...     lr: float = 1e-3
        >>> try:
        ...     OmegaConf.merge(OmegaConf.structured(Cfg), {"lrr": 1.0})
        ... except Exception as err:
        ...     print(explain_key_error(err))
        lrr: unknown key; did you mean lr? valid keys: lr
    """
    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, (ConfigKeyError, ConfigAttributeError)):
        cause = cause.__cause__ or cause.__context__
    if not isinstance(cause, (ConfigKeyError, ConfigAttributeError)) or cause.key is None:
        return None
    object_type = cause.object_type
    if object_type is None or not dataclasses.is_dataclass(object_type):
        return None
    valid = {f.name for f in dataclasses.fields(object_type)} - _SPECIAL_KEYS
    full_key = cause.full_key or str(cause.key)
    return f"{full_key}: unknown key; {suggest(str(cause.key), valid)}"
