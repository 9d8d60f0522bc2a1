"""Lazy re-exports for package ``__init__`` files (PEP 562), so that importing a package costs nothing.

``tdrl --help`` and config validation must answer in well under two seconds, which rules out importing torch,
tensordict or gymnasium on the way to :mod:`tdrl.trainers.cli`. The ``__init__`` files above the CLI
(``tdrl``, ``tdrl.trainers``, ``tdrl.trainers.algorithms``, ``tdrl.trainers.algorithms.configs``) therefore
name what they re-export and from which module, and import that module on the first access of a name.
Standard library only: this module is imported before anything heavy. Public (not ``_lazy``) because the
packages of several layers use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], *,
                 on_first_use: Callable[[], None] | None = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose names are imported on first use.

    Args:
        package: the package's ``__name__``.
        exports: public name -> the module that defines it (a name that is itself a submodule maps to it), or
            ``"module:attribute"`` for a name that re-exports an attribute under another name.
        on_first_use: called once, before the first name is imported (e.g. to register Hydra configs).

    Returns:
        ``(__getattr__, __dir__)``, to assign at the package's top level.

    Examples:
        >>> getattr_, dir_ = lazy_exports("json", {"JSONDecoder": "json.decoder"})
        >>> getattr_("JSONDecoder").__name__, "JSONDecoder" in dir_()
        ('JSONDecoder', True)
    """
    pending = [on_first_use] if on_first_use is not None else []

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        while pending:
            pending.pop()()
        module_name, _, attribute = module_name.partition(":")
        module = importlib.import_module(module_name)
        value = module if module_name == f"{package}.{name}" else getattr(module, attribute or name)
        setattr(sys.modules[package], name, value)  # later accesses skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
