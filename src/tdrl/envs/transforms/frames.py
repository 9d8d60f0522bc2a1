"""Frame-level transforms: ``CatFrames`` (frame stacking), ``FrameSkipTransform`` and ``NoopResetEnv``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Unbounded
from tdrl.envs.step_mdp import step_mdp
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import reset_mask
from tdrl.envs.transforms.functional import cat_frames

__all__ = ["CatFrames", "FrameSkipTransform", "NoopResetEnv"]


class CatFrames(Transform):
    """Stacks the last ``N`` observations along ``dim`` ("Playing Atari with Deep RL", arXiv:1312.5602).

    In an env the stack is rebuilt at each step from the previous stack (the step input's ``out_keys``
    entry) and the new frame, so the transform holds no per-env state and works with partial resets and
    batched envs. On plain data (a replay-buffer slice whose last batch dim is time) ``forward`` stacks
    offline with :func:`~tdrl.envs.transforms.functional.cat_frames`, without crossing episode ends
    (read from ``("next", done_key)``).

    Args:
        N: the number of frames.
        dim: the (negative) stacking dim.
        in_keys: the entries (default ``["pixels"]``).
        out_keys: the outputs (default ``in_keys``).
        padding: ``"same"`` (repeat the first frame) or ``"constant"``.
        padding_value: the value of ``"constant"`` padding.
        as_inverse: stack in the inverse transform instead (e.g. when writing to a buffer).
        reset_key: the ``_reset`` entry of partial resets (default ``"_reset"``).
        done_key: the done entry used offline (default ``"done"``).
        future: not supported offline look-ahead; must be False.
        mask_key: an entry receiving the offline padding mask (optional).

    Examples:
        >>> from tdrl.envs import Compose, PendulumEnv, TransformedEnv, UnsqueezeTransform
        >>> unsqueeze = UnsqueezeTransform(-1, in_keys=["th"], out_keys=["angle"])
        >>> env = TransformedEnv(PendulumEnv(seed=0), Compose(unsqueeze, CatFrames(N=3, dim=-1, in_keys=["angle"])))
        >>> data = env.rollout(2)
        >>> data["angle"].shape, bool((data["angle"][0] == data["th"][0]).all())  # after reset: 3 copies
        (torch.Size([2, 3]), True)
    """

    def __init__(
        self,
        N: int,
        dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        padding: Literal["same", "constant"] = "same",
        padding_value: float = 0,
        as_inverse: bool = False,
        reset_key: NestedKey | None = None,
        done_key: NestedKey | None = None,
        future: bool = False,
        mask_key: NestedKey | None = None,
    ) -> None:
        if dim >= 0:
            raise ValueError(f"CatFrames: dim must be negative (batch-size invariant), got {dim}")
        if padding not in ("same", "constant"):
            raise ValueError(f"CatFrames: padding must be 'same' or 'constant', got {padding!r}")
        if N < 1:
            raise ValueError(f"CatFrames: N must be >= 1, got {N}")
        if future:
            raise ValueError("CatFrames: future=True (look-ahead stacking) is not supported by tdrl")
        super().__init__(in_keys=["pixels"] if in_keys is None else in_keys, out_keys=out_keys)
        self.N = N
        self.dim = dim
        self.padding = padding
        self.padding_value = padding_value
        self.as_inverse = as_inverse
        self.reset_key = "_reset" if reset_key is None else unravel_key(reset_key)
        self.done_key = "done" if done_key is None else unravel_key(done_key)
        self.mask_key = mask_key

    def _fresh(self, frame: torch.Tensor) -> torch.Tensor:
        """The stack right after a reset."""
        if self.padding == "same":
            return torch.cat([frame] * self.N, self.dim)
        pad = torch.full_like(frame, self.padding_value)
        return torch.cat([pad] * (self.N - 1) + [frame], self.dim)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = tensordict_reset.get(in_key, None)
            if frame is None:
                self._missing(in_key, tensordict_reset)
                continue
            fresh = self._fresh(frame)
            prev = None if tensordict is None else tensordict.get(out_key, None)
            mask = None
            if prev is not None and prev.shape == fresh.shape:
                lead = tensordict_reset.batch_size
                mask = reset_mask(tensordict, self.reset_key, torch.Size(lead), prev.device)
            if mask is not None:
                mask = mask.reshape(*mask.shape, *(1,) * (fresh.ndim - mask.ndim))
                fresh = torch.where(mask, fresh, prev)
            tensordict_reset.set(out_key, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = next_tensordict.get(in_key, None)
            if frame is None:
                self._missing(in_key, next_tensordict)
                continue
            prev = tensordict.get(out_key, None)
            size = frame.shape[self.dim]
            if prev is None or prev.shape[self.dim] != size * self.N:
                next_tensordict.set(out_key, self._fresh(frame))
                continue
            kept = prev.narrow(self.dim, size, size * (self.N - 1))
            next_tensordict.set(out_key, torch.cat([kept, frame], self.dim))
        return next_tensordict

    def _done_mask(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        done = tensordict.get(
            ("next", *((self.done_key,) if isinstance(self.done_key, str) else self.done_key)), None
        )
        if done is None:
            return None
        T = tensordict.shape[-1]
        done = done.reshape(*tensordict.shape)
        # A trajectory starts at t when the transition t - 1 ended an episode.
        starts = torch.zeros_like(done)
        starts[..., 1:] = done[..., :-1]
        idx = torch.arange(T, device=done.device).expand_as(done)
        last_start = torch.where(starts, idx, torch.zeros_like(idx)).cummax(-1).values
        source = idx.unsqueeze(-1) - (self.N - 1) + torch.arange(self.N, device=done.device)
        return source < last_start.unsqueeze(-1)

    def _offline(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.ndim == 0:
            raise ValueError("CatFrames on data outside an env needs a time dim (the last batch dim)")
        mask = self._done_mask(tensordict)
        time_dim = tensordict.ndim - 1
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            pairs = [(in_key, out_key)]
            nested_in = ("next", *((in_key,) if isinstance(in_key, str) else in_key))
            if nested_in in tensordict.keys(True, True):
                pairs.append((nested_in, ("next", *((out_key,) if isinstance(out_key, str) else out_key))))
            for src, dst in pairs:
                value = tensordict.get(src, None)
                if value is None:
                    self._missing(src, tensordict)
                    continue
                full = mask if mask is None or mask.shape[:-1] == value.shape[: time_dim + 1] else None
                tdim = time_dim - value.ndim
                tensordict.set(
                    dst,
                    cat_frames(
                        value,
                        self.N,
                        self.dim,
                        padding=self.padding,
                        padding_value=self.padding_value,
                        time_dim=tdim,
                        done_mask=full,
                    ),
                )
        if self.mask_key is not None and mask is not None:
            tensordict.set(self.mask_key, ~mask)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict if self.as_inverse else self._offline(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._offline(tensordict) if self.as_inverse else tensordict

    def _stack_spec(self, leaf: Any) -> Any:
        if isinstance(leaf, Bounded):
            low = torch.cat([leaf.low] * self.N, self.dim)
            high = torch.cat([leaf.high] * self.N, self.dim)
            return Bounded(low=low, high=high, shape=low.shape, dtype=leaf.dtype, device=leaf.device)
        shape = list(leaf.shape)
        shape[self.dim] *= self.N
        return Unbounded(shape=shape, dtype=leaf.dtype, device=leaf.device)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in observation_spec.keys(True, True):
                observation_spec[out_key] = self._stack_spec(observation_spec[in_key])
        return observation_spec

    def __repr__(self) -> str:
        return f"CatFrames(N={self.N}, dim={self.dim}, keys={self.in_keys})"


class FrameSkipTransform(Transform):
    """Repeats each action ``frame_skip`` times, summing the rewards (stops early at episode end).

    Args:
        frame_skip: the number of base-env steps per step.

    Examples:
        >>> FrameSkipTransform(4).frame_skip
        4
    """

    def __init__(self, frame_skip: int = 1) -> None:
        if frame_skip < 1:
            raise ValueError(f"FrameSkipTransform: frame_skip must be >= 1, got {frame_skip}")
        super().__init__()
        self.frame_skip = frame_skip

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("FrameSkipTransform works inside a TransformedEnv only")
        reward_keys, done_keys = parent.reward_keys, parent.done_keys
        rewards = [next_tensordict.get(k) for k in reward_keys]
        for _ in range(self.frame_skip - 1):
            if any(next_tensordict.get(k).any() for k in done_keys if k in next_tensordict.keys(True, True)):
                break
            next_tensordict = parent._step(tensordict)
            rewards = [r + next_tensordict.get(k) for r, k in zip(rewards, reward_keys)]
        for key, reward in zip(reward_keys, rewards):
            next_tensordict.set(key, reward)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("FrameSkipTransform has no meaning outside an env (it repeats env steps)")

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def __repr__(self) -> str:
        return f"FrameSkipTransform(frame_skip={self.frame_skip})"


class NoopResetEnv(Transform):
    """Runs a random number (up to ``noops``) of random steps after each reset.

    Args:
        noops: the (maximum) number of steps.
        random: draw the number of steps uniformly in ``[1, noops]``; otherwise always ``noops``.

    Examples:
        >>> NoopResetEnv(noops=10).noops
        10
    """

    def __init__(self, noops: int = 30, random: bool = True) -> None:
        if noops < 0:
            raise ValueError(f"NoopResetEnv: noops must be >= 0, got {noops}")
        super().__init__()
        self.noops = noops
        self.random = random

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("NoopResetEnv works inside a TransformedEnv only")
        if parent.batch_size.numel() > 1:
            raise RuntimeError(
                f"NoopResetEnv needs a non-batched env (batch_size={tuple(parent.batch_size)}); "
                "put it inside the workers of a batched env"
            )
        n = int(torch.randint(1, self.noops + 1, ())) if self.random and self.noops > 0 else self.noops
        td = tensordict_reset
        for _ in range(10):  # a few attempts in case the no-op steps end the episode
            for _ in range(n):
                td = parent.rand_step(td)
                if td.get(("next", "done")).any():
                    break
                td = step_mdp(td, exclude_action=True)
            else:
                return td
            td = parent.reset()
        raise RuntimeError(f"NoopResetEnv: every attempt of {n} no-op steps ended the episode")

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("NoopResetEnv has no meaning outside an env (it runs env steps)")

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def __repr__(self) -> str:
        return f"NoopResetEnv(noops={self.noops}, random={self.random})"
