"""Version-dispatched implementations: ``@implement_for("gymnasium", "1.0")`` (TorchRL's ``implement_for``).

Several functions with the same qualified name are registered, each for a version range of one package;
calling the name runs the first registration whose package is installed at a version in
``[from_version, to_version)``. The choice is made on the first call and cached.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any, ClassVar

from packaging.version import InvalidVersion, Version

__all__ = ["implement_for"]


def _installed_version(module_name: str) -> Version | None:
    """The installed version of ``module_name``, or ``None`` when it does not import."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    raw = getattr(module, "__version__", None)
    if raw is None:
        try:
            raw = importlib.metadata.version(module_name)
        except importlib.metadata.PackageNotFoundError:
            return None
    try:
        return Version(str(raw).split("+")[0])
    except InvalidVersion:
        return None


class _Dispatcher:
    """The callable bound to a name: holds the registrations and runs the one that matches."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self.registrations: list[implement_for] = []
        self._chosen: Callable[..., Any] | None = None

    def _resolve(self) -> Callable[..., Any]:
        if self._chosen is None:
            for reg in self.registrations:
                if reg.matches():
                    self._chosen = reg.fn
                    break
            else:
                wanted = ", ".join(f"{r.module_name} in [{r.from_version}, {r.to_version})" for r in self.registrations)
                raise ModuleNotFoundError(
                    f"{self.qualname}: no implementation for the installed packages; registered for {wanted}"
                )
        return self._chosen

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._resolve()(*args, **kwargs)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self._resolve().__get__(obj, objtype)


class implement_for:  # noqa: N801 - TorchRL's name
    """Registers the decorated function as the implementation of its name for a version range of a package.

    Args:
        module_name: the package whose version decides (``"gymnasium"``, ``"torch"``, ...).
        from_version: lowest version (inclusive); ``None`` for no lower bound.
        to_version: highest version (exclusive); ``None`` for no upper bound.
        class_method: register the function as a ``classmethod``.

    Examples:
        >>> @implement_for("torch", None, "1.0")
        ... def backend_name():
        ...     return "old torch"
        >>> @implement_for("torch", "1.0")
        ... def backend_name():
        ...     return "new torch"
        >>> backend_name()
        'new torch'
    """

    _REGISTRY: ClassVar[dict[str, _Dispatcher]] = {}

    def __init__(
        self,
        module_name: str,
        from_version: str | None = None,
        to_version: str | None = None,
        *,
        class_method: bool = False,
    ) -> None:
        self.module_name = module_name
        self.from_version = from_version
        self.to_version = to_version
        self.class_method = class_method
        self.fn: Callable[..., Any] | None = None

    def matches(self) -> bool:
        """Whether the installed ``module_name`` lies in ``[from_version, to_version)``."""
        version = _installed_version(self.module_name)
        if version is None:
            return False
        if self.from_version is not None and version < Version(self.from_version):
            return False
        return not (self.to_version is not None and version >= Version(self.to_version))

    def __call__(self, fn: Callable[..., Any]) -> _Dispatcher:
        self.fn = classmethod(fn) if self.class_method else fn
        key = f"{fn.__module__}.{fn.__qualname__}"
        dispatcher = self._REGISTRY.setdefault(key, _Dispatcher(fn.__qualname__))
        dispatcher.registrations.append(self)
        dispatcher._chosen = None  # a later registration may be the one that matches
        functools.update_wrapper(dispatcher, fn)
        return dispatcher
