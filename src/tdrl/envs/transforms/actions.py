"""Action-space transforms: ``DiscreteActionProjection`` and ``ActionDiscretizer``.

Both act on the step *input* (through ``inv``): the policy writes an action in the outer space, the
transform maps it into the base env's space before the base env steps, and the specs tell the policy
what the outer space is.
"""

from __future__ import annotations

import enum
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey
from torch.nn import functional as F

from tdrl.data.tensor_specs import Bounded, Categorical, MultiCategorical, MultiOneHot, OneHot
from tdrl.envs.transforms._base import Transform

__all__ = ["ActionDiscretizer", "DiscreteActionProjection"]


class DiscreteActionProjection(Transform):
    """Lets a policy with ``max_actions`` one-hot actions drive an env with ``num_actions_effective`` actions.

    The outer action spec is a ``OneHot(max_actions)``; on each step input an action index
    ``>= num_actions_effective`` is replaced by a uniformly drawn valid one (torch's global RNG), and the
    one-hot is shortened to the base env's width. On plain data (``include_forward=True``) ``forward`` maps
    the other way, padding ``num_actions_effective``-wide one-hots to ``max_actions``; inside an env the
    step outputs are left alone.

    Args:
        num_actions_effective: the base env's number of actions.
        max_actions: the policy's number of actions (``>= num_actions_effective``).
        action_key: the action entry.
        include_forward: whether ``forward`` (plain data) pads the actions.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DiscreteActionProjection(num_actions_effective=3, max_actions=5)
        >>> t.inv(TensorDict({"action": torch.tensor([0, 0, 1, 0, 0])}, []))["action"]
        tensor([0, 0, 1])
        >>> t(TensorDict({"action": torch.tensor([0, 1, 0])}, []))["action"]
        tensor([0, 1, 0, 0, 0])
    """

    invertible = True

    def __init__(self, num_actions_effective: int, max_actions: int, action_key: NestedKey = "action",
                 include_forward: bool = True) -> None:
        if max_actions < num_actions_effective:
            raise RuntimeError(
                f"DiscreteActionProjection: max_actions ({max_actions}) must be >= num_actions_effective "
                f"({num_actions_effective})"
            )
        action_key = unravel_key(action_key)
        super().__init__(in_keys=[action_key] if include_forward else [], in_keys_inv=[action_key])
        self.num_actions_effective = int(num_actions_effective)
        self.max_actions = int(max_actions)
        self.action_key = action_key
        self.include_forward = include_forward

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        return F.one_hot(action.long().argmax(-1), self.max_actions).to(action.dtype)

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if action.shape[-1] != self.max_actions:
            raise RuntimeError(
                f"DiscreteActionProjection: {self.action_key!r} has {action.shape[-1]} entries on its last "
                f"dim, expected max_actions={self.max_actions}"
            )
        index = action.long().argmax(-1)
        invalid = index >= self.num_actions_effective
        if invalid.any():
            index = index.masked_scatter(invalid, torch.randint(self.num_actions_effective, (int(invalid.sum()),)))
        return F.one_hot(index, self.num_actions_effective).to(action.dtype)

    # Inside an env, the outputs keep the base env's layout (only the actions are projected).
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _required_keys(self) -> list[NestedKey]:
        return []

    def transform_action_spec(self, action_spec: Any) -> Any:
        if self.action_key not in action_spec.keys(True, True):
            raise KeyError(f"DiscreteActionProjection: no {self.action_key!r} in the action spec")
        leaf = action_spec[self.action_key]
        if not isinstance(leaf, OneHot) or leaf.shape[-1] != self.num_actions_effective:
            raise TypeError(
                f"DiscreteActionProjection: {self.action_key!r} must have a OneHot spec of width "
                f"num_actions_effective={self.num_actions_effective}, got {leaf}"
            )
        action_spec[self.action_key] = OneHot(
            self.max_actions, shape=(*leaf.shape[:-1], self.max_actions), device=leaf.device, dtype=leaf.dtype
        )
        return action_spec

    def __repr__(self) -> str:
        return (f"DiscreteActionProjection(num_actions_effective={self.num_actions_effective}, "
                f"max_actions={self.max_actions}, action_key={self.action_key!r})")


