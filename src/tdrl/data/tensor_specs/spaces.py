"""Value boxes held by specs as ``spec.space``: ``ContinuousBox``, ``CategoricalBox``, ``BoxList``, ``BinaryBox``."""

from __future__ import annotations

from collections.abc import Sequence

import torch


class Box:
    """Base class of the value boxes a spec exposes as ``spec.space``.

    Examples:
        >>> from tdrl.data.tensor_specs.spaces import CategoricalBox
        >>> CategoricalBox(3) == CategoricalBox(3)
        True
    """

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


class ContinuousBox(Box):
    """Element-wise ``[low, high]`` bounds, tensors of the spec's shape.

    Args:
        low: lower bounds.
        high: upper bounds.

    Examples:
        >>> import torch
        >>> box = ContinuousBox(torch.zeros(2), torch.ones(2))
        >>> box.high
        tensor([1., 1.])
    """

    def __init__(self, low: torch.Tensor, high: torch.Tensor) -> None:
        self.low = low
        self.high = high

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ContinuousBox)
            and self.low.shape == other.low.shape
            and bool(torch.equal(self.low, other.low))
            and bool(torch.equal(self.high, other.high))
        )

    def __repr__(self) -> str:
        return (
            f"ContinuousBox(low={self.low.shape}/{self.low.dtype}, high={self.high.shape}/{self.high.dtype})"
        )


class CategoricalBox(Box):
    """The integers ``0..n-1``.

    Args:
        n: number of categories.

    Examples:
        >>> CategoricalBox(4).n
        4
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __repr__(self) -> str:
        return f"CategoricalBox(n={self.n})"


DiscreteBox = CategoricalBox


class BinaryBox(Box):
    """``n`` independent binary values.

    Args:
        n: number of binary values.

    Examples:
        >>> BinaryBox(3).n
        3
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __repr__(self) -> str:
        return f"BinaryBox(n={self.n})"


class BoxList(Box):
    """A list of boxes, one per component of a multi-discrete spec.

    Args:
        boxes: the component boxes.

    Examples:
        >>> BoxList.from_nvec([2, 3])
        BoxList(boxes=[CategoricalBox(n=2), CategoricalBox(n=3)])
    """

    def __init__(self, boxes: Sequence[Box]) -> None:
        self.boxes = list(boxes)

    @classmethod
    def from_nvec(cls, nvec: Sequence[int] | torch.Tensor) -> BoxList:
        """Builds one :class:`CategoricalBox` per entry of ``nvec`` (its last dim if it is a tensor)."""
        if isinstance(nvec, torch.Tensor):
            nvec = nvec.reshape(-1, nvec.shape[-1])[0].tolist() if nvec.ndim else [int(nvec)]
        return cls([CategoricalBox(int(n)) for n in nvec])

    def __len__(self) -> int:
        return len(self.boxes)

    def __repr__(self) -> str:
        return f"BoxList(boxes={self.boxes})"
