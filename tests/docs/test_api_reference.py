"""Every public name of tdrl has a docstring, a runnable example, and a place in the API reference.

The examples are executed by the doctest run (``--doctest-modules`` over ``src/tdrl``, see pyproject);
this test checks that each public class and function has one. Names without an example yet are listed in
``examples_allowlist.txt``, which may only shrink.
"""

from __future__ import annotations

from pathlib import Path

from tests.docs._public_api import gen_api, has_run_example, own_docstring, own_objects, public_objects

ALLOWLIST = Path(__file__).with_name("examples_allowlist.txt")


def _allowlisted() -> set[str]:
    lines = ALLOWLIST.read_text().splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def test_api_pages_are_current():
    assert gen_api().main(["--check"]) == 0, "docs/api is stale: run python docs/gen_api.py"


def test_every_public_name_has_a_docstring():
    missing = sorted(name for name, obj in public_objects().items() if not own_docstring(obj).strip())
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"


def test_public_names_come_from_tdrl_or_tensordict():
    # TorchRL re-exports a few tensordict names (ExplorationType, NormalParamExtractor, ...); tdrl does the
    # same, and their docstrings are tensordict's. Everything else must be defined in tdrl, where the
    # doctest run (which collects examples from the defining module) executes its examples.
    foreign = {n: o.__module__ for n, o in public_objects().items() if n not in own_objects()}
    bad = sorted(n for n, m in foreign.items() if m.split(".")[0] != "tensordict")
    assert not bad, f"public names defined outside tdrl and tensordict: {bad}"


def test_every_public_name_has_an_example():
    allowed = _allowlisted()
    objects = own_objects()
    without = {name for name, obj in objects.items() if not has_run_example(own_docstring(obj))}
    new = sorted(without - allowed)
    assert not new, (
        f"{len(new)} public names without an `Examples:` block run by the doctests "
        f"(write one; the allow-list only shrinks): {new}"
    )


def test_example_allowlist_only_shrinks():
    objects = own_objects()
    allowed = _allowlisted()
    gone = sorted(allowed - set(objects))
    done = sorted(n for n in allowed & set(objects) if has_run_example(own_docstring(objects[n])))
    assert not gone, f"remove from {ALLOWLIST.name}, no longer public names: {gone}"
    assert not done, f"remove from {ALLOWLIST.name}, these have an example now: {done}"