def _grid_positions(nint: int, sampling: ActionDiscretizer.SamplingStrategy, dtype: torch.dtype,
                    device: Any) -> torch.Tensor:
    """Where the ``nint`` grid points sit inside ``[0, 1]``: cell lows, cell highs or cell centres."""
    lows = torch.arange(nint, dtype=dtype, device=device) / nint
    highs = lows + 1.0 / nint
    if sampling is ActionDiscretizer.SamplingStrategy.MEDIAN:
        return (lows + highs) / 2
    if sampling is ActionDiscretizer.SamplingStrategy.HIGH:
        return highs
    return lows  # LOW, and RANDOM (which adds a uniform jitter inside the cell)


class ActionDiscretizer(Transform):
    """Turns a continuous ``Bounded`` action space into a discrete one (a grid per action dimension).

    Each action dimension ``[low, high]`` is cut into ``num_intervals`` equal cells; the policy picks one
    cell per dimension (a ``MultiCategorical`` index, or a ``MultiOneHot`` when ``categorical=False``; a
    ``Categorical``/``OneHot`` for a scalar action) and the base env receives the cell's point, chosen by
    ``sampling``: ``MEDIAN`` (the centre, default), ``LOW``, ``HIGH``, or ``RANDOM`` (uniform in the cell,
    drawn for each action). The grid points are the ``intervals`` buffer, ``(n_dims, num_intervals)``.

    Args:
        num_intervals: cells per dimension (an int, or a 1-d tensor with one count per dimension).
        action_key: the base env's continuous action entry.
        out_action_key: the discrete action entry the policy writes (default ``action_key``). When it
            differs, the continuous action is computed on the way to the base env only and leaves the specs.
        sampling: an ``ActionDiscretizer.SamplingStrategy`` or its name (default ``MEDIAN``).
        categorical: indices (True) or one-hot encodings (False).

    Examples:
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> env = TransformedEnv(GymEnv("Pendulum-v1"), ActionDiscretizer(5))
        >>> env.transform.intervals
        tensor([[-1.6000, -0.8000,  0.0000,  0.8000,  1.6000]])
        >>> env.rollout(3)["action"].shape
        torch.Size([3, 1])
    """

    invertible = True

    class SamplingStrategy(enum.IntEnum):
        """Where, inside its cell, a discrete action lands."""

        MEDIAN = 0
        LOW = 1
        HIGH = 2
        RANDOM = 3

    def __init__(self, num_intervals: int | torch.Tensor, action_key: NestedKey = "action",
                 out_action_key: NestedKey | None = None, sampling: SamplingStrategy | str | None = None,
                 categorical: bool = True) -> None:
        action_key = unravel_key(action_key)
        out_action_key = action_key if out_action_key is None else unravel_key(out_action_key)
        super().__init__(in_keys_inv=[action_key], out_keys_inv=[out_action_key])
        self.action_key, self.out_action_key = action_key, out_action_key
        if isinstance(num_intervals, torch.Tensor):
            if num_intervals.ndim > 1:
                raise ValueError(f"ActionDiscretizer: num_intervals must be an int or a 1-d tensor, got shape "
                                 f"{tuple(num_intervals.shape)}")
            self.register_buffer("num_intervals", num_intervals.long())
        else:
            self.num_intervals = int(num_intervals)
        if isinstance(sampling, str):  # a config/YAML value: "median", "LOW", ...
            if sampling.upper() not in self.SamplingStrategy.__members__:
                raise ValueError(f"ActionDiscretizer: sampling={sampling!r}; expected one of "
                                 f"{list(self.SamplingStrategy.__members__)}")
            sampling = self.SamplingStrategy[sampling.upper()]
        self.sampling = self.SamplingStrategy.MEDIAN if sampling is None else self.SamplingStrategy(sampling)
        self.categorical = categorical
        # Built from the base action spec when the transform is attached (transform_input_spec).
        self.register_buffer("intervals", None)
        self.register_buffer("nvec", None)
        self.register_buffer("jitters", None)

    def _counts(self, n_dims: int) -> torch.Tensor:
        counts = torch.as_tensor(self.num_intervals).long().reshape(-1)
        if counts.numel() == 1:
            counts = counts.expand(n_dims)
        if counts.numel() != n_dims:
            raise ValueError(f"ActionDiscretizer: num_intervals has {counts.numel()} entries but "
                             f"{self.action_key!r} has {n_dims} dimensions")
        return counts

    def _build_grid(self, leaf: Bounded, batch_ndim: int) -> Any:
        """Sets ``intervals`` and ``nvec`` from the base action spec; returns the outer (unbatched) spec."""
        if not isinstance(leaf, Bounded):
            raise TypeError(f"ActionDiscretizer: the spec of {self.action_key!r} must be Bounded, got "
                            f"{type(leaf).__name__}")
        first = (0,) * batch_ndim
        low, high = leaf.low[first].reshape(-1), leaf.high[first].reshape(-1)
        shape = leaf.shape[batch_ndim:]
        scalar = len(shape) == 0
        if len(shape) > 1:
            raise ValueError(f"ActionDiscretizer: {self.action_key!r} must be a scalar or a vector, got shape "
                             f"{tuple(shape)}")
        counts = self._counts(low.numel())
        width = int(counts.max())
        grid = torch.empty(low.numel(), width, dtype=leaf.dtype, device=leaf.device)
        for dim, n in enumerate(counts.tolist()):
            row = low[dim] + _grid_positions(n, self.sampling, leaf.dtype, leaf.device) * (high[dim] - low[dim])
            grid[dim] = torch.cat([row, row[-1:].expand(width - n)])  # padding is never indexed
        self.register_buffer("intervals", grid)
        self.register_buffer("nvec", counts.to(leaf.device) if not scalar else counts[0].to(leaf.device))
        self.register_buffer("jitters", (high - low) / counts.to(high.dtype))
        if scalar:
            cls = Categorical if self.categorical else OneHot
            return cls(int(counts[0]), shape=() if self.categorical else (int(counts[0]),), device=leaf.device)
        if self.categorical:
            return MultiCategorical(counts, shape=shape, device=leaf.device, remove_singleton=False)
        return MultiOneHot(counts.tolist(), shape=(int(counts.sum()),), device=leaf.device)

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        actions = input_spec["full_action_spec"]
        if self.action_key not in actions.keys(True, True):
            raise KeyError(f"ActionDiscretizer: no {self.action_key!r} in the action spec; available: "
                           f"{list(actions.keys(True, True))}")
        batch = input_spec.shape
        outer = self._build_grid(actions[self.action_key], len(batch))
        if batch:
            outer = outer.expand(*batch, *outer.shape)
        if self.out_action_key != self.action_key:
            # tdrl never writes into the caller's step input (inv works on a copy), so the continuous
            # action only exists on the way to the base env: it leaves the specs (TorchRL moves it to the
            # state spec and writes it into the input; docs/differences.md).
            del actions[self.action_key]
        actions[self.out_action_key] = outer
        input_spec["full_action_spec"] = actions
        return input_spec

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if self.intervals is None:
            raise RuntimeError("ActionDiscretizer: the grid is built from an env's action spec; use it inside "
                               "a TransformedEnv")
        grid = self.intervals
        if self.nvec.ndim == 0:  # scalar action
            index = action.long() if self.categorical else action.long().argmax(-1)
            out = grid[0][index]
        else:
            if self.categorical:
                index = action.long()
            else:
                parts = action.split(self.nvec.tolist(), dim=-1)
                index = torch.stack([p.long().argmax(-1) for p in parts], -1)
            out = grid.expand(*index.shape[:-1], *grid.shape).gather(-1, index.unsqueeze(-1)).squeeze(-1)
        if self.sampling is self.SamplingStrategy.RANDOM:
            jitters = self.jitters if self.nvec.ndim else self.jitters[0]
            out = out + jitters * torch.rand_like(out)
        return out

    def __repr__(self) -> str:
        return (f"ActionDiscretizer(num_intervals={self.num_intervals}, action_key={self.action_key!r}, "
                f"out_action_key={self.out_action_key!r}, sampling={self.sampling.name}, "
                f"categorical={self.categorical})")
