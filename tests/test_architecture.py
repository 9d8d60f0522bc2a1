"""House rules a machine enforces (issue 15): layers, private names, size budgets, complexity, contracts, types.

The allow-lists live in ``tests/architecture_allowlist.toml`` and only shrink: a new offender, an entry
that grew, and an entry that is no longer needed all fail.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys

import pytest

from ._architecture_scan import SRC, private_uses

tomllib = pytest.importorskip("tomllib", reason="tomllib (Python >= 3.11) reads the allow-list")

ROOT = SRC.parent.parent
ALLOW = tomllib.loads((ROOT / "tests" / "architecture_allowlist.toml").read_text())
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC.parent), env.get("PYTHONPATH", "")])
    return env


# ---------------------------------------------------------------------- private names across packages
def test_no_private_names_are_used_across_layer_packages() -> None:
    uses = private_uses()
    allowed = ALLOW["private_uses"]
    new = {k: v for k, v in uses.items() if k not in allowed}
    assert not new, (
        "another package's underscore names are used (make them public and documented, or, for a TorchRL "
        f"override hook, add an entry with its reason to tests/architecture_allowlist.toml): {new}"
    )
    stale = sorted(set(allowed) - set(uses))
    assert not stale, f"allow-listed private uses that are gone: remove them from the allow-list: {stale}"


# ---------------------------------------------------------------------- layer contract (import-linter)
@pytest.mark.skipif(importlib.util.find_spec("importlinter") is None, reason="import-linter is not installed (the dev extra)")
def test_layer_contract_of_design_md_holds() -> None:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "DESIGN.md layers 0..7 KEPT" in proc.stdout


# ---------------------------------------------------------------------- size budget
def _function_sizes(node: ast.AST, rel: str, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[f"{rel}::{prefix}{child.name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
            _function_sizes(child, rel, f"{prefix}{child.name}.", out)
        elif isinstance(child, ast.ClassDef):
            _function_sizes(child, rel, f"{prefix}{child.name}.", out)


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        modules[rel] = text.count("\n")
        _function_sizes(ast.parse(text), rel, "", functions)
    return modules, functions


@pytest.mark.parametrize(
    ("kind", "limit"), [("module_lines", MAX_MODULE_LINES), ("function_lines", MAX_FUNCTION_LINES)]
)
def test_size_budget_only_shrinks(kind: str, limit: int) -> None:
    sizes = _sizes()[0 if kind == "module_lines" else 1]
    allowed: dict[str, int] = ALLOW[kind]
    over = {name: n for name, n in sizes.items() if n > limit}
    new = {name: n for name, n in over.items() if name not in allowed}
    assert not new, f"over the {limit}-line budget (split them): {new}"
    grown = {name: (allowed[name], n) for name, n in over.items() if name in allowed and n > allowed[name]}
    assert not grown, f"allow-listed entries grew (allowed, now): {grown}"
    done = sorted(name for name in allowed if sizes.get(name, 0) <= limit)
    assert not done, f"within the budget now (or gone): remove them from [{kind}] of the allow-list: {done}"
    shrunk = {name: (allowed[name], over[name]) for name in allowed if name in over and over[name] < allowed[name]}
    assert not shrunk, f"allow-listed entries shrank: lower them in [{kind}] of the allow-list: {shrunk}"


# ---------------------------------------------------------------------- complexity ignores
def _c901_ignored_files() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ignores = config["tool"]["ruff"]["lint"]["per-file-ignores"]
    return sorted(path for path, codes in ignores.items() if "C901" in codes)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (the dev extra)")
@pytest.mark.parametrize("path", _c901_ignored_files())
def test_complexity_ignores_are_still_needed(path: str) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    limit = config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]
    proc = subprocess.run(
        ["ruff", "check", "--isolated", "--select", "C901", "--config", f"lint.mccabe.max-complexity={limit}",
         "--output-format", "concise", path],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert "C901" in proc.stdout, f"{path} is within max-complexity {limit}: drop its C901 per-file ignore"


# ---------------------------------------------------------------------- contract suites
def _referenced(paths: list[str]) -> set[str]:
    names: set[str] = set()
    for rel in paths:
        for node in ast.walk(ast.parse((ROOT / rel).read_text())):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
    return names


def _public_subclasses(module_name: str, base_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    base = getattr(module, base_name)
    return sorted(
        name
        for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) and issubclass(obj, base) and obj is not base
    )


_BUFFER_CONTRACT = ["tests/data/replay_buffers/test_buffer_contract.py"]
# Every file of tests/envs/transforms/ whose classes subclass the contract (one file per transform family).
_TRANSFORM_CONTRACT = sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "tests/envs/transforms").glob("test_*.py")
    if "(TransformContract)" in p.read_text()
)
CONTRACTS = [
    ("tdrl.envs.transforms", "Transform", _TRANSFORM_CONTRACT),
    ("tdrl.objectives", "LossModule", ["tests/objectives/_cases.py", "tests/objectives/_cases_marl.py",
                                       "tests/objectives/_cases_imitation.py"]),
    ("tdrl.data", "Storage", _BUFFER_CONTRACT),
    ("tdrl.data", "Sampler", _BUFFER_CONTRACT),
    ("tdrl.data", "Writer", _BUFFER_CONTRACT),
]


@pytest.mark.parametrize(("module", "base", "suite"), CONTRACTS, ids=[c[1] for c in CONTRACTS])
def test_every_public_subclass_is_in_its_contract_suite(module: str, base: str, suite: list[str]) -> None:
    exempt: dict[str, list[str]] = ALLOW["contract_exemptions"]
    referenced = _referenced(suite)
    public = _public_subclasses(module, base)
    missing = [name for name in public if name not in referenced and name not in exempt]
    assert not missing, f"public {base} subclasses missing from the contract suite {suite}: {missing}"
    for name in public:
        if name in exempt:
            assert name not in referenced, f"{name} is in the contract suite now: drop its exemption"
            covering = exempt[name][0]
            assert name in _referenced([covering]), f"{name}'s exemption names {covering}, which does not test it"


# ---------------------------------------------------------------------- type checker
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (the dev extra)")
@pytest.mark.timeout(1200)  # a cold mypy cache over the typed core takes minutes on a loaded 2-core machine
def test_mypy_is_clean_on_the_typed_core() -> None:
    # The files to check are pyproject.toml's [tool.mypy] files (the typed core), as in .ci/run.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT, env=_env(), capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


_KEY_SNIPPET = """
from tdrl.objectives import ClipPPOLoss, DQNLoss, SACLoss


