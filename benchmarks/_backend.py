"""Which library the benchmarks exercise: tdrl (default) or TorchRL (``--backend torchrl``).

Benchmark files import everything through ``sub``: ``envs = sub("envs")``, then ``envs.DMControlEnv``,
so the same workload code runs on either library.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

BACKEND: str = os.environ.get("TDRL_BENCH_BACKEND", "tdrl")
if BACKEND not in ("tdrl", "torchrl"):
    raise ValueError(f"TDRL_BENCH_BACKEND must be 'tdrl' or 'torchrl', got {BACKEND!r}")


def sub(name: str) -> ModuleType:
    """Imports ``<backend>.<name>`` (for example ``sub("envs")`` -> ``tdrl.envs`` or ``torchrl.envs``)."""
    return importlib.import_module(f"{BACKEND}.{name}")


def has(name: str, attr: str | None = None) -> bool:
    """True when ``<backend>.<name>`` (and ``attr`` in it) can be imported."""
    try:
        mod = sub(name)
    except ImportError:
        return False
    return attr is None or hasattr(mod, attr)
