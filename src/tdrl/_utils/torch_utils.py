"""Device selection and deferred ``torch.compile`` (TorchRL's ``get_available_device``, ``compile_with_warmup``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["compile_with_warmup", "get_available_device"]


def get_available_device(return_str: bool = False) -> torch.device | str:
    """The first accelerator found (CUDA, then NPU, then MPS), else the CPU.

    Args:
        return_str: return ``"cuda:0"``-style strings instead of a ``torch.device``.

    Examples:
        >>> get_available_device().type in ("cpu", "cuda", "npu", "mps")
        True
        >>> isinstance(get_available_device(return_str=True), str)
        True
    """
    if torch.cuda.is_available():
        name = "cuda:0"
    elif getattr(torch, "npu", None) is not None and torch.npu.is_available():
        name = "npu:0"
    elif torch.backends.mps.is_available():
        name = "mps:0"
    else:
        name = "cpu"
    return name if return_str else torch.device(name)


def compile_with_warmup(
    model: Callable[..., Any] | None = None, *, warmup: int = 1, **compile_kwargs: Any
) -> Callable[..., Any]:
    """Runs ``model`` eagerly for its first ``warmup`` calls, then through ``torch.compile(model, **compile_kwargs)``.

    The eager calls let lazy modules initialise and data-dependent shapes settle before compilation, so the
    compiled graph is traced once on the steady-state inputs.

    Args:
        model: the module or function; when omitted, a decorator is returned.
        warmup: eager calls before compiling (0 compiles on the first call).
        **compile_kwargs: forwarded to ``torch.compile`` (``mode``, ``fullgraph``, ``backend``, ...).

    Examples:
        >>> net = torch.nn.Linear(2, 1)
        >>> fn = compile_with_warmup(net, warmup=3, backend="eager")
        >>> fn(torch.zeros(1, 2)).shape
        torch.Size([1, 1])
        >>> @compile_with_warmup(warmup=2, backend="eager")
        ... def double(x):
        ...     return 2 * x
        >>> int(double(torch.ones(())))
        2
    """
    if warmup < 0:
        raise ValueError(f"compile_with_warmup: warmup must be >= 0, got {warmup}")
    if model is None:
        return functools.partial(compile_with_warmup, warmup=warmup, **compile_kwargs)
    calls = 0
    target = model

    @functools.wraps(model)
    def run(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls, target
        if calls == warmup:
            target = torch.compile(model, **compile_kwargs)
        calls += 1
        return target(*args, **kwargs)

    return run
