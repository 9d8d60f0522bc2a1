"""The public names of tdrl, as ``docs/gen_api.py`` documents them (shared by the docs tests)."""

from __future__ import annotations

import importlib.util
import inspect
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@cache
def gen_api() -> ModuleType:
    """``docs/gen_api.py`` loaded as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("tdrl_docs_gen_api", ROOT / "docs" / "gen_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def public_objects() -> dict[str, Any]:
    """``{"pkg.Name": object}`` for every public class and function, each listed once."""
    out: dict[str, Any] = {}
    for pkg, names in gen_api().documented_names().items():
        module = importlib.import_module(pkg)
        for name in names:
            obj = getattr(module, name)
            # constants and typing aliases (``REGISTRY``, ``CheckpointFormat``) cannot carry a docstring
            if inspect.isclass(obj) or inspect.isroutine(obj):
                out[f"{pkg}.{name}"] = obj
    return out


def own_objects() -> dict[str, Any]:
    """The public objects defined in tdrl (not the ones re-exported from tensordict, as TorchRL does)."""
    return {n: o for n, o in public_objects().items() if o.__module__.split(".")[0] == "tdrl"}


def own_docstring(obj: Any) -> str:
    """The docstring written for ``obj`` itself: not inherited, not dataclasses' generated signature."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    doc = doc or ""
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""
    return doc


def has_run_example(doc: str) -> bool:
    """True when the docstring has an example line that the doctest run executes (not ``+SKIP``)."""
    lines = [ln.strip() for ln in doc.splitlines() if ln.strip().startswith(">>>")]
    return any("+SKIP" not in ln for ln in lines)
