from __future__ import annotations

import importlib
import types

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


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_exclusive_timers_leave_out_nested_exclusive_ones(monkeypatch):
    clock = _FakeClock()
    module = importlib.import_module("tdrl._utils.timeit")  # the package re-exports the class under that name
    monkeypatch.setattr(module, "time", types.SimpleNamespace(perf_counter=clock))
    timeit.erase()
    with timeit("outer", exclusive=True):
        clock.now += 1.0
        with timeit("inner", exclusive=True):
            clock.now += 5.0
            with timeit("plain"):  # not exclusive: stays inside "inner"
                clock.now += 2.0
        clock.now += 1.0
    with timeit("incl"):  # an inclusive timer around an exclusive one keeps TorchRL's semantics
        with timeit("inner", exclusive=True):
            clock.now += 3.0
    assert timeit.todict(percall=False) == {"outer": 2.0, "inner": 10.0, "plain": 2.0, "incl": 3.0}
    assert timeit.todict()["inner"] == 5.0
    timeit.erase()


def test_state_dict_round_trip_replaces_only_saved_names():
    timeit.erase()
    timeit.record("trainer/collect", 3.0, calls=2)
    timeit.record("other", 1.0)
    state = timeit.state_dict(prefix="trainer/")
    assert state == {"trainer/collect": [3.0, 2.0]}
    timeit.record("trainer/collect", 10.0)
    timeit.load_state_dict(state)
    assert timeit.todict(percall=False) == {"trainer/collect": 3.0, "other": 1.0}
    assert timeit.todict()["trainer/collect"] == 1.5
    timeit.erase()


def test_printevery_prints_at_the_interval_and_erases(caplog):
    timeit._printevery_count = 0
    printed = []
    original = timeit.print
    try:
        timeit.print = classmethod(lambda cls, prefix=None: printed.append(dict(cls._REG)) or "")
        for _ in range(6):
            with timeit("loop"):
                pass
            timeit.printevery(num_prints=3, total_count=6, erase=True)
    finally:
        timeit.print = original
    # interval 2: calls 0, 2, 4 print; each print after erase covers the calls since the previous one
    assert len(printed) == 3
    assert [rec["loop"][2] for rec in printed] == [1, 2, 2]
    assert timeit._REG["loop"][2] == 1  # the call after the last print
    with pytest.raises(ValueError, match="num_prints"):
        timeit.printevery(0, 10)


def test_reset_is_erase():
    with timeit("x"):
        pass
    timeit.reset()
    assert timeit.todict() == {}


def test_start_and_elapsed_without_context_manager():
    import time

    timer = timeit("long").start()
    time.sleep(0.01)
    assert timer.elapsed() >= 0.01
    assert "long" not in timeit.todict()  # elapsed() reads, it does not record


def test_mark_start_mark_end():
    timeit.mark_start("span")
    timeit.mark_end("span")
    assert timeit._REG["span"][2] == 1
    with pytest.raises(KeyError, match="mark_start"):
        timeit.mark_end("span")


def test_sync_flag_accepted_on_cpu():
    with timeit("synced", sync=True):
        pass
    assert timeit._REG["synced"][2] == 1