class MyPPO(ClipPPOLoss):
    def read(self) -> object:
        return self.tensor_keys.{ppo}, self._tensor_keys.value_target


def dqn_key(loss: DQNLoss) -> object:
    return loss.tensor_keys.{dqn}


def sac_key(loss: SACLoss) -> object:
    return loss._tensor_keys.{sac}
"""


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (the dev extra)")
@pytest.mark.timeout(1200)
def test_mypy_checks_each_losss_keys(tmp_path) -> None:
    # Every loss binds LossModule's key type to its own _AcceptedKeys, so a misspelt key is a type error.
    good = tmp_path / "good_keys.py"
    good.write_text(_KEY_SNIPPET.format(ppo="advantage", dqn="action_value", sac="log_prob"))
    bad = tmp_path / "bad_keys.py"
    bad.write_text(_KEY_SNIPPET.format(ppo="advantagee", dqn="advantag", sac="action_value"))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(good), str(bad)],
        cwd=ROOT, env=_env(), capture_output=True, text=True,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if "good_keys.py" in line], proc.stdout
    bad_errors = "\n".join(line for line in errors if "bad_keys.py" in line)
    for key in ("advantagee", "advantag", "action_value"):
        assert f'has no attribute "{key}"' in bad_errors, proc.stdout
    assert len(errors) == 3, proc.stdout
