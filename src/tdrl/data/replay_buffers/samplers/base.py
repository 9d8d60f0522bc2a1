"""The ``Sampler`` interface shared by every replay-buffer sampler.

A sampler decides *which* storage indices a replay buffer reads. The buffer calls
:meth:`Sampler.sample` with its storage and a batch size and gets back ``(index, info)``; it then
notifies the sampler of every write through :meth:`Sampler.add` / :meth:`Sampler.extend` so that
stateful samplers (prioritized, without-replacement) can keep their bookkeeping in sync.
"""

from __future__ import annotations

import warnings
from abc import ABC, ABCMeta, abstractmethod
from copy import copy
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from tdrl.data.replay_buffers.storages.base import Storage

__all__ = ["EpochSampler", "Sampler", "register_without_replacement"]

# Maps a with-replacement sampler class to its without-replacement counterpart, so that
# ``RandomSampler(replacement=False)`` builds a ``SamplerWithoutReplacement`` as in TorchRL.
_REPLACEMENT_DISPATCH: dict[type, type] = {}

EMPTY_STORAGE_ERROR = "Cannot sample from an empty storage: extend the replay buffer first."


def register_without_replacement(with_replacement: type, without_replacement: type) -> None:
    """Declares ``without_replacement`` as the ``replacement=False`` variant of ``with_replacement``.

    Args:
        with_replacement: a :class:`Sampler` subclass drawing with replacement.
        without_replacement: the class built when ``with_replacement(replacement=False, ...)`` is called.

    Examples:
        >>> class Mine(Sampler):
        ...     def sample(self, storage, batch_size):
        ...         return torch.zeros(batch_size, dtype=torch.long), {}
        ...     def _empty(self): pass
        ...     def state_dict(self): return {}
        ...     def load_state_dict(self, state_dict): pass
        ...     def dumps(self, path): pass
        ...     def loads(self, path): pass
        >>> class MineNoRep(Mine):
        ...     pass
        >>> register_without_replacement(Mine, MineNoRep)
        >>> type(Mine(replacement=False)).__name__
        'MineNoRep'
    """
    _REPLACEMENT_DISPATCH[with_replacement] = without_replacement


class _SamplerMeta(ABCMeta):
    """Pops ``replacement=`` from constructor calls and dispatches ``replacement=False``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if "replacement" in kwargs:
            replacement = kwargs.pop("replacement")
            if not replacement:
                alt = _REPLACEMENT_DISPATCH.get(cls)
                if alt is not None:
                    return alt(*args, **kwargs)
                if cls not in _REPLACEMENT_DISPATCH.values():
                    raise TypeError(
                        f"{cls.__name__} has no without-replacement variant; "
                        "it cannot be built with replacement=False."
                    )
        return super().__call__(*args, **kwargs)


class Sampler(ABC, metaclass=_SamplerMeta):
    """Base class of replay-buffer samplers.

    Subclasses implement :meth:`sample`, :meth:`_empty`, :meth:`state_dict`, :meth:`load_state_dict`,
    :meth:`dumps` and :meth:`loads`. The write hooks (:meth:`add`, :meth:`extend`), priority hooks
    (:meth:`update_priority`, :meth:`mark_update`) and :attr:`ran_out` default to the behaviour of a
    stateless uniform sampler.

    The replay buffer sets :attr:`_rng` (a :class:`torch.Generator` or ``None``) when it is given a
    ``generator``; samplers should draw their random numbers from it.

    Examples:
        >>> class First(Sampler):
        ...     def sample(self, storage, batch_size):
        ...         return torch.zeros(batch_size, dtype=torch.long), {}
        ...     def _empty(self): pass
        ...     def state_dict(self): return {}
        ...     def load_state_dict(self, state_dict): pass
        ...     def dumps(self, path): pass
        ...     def loads(self, path): pass
        >>> First().sample([1, 2, 3], 2)
        (tensor([0, 0]), {})
        >>> First().ran_out, First().default_priority
        (False, 1.0)
    """

    # Samplers without replacement count the batches left in the current epoch.
    _remaining_batches: int = int(torch.iinfo(torch.int64).max)
    _rng: torch.Generator | None = None

    @abstractmethod
    def sample(self, storage: Storage, batch_size: int) -> tuple[Any, dict]:
        """Returns ``(index, info)``: storage indices of a batch and a dict of extra outputs."""

    def _sampleable_count(self, storage: Storage, batch_size: int) -> int | torch.Tensor:
        return len(storage)

    def can_sample(self, storage: Storage, batch_size: int) -> bool:
        """Whether a batch of ``batch_size`` can be drawn from ``storage`` now."""
        count = self._sampleable_count(storage, batch_size)
        if isinstance(count, torch.Tensor):
            return bool(count.gt(0).item())
        return count > 0

    def add(self, index: int | torch.Tensor) -> None:
        """Called by the buffer after one item was written at ``index``."""
        return

    def extend(self, index: torch.Tensor) -> None:
        """Called by the buffer after a batch of items was written at ``index``."""
        return

    def update_priority(
        self,
        index: int | torch.Tensor,
        priority: float | torch.Tensor,
        *,
        storage: Storage | None = None,
    ) -> dict | None:
        """Updates the priority of ``index``; non-prioritized samplers only warn."""
        warnings.warn(
            f"update_priority() was called on {type(self).__name__}, which is not prioritized: "
            "the priorities are ignored.",
            stacklevel=2,
        )
        return None

    def mark_update(self, index: int | torch.Tensor, *, storage: Storage | None = None) -> None:
        """Marks ``index`` as overwritten (used by samplers that cache per-item data)."""
        return

    @property
    def default_priority(self) -> float:
        """The priority given to newly written items."""
        return 1.0

    @property
    def ran_out(self) -> bool:
        """Whether the current epoch is exhausted (never, for samplers with replacement)."""
        return False

    @abstractmethod
    def _empty(self) -> None:
        """Resets the sampler's bookkeeping after the buffer was emptied."""

    def empty(self) -> None:
        """Resets the sampler's bookkeeping (alias of :meth:`_empty`)."""
        self._empty()

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Returns the sampler state as a dict of tensors / plain Python values."""

    @abstractmethod
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the state returned by :meth:`state_dict`."""

    @abstractmethod
    def dumps(self, path: Any) -> None:
        """Writes the sampler state under the directory ``path``."""

    @abstractmethod
    def loads(self, path: Any) -> None:
        """Reads the sampler state written by :meth:`dumps` under ``path``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __getstate__(self) -> dict[str, Any]:
        # Generators do not pickle; the buffer sets a fresh one after unpickling.
        state = copy(self.__dict__)
        state["_rng"] = None
        return state


class EpochSampler(Sampler):
    """A :class:`Sampler` that can run out: :attr:`ran_out` is a flag its ``sample`` sets (and buffers reset).

    Examples:
        >>> class Once(EpochSampler):
        ...     def sample(self, storage, batch_size):
        ...         self.ran_out = True
        ...         return torch.arange(batch_size), {}
        ...     def _empty(self): self.ran_out = False
        ...     def state_dict(self): return {}
        ...     def load_state_dict(self, state_dict): pass
        ...     def dumps(self, path): pass
        ...     def loads(self, path): pass
        >>> s = Once()
        >>> _ = s.sample(None, 2)
        >>> s.ran_out
        True
    """

    _ran_out: bool = False

    @property
    def ran_out(self) -> bool:
        """``True`` once the sampler has nothing left to draw (until new data or a reset)."""
        return self._ran_out

    @ran_out.setter
    def ran_out(self, value: bool) -> None:
        self._ran_out = bool(value)
