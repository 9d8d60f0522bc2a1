from __future__ import annotations

import pytest

from tdrl._utils import seed_generator, timeit


@pytest.fixture(autouse=True)
def _clean_registry():
    timeit.erase()
    yield
    timeit.erase()


def test_context_manager_counts_calls_and_totals():
    for _ in range(3):
        with timeit("phase"):
            pass
    per_call = timeit.todict()["phase"]
    total = timeit.todict(percall=False)["phase"]
    assert total == pytest.approx(3 * per_call)
    assert timeit._REG["phase"][2] == 3


def test_decorator_records_under_its_name_and_returns_value():
    @timeit("fn")
    def add(a, b):
        return a + b

    assert add(1, 2) == 3
    assert add(2, 2) == 4
    assert timeit._REG["fn"][2] == 2


def test_prefix_print_and_erase():
    with timeit("x"):
        pass
    assert set(timeit.todict(prefix="time")) == {"time/x"}
    text = timeit.print()
    assert text.startswith("x:") and "1 calls" in text
    timeit.erase()
    assert timeit.todict() == {} and timeit.print() == ""


def test_seed_generator_is_deterministic_and_spreads():
    seeds = [seed_generator(s) for s in range(100)]
    assert len(set(seeds)) == 100
    assert all(0 <= s < 2**32 - 1 for s in seeds)
    assert seed_generator(0) == 795726461  # TorchRL 0.14.1's value: seeded runs match across libraries
    assert seed_generator(7) == seed_generator(7)
