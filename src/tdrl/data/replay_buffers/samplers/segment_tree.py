"""Vectorized sum / min segment trees in pure torch (no C++ extension).

The trees back :class:`~tdrl.data.PrioritizedSampler`. TorchRL builds binary trees in a C++
extension and walks them one query at a time; here every operation is batched:

* the tree is ``B``-ary (``B = 32``), stored level by level as flat tensors, so a 1M-leaf tree has
  only 4 levels;
* :meth:`update` writes a batch of leaves, then recomputes the parents of the touched blocks level
  by level (``level[k + 1][p] = reduce(level[k][p * B:(p + 1) * B])``), one gather + reduce per
  level for the whole batch;
* :meth:`scan_lower_bound` descends all levels for a whole batch of prefix-sum queries at once
  (gather the ``B`` children of every query, ``cumsum``, count the children whose running sum is
  below the query mass).

Values are kept in float64 whatever the public ``dtype``, so prefix sums over millions of leaves
stay accurate; leaves are rounded to ``dtype`` when written so that they hold exactly the values a
``dtype`` tree would hold.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch

__all__ = [
    "MinSegmentTree",
    "MinSegmentTreeFp32",
    "MinSegmentTreeFp64",
    "SumSegmentTree",
    "SumSegmentTreeFp32",
    "SumSegmentTreeFp64",
    "write_trees",
]

_FANOUT = 32


def dedupe_last(index: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drops repeated indices, keeping the value written last (sequential-write semantics).

    Args:
        index: 1-D long tensor, possibly with repeats.
        value: 1-D tensor of the same length.

    Returns:
        ``(unique_sorted_index, value_of_last_occurrence)``.

    Examples:
        >>> dedupe_last(torch.tensor([3, 1, 3]), torch.tensor([1.0, 2.0, 5.0]))
        (tensor([1, 3]), tensor([2., 5.]))
    """
    unique, inverse = torch.unique(index, return_inverse=True)
    if unique.numel() == index.numel():
        order = torch.empty_like(inverse)
        order[inverse] = torch.arange(index.numel(), device=index.device)
        return unique, value[order]
    last = torch.zeros(unique.numel(), dtype=torch.long, device=index.device)
    last.scatter_reduce_(0, inverse, torch.arange(index.numel(), device=index.device), "amax")
    return unique, value[last]


