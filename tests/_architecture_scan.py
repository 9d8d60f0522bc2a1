"""Static scans of ``src/tdrl`` for the architecture tests: private names used across layer packages.

A *layer package* is one of DESIGN.md's layers: ``tdrl._utils``, ``tdrl.data``, ``tdrl.envs``,
``tdrl.modules``, ``tdrl.objectives``, ``tdrl.collectors``, ``tdrl.weight_update``, ``tdrl.record``,
``tdrl.trainers``. Inside one package, underscore names are free to use; across packages they are not:

* an import of an underscore name or of a name from a private module of another package
  (``from tdrl.envs._rollout import stack_steps``, ``from tdrl.envs import _EnvWrapper``);
* an attribute access ``obj._name`` (not a dunder) where ``_name`` is defined (``def``, class attribute or
  ``self._name = ...``) in other packages but nowhere in the accessing package: a call into another
  package's internals such as ``env._hot()``. Names tdrl never defines (torch's, tensordict's) are out of
  scope, and so are names a package defines itself (an override of TorchRL's ``_step`` hook, say).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "tdrl"
PACKAGES = ("_utils", "data", "envs", "modules", "objectives", "collectors", "weight_update", "record", "trainers")


def package_of(path: Path) -> str:
    """The layer package of a source file (``"tdrl"`` for the top-level ``__init__``)."""
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else "tdrl"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> list[tuple[Path, ast.Module]]:
    """Every source file of ``src/tdrl`` with its parsed tree."""
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(SRC.rglob("*.py"))]


# torch's and tensordict's own private attributes that tdrl code also reads (``module._buffers``,
# ``tensor._version``, ``td._tensordict``): not tdrl names, whatever tdrl happens to call its own attributes.
THIRD_PARTY_PRIVATE = frozenset({"_buffers", "_modules", "_parameters", "_version", "_tensordict", "_batch_size"})


def _target_names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Attribute):
        return {target.attr}
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute):
        # self.__dict__["_name"] = ... defines ``_name`` (the envs' fast attribute writes).
        if target.value.attr == "__dict__" and isinstance(target.slice, ast.Constant):
            return {str(target.slice.value)}
    return set()


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= _target_names(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            names |= _target_names(node.target)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter", "register_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(str(node.args[0].value))
    return {n for n in names if _private(n) and n not in THIRD_PARTY_PRIVATE}


def _import_violations(pkg: str, tree: ast.Module) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "tdrl" or len(parts) < 2 or parts[1] == pkg:
                continue
            private_module = any(_private(p) for p in parts[2:]) or (parts[1] != "_utils" and _private(parts[1]))
            for alias in node.names:
                if private_module or _private(alias.name):
                    out.append((node.lineno, f"{node.module}:{alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "tdrl" and len(parts) > 2 and parts[1] != pkg and any(_private(p) for p in parts[2:]):
                    out.append((node.lineno, alias.name))
    return out


def private_uses() -> dict[str, list[str]]:
    """``{"<package>:<name>": ["path:line", ...]}`` for every cross-package private use."""
    trees = modules()
    defined: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees:
        defined[package_of(path)] |= _defined_names(tree)
    everywhere = set().union(*defined.values())
    uses: dict[str, list[str]] = defaultdict(list)
    for path, tree in trees:
        pkg = package_of(path)
        where = str(path.relative_to(SRC.parent.parent))
        for line, name in _import_violations(pkg, tree):
            uses[f"{pkg}:import {name}"].append(f"{where}:{line}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                name = node.attr
                if name in everywhere and name not in defined[pkg]:
                    uses[f"{pkg}:.{name}"].append(f"{where}:{node.lineno}")
    return dict(uses)
