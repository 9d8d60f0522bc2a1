"""Trajectory views and a small predicate language to select trajectories from stored transitions."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import NestedKey, TensorClass, TensorDictBase
from tensordict.utils import unravel_key

from tdrl._utils import TDRLWarning
from tdrl.data.replay_buffers.ted import DEFAULT_DONE_KEYS
from tdrl.data.replay_buffers.utils import find_start_stop_traj

__all__ = ["Trajectory", "TrajectoryPredicate", "filter_trajectories", "iter_trajectories", "traj"]

# Where trajectory ids are looked up, in order (TorchRL's collectors write ("collector", "traj_ids")).
_TRAJECTORY_KEYS: tuple[NestedKey, ...] = (("collector", "traj_ids"), "traj_ids", "episode")
# TED layout: the end flags after a step live under "next"; a flat layout keeps them at the root.
_END_KEY_GROUPS: tuple[tuple[NestedKey, ...], ...] = (
    tuple(("next", k) for k in DEFAULT_DONE_KEYS),
    DEFAULT_DONE_KEYS,
)


class Trajectory(TensorClass["nocast"]):  # type: ignore[type-arg,name-defined]  # tensordict's option syntax
    """One trajectory: a ``[T]`` TensorDict of consecutive transitions, read by attribute.

    ``trajectory.name`` looks ``name`` up at the root, then under ``"next"`` (so ``.reward`` and
    ``.done`` are the post-step entries, ``.observation`` and ``.action`` the root ones);
    ``trajectory["key"]`` reads the data directly. Slicing returns a :class:`Trajectory`, and
    trajectories of different lengths stack with :func:`tensordict.lazy_stack`.

    Attributes:
        data: the transitions, with one batch dim.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Trajectory(TensorDict(observation=torch.arange(4.0), next=TensorDict(
        ...     reward=torch.ones(4, 1), batch_size=[4]), batch_size=[4]))
        >>> t.length, t.total_reward.item(), t[:2].observation.tolist()
        (4, 4.0, [0.0, 1.0])
    """

    data: TensorDictBase

    def __post_init__(self) -> None:
        data = self.data
        if not self.batch_size and data is not None and data.batch_dims:
            if data.batch_dims != 1:
                raise ValueError(f"Trajectory needs data with one batch dim, got batch_size={tuple(data.batch_size)}.")
            self.batch_size = data.batch_size

    @property
    def length(self) -> int:
        """The number of transitions."""
        return int(self.batch_size[0])

    @property
    def total_reward(self) -> torch.Tensor:
        """The sum of the rewards."""
        return self.get("reward").sum()

    def get(self, key: NestedKey, default: Any = None) -> Any:  # type: ignore[override]  # falls back to "next"
        """``data[key]``, else ``data["next", key]`` for a string key, else ``default``."""
        value = self.data.get(key, None)
        if value is None and isinstance(key, str):
            value = self.data.get(("next", key), None)
        return default if value is None else value

    def keys(self, *args: Any, **kwargs: Any) -> Any:
        """The keys of :attr:`data`."""
        return self.data.keys(*args, **kwargs)


# The tensorclass decorator installs its own __getattr__/__getitem__ on the class: chain onto them.
_CLASS_GETATTR: Callable[..., Any] = getattr(Trajectory, "__getattr__")  # noqa: B009 - set by the decorator
_CLASS_GETITEM: Callable[..., Any] = getattr(Trajectory, "__getitem__")  # noqa: B009


def _getattr(self: Trajectory, name: str) -> Any:
    try:
        return _CLASS_GETATTR(self, name)
    except AttributeError:
        if name.startswith("_"):
            raise
        value = self.get(name)
        if value is None:
            keys = sorted(map(str, self.data.keys(include_nested=True, leaves_only=True)))
            raise AttributeError(f"Trajectory has no entry {name!r} (nor ('next', {name!r})); keys: {keys}.") from None
        return value


def _getitem(self: Trajectory, index: Any) -> Any:
    if isinstance(index, str) or (isinstance(index, tuple) and index and all(isinstance(k, str) for k in index)):
        return self.data[index]
    return _CLASS_GETITEM(self, index)


def _repr(self: Trajectory) -> str:
    shape = f"length={self.length}" if len(self.batch_size) == 1 else f"batch_size={tuple(self.batch_size)}"
    keys = None if self.data is None else sorted(map(str, self.data.keys()))
    return f"Trajectory({shape}, keys={keys})"


for _name, _fn in (("__getattr__", _getattr), ("__getitem__", _getitem), ("__repr__", _repr)):
    setattr(Trajectory, _name, _fn)


def _union(a: frozenset | None, b: frozenset | None) -> frozenset | None:
    return None if a is None or b is None else a | b


class TrajectoryPredicate:
    """A yes/no test on a :class:`Trajectory`, composable with ``&``, ``|`` and ``~``.

    Comparing a :data:`traj` expression builds one (``traj.reward.sum() > 1``); any callable can be
    wrapped too.

    Args:
        fn: maps a trajectory to a boolean.
        description: shown in the repr.
        keys: the data keys ``fn`` reads (``None``: unknown).

    Examples:
        >>> p = (traj.length >= 2) & ~(traj.reward.sum() > 10)
        >>> p, p.required_keys()
        (TrajectoryPredicate(((traj.length >= 2) & ~(traj.reward.sum() > 10))), frozenset({'reward'}))
    """

    def __init__(self, fn: Callable[[Trajectory], Any], description: str = "predicate",
                 keys: frozenset | None = None) -> None:
        self._fn = fn
        self._description = description
        self._keys = keys

    def required_keys(self) -> frozenset | None:
        """The data keys the predicate reads, or ``None`` when unknown (an opaque callable)."""
        return self._keys

    def __call__(self, trajectory: Trajectory) -> bool:
        return bool(self._fn(trajectory))

    def __and__(self, other: TrajectoryPredicate) -> TrajectoryPredicate:
        return TrajectoryPredicate(lambda t: self(t) and other(t), f"({self._description} & {other._description})",
                                   keys=_union(self._keys, other._keys))

    def __or__(self, other: TrajectoryPredicate) -> TrajectoryPredicate:
        return TrajectoryPredicate(lambda t: self(t) or other(t), f"({self._description} | {other._description})",
                                   keys=_union(self._keys, other._keys))

    def __invert__(self) -> TrajectoryPredicate:
        return TrajectoryPredicate(lambda t: not self(t), f"~{self._description}", keys=self._keys)

    def __repr__(self) -> str:
        return f"TrajectoryPredicate({self._description})"


class _PerStep:
    """A per-transition comparison: ambiguous as a filter until reduced by ``.any()`` / ``.all()``."""

    def __init__(self, fn: Callable[[Trajectory], torch.Tensor], description: str, keys: frozenset) -> None:
        self._fn, self._description, self._keys = fn, description, keys

    def any(self) -> TrajectoryPredicate:
        """Holds if the comparison holds at some transition."""
        return TrajectoryPredicate(lambda t: bool(self._fn(t).any()), f"{self._description}.any()", self._keys)

    def all(self) -> TrajectoryPredicate:
        """Holds if the comparison holds at every transition."""
        return TrajectoryPredicate(lambda t: bool(self._fn(t).all()), f"{self._description}.all()", self._keys)

    def __call__(self, trajectory: Any = None) -> Any:
        raise TypeError(_ambiguous(self._description))

    def __repr__(self) -> str:
        return f"_PerStep({self._description})"


def _ambiguous(description: str) -> str:
    return f"{description} compares per-transition values: reduce it with .any() or .all() to filter trajectories."


_OPS = {"gt": (operator.gt, ">"), "ge": (operator.ge, ">="), "lt": (operator.lt, "<"),
        "le": (operator.le, "<="), "eq": (operator.eq, "=="), "ne": (operator.ne, "!=")}


class _Expr:
    """A value computed from a trajectory; comparisons build predicates (``_wrap`` decides which)."""

    _wrap: Callable[..., Any]

    def __init__(self, fn: Callable[[Trajectory], Any], description: str, keys: frozenset) -> None:
        self._fn, self._description, self._keys = fn, description, keys

    def _compare(self, name: str, other: Any) -> Any:
        op, symbol = _OPS[name]
        fn = self._fn
        return type(self)._wrap(lambda t: op(fn(t), other), f"({self._description} {symbol} {other!r})", self._keys)

    def __gt__(self, other: Any) -> Any:
        return self._compare("gt", other)

    def __ge__(self, other: Any) -> Any:
        return self._compare("ge", other)

    def __lt__(self, other: Any) -> Any:
        return self._compare("lt", other)

    def __le__(self, other: Any) -> Any:
        return self._compare("le", other)

    def __eq__(self, other: Any) -> Any:
        return self._compare("eq", other)

    def __ne__(self, other: Any) -> Any:
        return self._compare("ne", other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._description})"


class _Scalar(_Expr):
    _wrap = TrajectoryPredicate


class _Field(_Expr):
    _wrap = _PerStep

    def __init__(self, key: NestedKey, description: str) -> None:
        def read(t: Trajectory) -> torch.Tensor:
            value = t.get(key)
            if value is None:
                raise KeyError(f"Trajectory has no entry {key!r} (nor under 'next').")
            return value

        super().__init__(read, description, frozenset({unravel_key(key)}))

    def _reduce(self, fn: Callable[[torch.Tensor], Any], name: str) -> _Scalar:
        read = self._fn
        return _Scalar(lambda t: fn(read(t)), f"{self._description}.{name}()", self._keys)

    def sum(self) -> _Scalar:
        """The sum over the trajectory."""
        return self._reduce(torch.sum, "sum")

    def mean(self) -> _Scalar:
        """The mean over the trajectory (as float)."""
        return self._reduce(lambda x: x.float().mean(), "mean")

    def max(self) -> _Scalar:
        """The maximum over the trajectory."""
        return self._reduce(torch.max, "max")

    def min(self) -> _Scalar:
        """The minimum over the trajectory."""
        return self._reduce(torch.min, "min")

    def first(self) -> _Scalar:
        """The value at the first transition."""
        return self._reduce(lambda x: x[0], "first")

    def last(self) -> _Scalar:
        """The value at the last transition."""
        return self._reduce(lambda x: x[-1], "last")


class _TrajectoryRef:
    """``traj``: the entry point of trajectory predicates (see :func:`filter_trajectories`)."""

    @property
    def length(self) -> _Scalar:
        """The number of transitions."""
        return _Scalar(lambda t: t.length, "traj.length", frozenset())

    @property
    def total_reward(self) -> _Scalar:
        """The sum of the rewards."""
        return _Scalar(lambda t: t.total_reward, "traj.total_reward", frozenset({"reward"}))

    def __getattr__(self, name: str) -> _Field:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Field(name, f"traj.{name}")

    def __getitem__(self, key: NestedKey) -> _Field:
        return _Field(key, f"traj[{key!r}]")

    def __repr__(self) -> str:
        return "traj"


traj = _TrajectoryRef()
"""Builds :class:`TrajectoryPredicate` objects: ``traj.<key>`` is a per-step field (compare, then
``.any()``/``.all()``; or reduce with ``.sum()``, ``.mean()``, ``.max()``, ``.min()``, ``.first()``,
``.last()`` and compare); ``traj.length`` and ``traj.total_reward`` are scalars; ``traj[("a", "b")]``
reads nested keys."""


def _boundary_signal(data: TensorDictBase, trajectory_key: NestedKey | None) -> tuple[str, torch.Tensor]:
    shape = data.batch_size
    for key in (trajectory_key,) if trajectory_key is not None else _TRAJECTORY_KEYS:
        ids = data.get(key, None)
        if ids is not None:
            return "trajectory", ids.reshape(shape)
    if trajectory_key is not None:
        raise KeyError(f"trajectory_key {trajectory_key!r} not found in the data.")
    for group in _END_KEY_GROUPS:
        found = [k for k in group if data.get(k, None) is not None]
        if found:
            end = torch.stack([data.get(k).reshape(shape).bool() for k in found]).any(0)
            warnings.warn(
                f"No trajectory ids found (looked up {_TRAJECTORY_KEYS}): splitting on the end flags {found}. "
                "A trajectory whose last step has no end flag merges with the next one; store trajectory ids "
                "or pass trajectory_key.",
                TDRLWarning,
                stacklevel=4,
            )
            return "end", end
    raise KeyError(
        f"Cannot split the data into trajectories: no trajectory ids (looked up {_TRAJECTORY_KEYS}) and no end "
        f"flags (looked up {_END_KEY_GROUPS}). Pass trajectory_key."
    )


def iter_trajectories(data: TensorDictBase, trajectory_key: NestedKey | None = None) -> Iterator[Trajectory]:
    """Yields the trajectories of a flat ``[N]`` batch of transitions, in order.

    Trajectories are told apart by ``trajectory_key``, else by the first of ``("collector",
    "traj_ids")``, ``"traj_ids"``, ``"episode"`` that is present, else (with a warning) by the
    ``done``/``terminated``/``truncated`` flags under ``"next"`` (or at the root). Each trajectory's
    steps must be contiguous. The boundaries are :func:`find_start_stop_traj`'s, as slice samplers use.

    Args:
        data: transitions with one batch dim.
        trajectory_key: the entry holding per-step trajectory ids.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict(traj_ids=torch.tensor([0, 0, 1, 1, 1]), x=torch.arange(5), batch_size=[5])
        >>> [t.x.tolist() for t in iter_trajectories(data)]
        [[0, 1], [2, 3, 4]]
    """
    if not isinstance(data, TensorDictBase):
        raise TypeError(f"iter_trajectories expects a TensorDict, got {type(data).__name__}.")
    if data.batch_dims != 1:
        raise ValueError(f"iter_trajectories expects one batch dim (flat transitions), got {tuple(data.batch_size)}.")
    if not data.batch_size[0]:
        return
    kind, signal = _boundary_signal(data, trajectory_key)
    start, stop, _ = find_start_stop_traj(
        trajectory=signal if kind == "trajectory" else None, end=signal if kind == "end" else None, at_capacity=False
    )
    for a, b in zip(start[:, 0].tolist(), stop[:, 0].tolist()):
        yield Trajectory(data[a:b + 1])


def filter_trajectories(
    data: TensorDictBase,
    predicate: Callable[[Trajectory], bool] | None = None,
    *,
    trajectory_key: NestedKey | None = None,
) -> list[Trajectory]:
    """The trajectories of ``data`` (split as :func:`iter_trajectories` does) for which ``predicate`` holds.

    Args:
        data: transitions with one batch dim.
        predicate: a :class:`TrajectoryPredicate` (see :data:`traj`) or any callable; ``None`` keeps all.

    Keyword Args:
        trajectory_key: the entry holding per-step trajectory ids.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict(traj_ids=torch.tensor([0, 0, 1, 1, 1]), next=TensorDict(
        ...     reward=torch.tensor([1.0, 1, 0, 0, 5]), batch_size=[5]), batch_size=[5])
        >>> [t.length for t in filter_trajectories(data, traj.reward.sum() > 2)]
        [3]
    """
    if isinstance(predicate, _PerStep):
        raise TypeError(_ambiguous(predicate._description))
    return [t for t in iter_trajectories(data, trajectory_key) if predicate is None or predicate(t)]
