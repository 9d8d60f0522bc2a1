"""Whether ``TransformedEnv(TransformedEnv(env))`` flattens into one ``TransformedEnv`` (TorchRL's switch).

The setting lives in the ``AUTO_UNWRAP_TRANSFORMED_ENV`` environment variable so that worker processes see
the value their parent chose.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

__all__ = ["auto_unwrap_transformed_env", "set_auto_unwrap_transformed_env"]

_ENV_VAR = "AUTO_UNWRAP_TRANSFORMED_ENV"
_DEFAULT = True
_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f")


def auto_unwrap_transformed_env(allow_none: bool = False) -> bool | None:
    """The current setting: the value set last, else ``AUTO_UNWRAP_TRANSFORMED_ENV``, else ``True``.

    Args:
        allow_none: return ``None`` (instead of the default ``True``) when nothing was set.

    Examples:
        >>> with set_auto_unwrap_transformed_env(False):
        ...     auto_unwrap_transformed_env()
        False
    """
    raw = os.environ.get(_ENV_VAR)
    if raw is None:
        return None if allow_none else _DEFAULT
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{_ENV_VAR}={raw!r} is not a boolean; use one of {_TRUE + _FALSE}")


class set_auto_unwrap_transformed_env:  # noqa: N801 - TorchRL's name
    """Sets whether nested ``TransformedEnv`` instances are unwrapped: a context manager, a decorator, or ``.set()``.

    Args:
        mode: ``True`` flattens ``TransformedEnv(TransformedEnv(env, t1), t2)`` into one env holding
            ``Compose(t1, t2)``; ``False`` keeps the nesting.

    Examples:
        >>> set_auto_unwrap_transformed_env(False).set()
        >>> auto_unwrap_transformed_env()
        False
        >>> _ = os.environ.pop("AUTO_UNWRAP_TRANSFORMED_ENV")  # back to "not set" (the default, True)
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous: str | None = None

    def set(self) -> None:
        """Applies the setting for the rest of the process (and the processes it starts)."""
        self._previous = os.environ.get(_ENV_VAR)
        os.environ[_ENV_VAR] = str(self.mode)

    def __enter__(self) -> set_auto_unwrap_transformed_env:
        self.set()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is None:
            os.environ.pop(_ENV_VAR, None)
        else:
            os.environ[_ENV_VAR] = self._previous

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with type(self)(self.mode):
                return fn(*args, **kwargs)

        return wrapped