class _BlockTree(ABC):
    """A ``B``-ary reduction tree over ``size`` leaves, stored as a list of flat levels."""

    _neutral: float = 0.0

    def __init__(self, size: int, *, dtype: torch.dtype = torch.float32) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"size must be a positive int, got {size!r}.")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}.")
        self._size = size
        self.dtype = dtype
        self._levels = self._make_levels(size)
        # [n, B] views of the levels (writes go through the flat levels, in place)
        self._blocks = [level.view(-1, _FANOUT) for level in self._levels]

    def _make_levels(self, size: int) -> list[torch.Tensor]:
        levels = []
        n = size
        while True:
            padded = max(_FANOUT, math.ceil(n / _FANOUT) * _FANOUT)
            levels.append(torch.full((padded,), self._neutral, dtype=torch.float64))
            if padded == _FANOUT:
                return levels
            n = padded // _FANOUT

    def __getstate__(self) -> dict:
        # The block views must alias the levels: rebuild them after unpickling.
        state = dict(self.__dict__)
        del state["_blocks"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._blocks = [level.view(-1, _FANOUT) for level in self._levels]

    @property
    def size(self) -> int:
        """Number of leaves."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @staticmethod
    @abstractmethod
    def _reduce_blocks(blocks: torch.Tensor) -> torch.Tensor:
        """Reduces ``[n, B]`` blocks to ``[n]``."""

    @staticmethod
    @abstractmethod
    def _reduce_values(values: torch.Tensor) -> torch.Tensor:
        """Reduces a 1-D tensor to a scalar."""

    def _check_index(self, index: torch.Tensor) -> None:
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= self._size):
            raise IndexError(
                f"segment-tree index out of range: got values in [{int(index.min())}, "
                f"{int(index.max())}], expected [0, {self._size})."
            )

    def _as_index(self, index: int | torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(index, dtype=torch.long).reshape(-1)

    def update(self, index: int | torch.Tensor, value: float | torch.Tensor) -> None:
        """Writes ``value`` at leaves ``index`` and refreshes their ancestors.

        Args:
            index: leaf index or 1-D tensor of leaf indices (repeats: the last write wins).
            value: a scalar or a tensor broadcastable to ``index``.
        """
        idx = self._as_index(index)
        val = torch.as_tensor(value).reshape(-1).expand(idx.shape)
        self._check_index(idx)
        idx, val = dedupe_last(idx, val)
        if idx.numel():
            self.write_unchecked(idx, val)

    def write_unchecked(self, idx: torch.Tensor, val: torch.Tensor) -> None:
        """Writes ``val`` at ``idx`` (unique, in-range long indices) without validation."""
        write_trees((self,), idx, val)

    def rebuild(self, leaves: torch.Tensor) -> None:
        """Replaces all leaves at once (``leaves`` has ``size`` elements) and rebuilds every level."""
        leaves = torch.as_tensor(leaves).reshape(-1)
        if leaves.numel() != self._size:
            raise ValueError(f"rebuild expects {self._size} leaves, got {leaves.numel()}.")
        levels = self._levels
        levels[0][: self._size] = leaves.to(self.dtype).to(torch.float64)
        levels[0][self._size :] = self._neutral
        for k in range(1, len(levels)):
            reduced = self._reduce_blocks(levels[k - 1].view(-1, _FANOUT))
            levels[k][: reduced.numel()] = reduced
            levels[k][reduced.numel() :] = self._neutral

    def leaves(self) -> torch.Tensor:
        """A view of the ``size`` leaf values (float64)."""
        return self._levels[0][: self._size]

    def __getitem__(self, index: int | torch.Tensor) -> torch.Tensor:
        idx = torch.as_tensor(index, dtype=torch.long)
        return self._levels[0][idx].to(self.dtype)

    def __setitem__(self, index: int | torch.Tensor, value: float | torch.Tensor) -> None:
        self.update(index, value)

    def query(self, left: int = 0, right: int | None = None) -> float:
        """Reduction (sum or min) of the leaves in ``[left, right)``.

        Cost is ``O(B * levels)``: partial blocks at both ends of each level, whole blocks one
        level up.
        """
        right = self._size if right is None else int(right)
        left = int(left)
        if not 0 <= left <= right <= self._size:
            raise IndexError(f"query range [{left}, {right}) is not within [0, {self._size}].")
        if left == 0 and right == self._size:
            return float(self._reduce_values(self._levels[-1]))
        parts = []
        lo, hi = left, right
        levels = self._levels
        for k, level in enumerate(levels):
            if lo >= hi:
                break
            if k == len(levels) - 1:
                parts.append(level[lo:hi])
                break
            lo_up = min(-(-lo // _FANOUT) * _FANOUT, hi)
            hi_down = max((hi // _FANOUT) * _FANOUT, lo_up)
            parts.append(level[lo:lo_up])
            parts.append(level[hi_down:hi])
            lo, hi = lo_up // _FANOUT, hi_down // _FANOUT
        if not parts:
            return float(self._neutral)
        return float(self._reduce_values(torch.cat(parts)))

    def clear(self) -> None:
        """Resets every leaf to the neutral value."""
        for level in self._levels:
            level.fill_(self._neutral)

    def state_dict(self) -> dict[str, torch.Tensor | int]:
        """The leaves (in ``dtype``) and the size."""
        return {"size": self._size, "leaves": self.leaves().to(self.dtype).clone()}

    def load_state_dict(self, state: dict) -> None:
        """Restores leaves written by :meth:`state_dict` and rebuilds the upper levels."""
        if int(state["size"]) != self._size:
            raise ValueError(f"tree size mismatch: checkpoint has {int(state['size'])}, tree has {self._size}.")
        self.rebuild(torch.as_tensor(state["leaves"]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, dtype={self.dtype})"


def write_trees(trees: tuple[_BlockTree, ...], idx: torch.Tensor, val: torch.Tensor) -> None:
    """Writes ``val`` at unique, in-range leaves ``idx`` of trees of equal size and dtype.

    The parents of the touched blocks are recomputed level by level, sharing the parent indices
    between the trees.

    Examples:
        >>> s, m = SumSegmentTree(40), MinSegmentTree(40)
        >>> write_trees((s, m), torch.tensor([1, 35]), torch.tensor([2.0, 3.0]))
        >>> s.query(), m.query()
        (5.0, 2.0)
    """
    val = val.to(trees[0].dtype).to(torch.float64)
    for tree in trees:
        tree._levels[0].index_copy_(0, idx, val)
    for k in range(1, len(trees[0]._levels)):
        idx = torch.div(idx, _FANOUT, rounding_mode="floor")
        for tree in trees:
            children = tree._blocks[k - 1].index_select(0, idx)
            tree._levels[k].index_copy_(0, idx, tree._reduce_blocks(children))


class SumSegmentTree(_BlockTree):
    """Batched sum tree: leaf writes, range sums and prefix-sum search.

    Args:
        size: number of leaves.

    Keyword Args:
        dtype: precision of the stored leaf values (``torch.float32`` or ``torch.float64``).

    Examples:
        >>> tree = SumSegmentTree(5)
        >>> tree[torch.tensor([0, 1, 3])] = torch.tensor([1.0, 2.0, 3.0])
        >>> tree.query(0, 5), tree.query(1, 3)
        (6.0, 2.0)
        >>> tree.scan_lower_bound(torch.tensor([0.5, 1.5, 3.5]))
        tensor([0, 1, 3])
    """

    _neutral = 0.0

    @staticmethod
    def _reduce_blocks(blocks: torch.Tensor) -> torch.Tensor:
        return blocks.sum(1)

    @staticmethod
    def _reduce_values(values: torch.Tensor) -> torch.Tensor:
        return values.sum()

    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._levels[-1].sum())

    def scan_lower_bound(self, mass: torch.Tensor, *, upper: int | None = None) -> torch.Tensor:
        """For each query mass ``m``, the smallest leaf ``i`` with ``sum(leaves[:i + 1]) > m``.

        Leaves of value 0 are never returned for ``0 <= m < total``. Masses at or above the
        total (or results at or past ``upper``) land on the last positive leaf before ``upper``.
        """
        mass = torch.as_tensor(mass, dtype=torch.float64).reshape(-1, 1)
        node = torch.zeros((mass.shape[0], 1), dtype=torch.long)
        for depth, blocks in enumerate(reversed(self._blocks)):
            children = blocks.index_select(0, node.view(-1))
            running = children.cumsum(1)
            # (searchsorted would do, but it goes multi-threaded on tiny inputs and stalls under load)
            child = (running <= mass).sum(1, keepdim=True).clamp_max_(_FANOUT - 1)
            if depth < len(self._blocks) - 1:
                mass = mass - (running - children).gather(1, child)
            node = node * _FANOUT + child
        node = node.view(-1)
        leaves = self._levels[0]
        # Float rounding or a mass >= total can land on an empty leaf: step back to a written one.
        node.clamp_max_((self._size if upper is None else upper) - 1)
        empty = leaves[node] <= 0
        while bool(empty.any()):
            node = torch.where(empty, node - 1, node)
            if bool((node < 0).any()):
                raise RuntimeError("scan_lower_bound found no leaf with a positive value.")
            empty = leaves[node] <= 0
        return node


class MinSegmentTree(_BlockTree):
    """Batched min tree: leaf writes and range minima; unwritten leaves hold ``+inf``.

    Args:
        size: number of leaves.

    Keyword Args:
        dtype: precision of the stored leaf values (``torch.float32`` or ``torch.float64``).

    Examples:
        >>> tree = MinSegmentTree(100)
        >>> tree[torch.tensor([3, 70])] = torch.tensor([2.0, 0.5])
        >>> tree.query(0, 100), tree.query(0, 50), tree.query(4, 50)
        (0.5, 2.0, inf)
    """

    _neutral = math.inf

    @staticmethod
    def _reduce_blocks(blocks: torch.Tensor) -> torch.Tensor:
        return blocks.amin(1)

    @staticmethod
    def _reduce_values(values: torch.Tensor) -> torch.Tensor:
        return values.min()


class SumSegmentTreeFp32(SumSegmentTree):
    """A :class:`SumSegmentTree` holding float32 leaves (TorchRL's ``SumSegmentTreeFp32``).

    Examples:
        >>> SumSegmentTreeFp32(4)
        SumSegmentTreeFp32(size=4, dtype=torch.float32)
    """

    def __init__(self, size: int) -> None:
        super().__init__(size, dtype=torch.float32)


class SumSegmentTreeFp64(SumSegmentTree):
    """A :class:`SumSegmentTree` holding float64 leaves (TorchRL's ``SumSegmentTreeFp64``).

    Examples:
        >>> SumSegmentTreeFp64(4).dtype
        torch.float64
    """

    def __init__(self, size: int) -> None:
        super().__init__(size, dtype=torch.float64)


class MinSegmentTreeFp32(MinSegmentTree):
    """A :class:`MinSegmentTree` holding float32 leaves (TorchRL's ``MinSegmentTreeFp32``).

    Examples:
        >>> MinSegmentTreeFp32(4).query()
        inf
    """

    def __init__(self, size: int) -> None:
        super().__init__(size, dtype=torch.float32)


class MinSegmentTreeFp64(MinSegmentTree):
    """A :class:`MinSegmentTree` holding float64 leaves (TorchRL's ``MinSegmentTreeFp64``).

    Examples:
        >>> MinSegmentTreeFp64(4).dtype
        torch.float64
    """

    def __init__(self, size: int) -> None:
        super().__init__(size, dtype=torch.float64)
