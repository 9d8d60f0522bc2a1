"""Trajectory-level transforms: ``TrajCounter`` (a unique id per episode), ``RandomTruncationTransform``
(random episode horizons) and ``RandomCropTensorDict`` (random sub-sequences of sampled trajectories)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import Bounded, Categorical
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms._utils import reset_mask

__all__ = ["RandomCropTensorDict", "RandomTruncationTransform", "TrajCounter"]


class TrajCounter(Transform):
    """Gives each episode an id: ``0, 1, 2, ...`` in the order the (sub-)envs reset.

    The id is written at reset and carried through every step of the episode. A batched parent hands out
    one new id per sub-env it resets, in sub-env order. The counter lives in the transform: a transform
    inside each worker of a batched env counts that worker's episodes.

    Args:
        out_key: the id's entry (default ``"traj_count"``).
        repeats: accepted for TorchRL compatibility; each reset gets a new id.

    Examples:
        >>> from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv, Compose
        >>> env = TransformedEnv(PendulumEnv(seed=0), Compose(StepCounter(2), TrajCounter()))
        >>> env.rollout(6, break_when_any_done=False)["next", "traj_count"].flatten().tolist()
        [0, 0, 1, 1, 2, 2]
    """

    def __init__(self, out_key: NestedKey = "traj_count", *, repeats: int | None = None) -> None:
        super().__init__(in_keys=[], out_keys=[out_key])
        self.repeats = repeats
        self.register_buffer("_next_id", torch.zeros((), dtype=torch.int64))

    @property
    def out_key(self) -> NestedKey:
        return self.out_keys[0]

    def _added_keys(self) -> list[NestedKey]:
        return [self.out_key]

    def _new_ids(self, count: int, device: Any) -> torch.Tensor:
        start = int(self._next_id)
        self._next_id += count
        return torch.arange(start, start + count, dtype=torch.int64, device=device)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        batch = tensordict_reset.batch_size
        prev = None if tensordict is None else tensordict.get(self.out_key, None)
        mask = None if prev is None else reset_mask(tensordict, "_reset", batch, prev.device)
        if mask is None:
            ids = self._new_ids(batch.numel(), tensordict_reset.device).view(*batch, 1)
        else:
            ids = prev.clone()
            ids[mask] = self._new_ids(int(mask.sum()), ids.device).view(-1, 1)
        tensordict_reset.set(self.out_key, ids)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        ids = tensordict.get(self.out_key, None)
        if ids is None:
            raise KeyError(f"TrajCounter: {self.out_key!r} missing from the step input; reset the env first")
        next_tensordict.set(self.out_key, ids.clone())
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TrajCounter counts an env's resets: it only runs inside an env's reset and step")

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        shape = (*observation_spec.shape, 1)
        observation_spec[self.out_key] = Bounded(low=0, high=torch.iinfo(torch.int64).max, shape=shape,
                                                 dtype=torch.int64, device=observation_spec.device)
        return observation_spec


def _sibling(key: NestedKey, name: str) -> NestedKey:
    return (*key[:-1], name) if isinstance(key, tuple) else name


class RandomTruncationTransform(Transform):
    """Truncates episodes at random horizons so that batched envs do not all reset on the same step.

    Each sub-env gets a horizon at reset: its very first episode one drawn from ``{1, ..., max_horizon}``
    (spreading the sub-envs over the episode at once), its next episode one from
    ``{min_horizon, ..., max_horizon}`` with probability ``first_episode_prob``, later episodes with
    probability ``prob``; otherwise ``max_horizon``. A step whose step count reaches the horizon is marked
    truncated (and done). Place it after a :class:`StepCounter`.

    Args:
        min_horizon: smallest random horizon (inclusive, >= 1).
        max_horizon: largest random horizon (inclusive) and the horizon when no truncation is drawn.
        prob: probability of a random horizon for episodes after the second.
        first_episode_prob: the same for the second episode (default ``prob``).
        step_count_key: the step counter written by ``StepCounter``.
        truncated_key: the truncation flag (default next to the step count).
        done_key: the done flag (default next to the step count).

    Examples:
        >>> from tdrl.envs import PendulumEnv, StepCounter, TransformedEnv, Compose
        >>> _ = torch.manual_seed(0)
        >>> env = TransformedEnv(PendulumEnv(seed=0), Compose(StepCounter(), RandomTruncationTransform(3, 5, 1.0)))
        >>> r = env.rollout(40, break_when_any_done=False)
        >>> lengths = r["next", "step_count"][r["next", "truncated"]]
        >>> bool(((lengths >= 1) & (lengths <= 5)).all())
        True
    """

    def __init__(self, min_horizon: int, max_horizon: int, prob: float = 0.0, first_episode_prob: float | None = None,
                 *, step_count_key: NestedKey = "step_count", truncated_key: NestedKey = "truncated",
                 done_key: NestedKey = "done") -> None:
        if not 1 <= min_horizon <= max_horizon:
            raise ValueError(f"RandomTruncationTransform: need 1 <= min_horizon <= max_horizon, got "
                             f"min_horizon={min_horizon}, max_horizon={max_horizon}")
        first_episode_prob = prob if first_episode_prob is None else first_episode_prob
        for name, p in (("prob", prob), ("first_episode_prob", first_episode_prob)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"RandomTruncationTransform: {name} must be in [0, 1], got {p}")
        super().__init__()
        self.min_horizon, self.max_horizon = int(min_horizon), int(max_horizon)
        self.prob, self.first_episode_prob = float(prob), float(first_episode_prob)
        self.step_count_key = step_count_key
        # Truncation flags live next to the counter, as StepCounter writes them.
        self.truncated_key = _sibling(step_count_key, "truncated") if truncated_key == "truncated" else truncated_key
        self.done_key = _sibling(step_count_key, "done") if done_key == "done" else done_key
        self._horizon: torch.Tensor | None = None
        self._episodes: torch.Tensor | None = None

    def _draw(self, episodes: torch.Tensor) -> torch.Tensor:
        """A horizon per sub-env given how many episodes it has started before this one."""
        shape, device = episodes.shape, episodes.device
        spread = torch.randint(1, self.max_horizon + 1, shape, device=device)
        random = torch.randint(self.min_horizon, self.max_horizon + 1, shape, device=device)
        p = torch.where(episodes == 1, self.first_episode_prob, self.prob)
        later = torch.where(torch.rand(shape, device=device) < p, random, torch.full_like(random, self.max_horizon))
        return torch.where(episodes == 0, spread, later)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        count = tensordict_reset.get(self.step_count_key, None)
        if count is None:
            raise KeyError(f"RandomTruncationTransform: {self.step_count_key!r} not found; place a StepCounter "
                           "before it")
        if self._episodes is None or self._episodes.shape != count.shape:
            self._episodes = torch.zeros(count.shape, dtype=torch.int64, device=count.device)
            self._horizon = torch.full(count.shape, self.max_horizon, dtype=torch.int64, device=count.device)
        mask = reset_mask(tensordict, _sibling(self.step_count_key, "_reset"), count.shape, count.device)
        mask = torch.ones_like(count, dtype=torch.bool) if mask is None else mask
        self._horizon = torch.where(mask, self._draw(self._episodes), self._horizon)
        self._episodes = self._episodes + mask.long()
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        count = next_tensordict.get(self.step_count_key, None)
        if count is None or self._horizon is None:
            raise KeyError(f"RandomTruncationTransform: {self.step_count_key!r} not found; place a StepCounter "
                           "before it and reset the env first")
        hit = count >= self._horizon
        for key in (self.truncated_key, self.done_key):
            flag = next_tensordict.get(key, None)
            next_tensordict.set(key, hit if flag is None else flag | hit)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("RandomTruncationTransform truncates an env's episodes: it only runs inside an env")

    def transform_done_spec(self, done_spec: Any) -> Any:
        if self.truncated_key not in done_spec.keys(True, True):
            leaf = done_spec[self.done_key]
            done_spec[self.truncated_key] = Categorical(2, shape=leaf.shape, dtype=torch.bool, device=leaf.device)
        return done_spec


class RandomCropTensorDict(Transform):
    """Crops each trajectory of a ``[..., T]`` sample to a random window of ``sub_seq_len`` steps.

    Meant for replay-buffer samples (``ReplayBuffer(transform=RandomCropTensorDict(8))``). With
    ``mask_key`` (a boolean entry of the data's shape marking the valid steps, as written by
    ``split_trajectories``), the window is drawn inside the valid part of each trajectory.

    Args:
        sub_seq_len: the window length.
        sample_dim: the time dim (default ``-1``).
        mask_key: optional validity mask entry.

    Examples:
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"obs": torch.arange(20.0).view(2, 10)}, [2, 10])
        >>> out = RandomCropTensorDict(3)(data)
        >>> out.batch_size, bool((out["obs"].diff(dim=-1) == 1).all())
        (torch.Size([2, 3]), True)
    """

    def __init__(self, sub_seq_len: int, sample_dim: int = -1, mask_key: NestedKey | None = None) -> None:
        if sub_seq_len <= 0:
            raise ValueError(f"RandomCropTensorDict: sub_seq_len must be positive, got {sub_seq_len}")
        super().__init__()
        self.sub_seq_len = int(sub_seq_len)
        self.sample_dim = int(sample_dim)
        self.mask_key = mask_key

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        shape = tensordict.batch_size
        if not shape:
            raise RuntimeError("RandomCropTensorDict: cannot crop a tensordict with an empty batch size")
        dim = self.sample_dim % len(shape)
        length = shape[dim]
        if length < self.sub_seq_len:
            raise RuntimeError(f"RandomCropTensorDict: cannot take windows of {self.sub_seq_len} steps along dim "
                               f"{self.sample_dim} of a tensordict of shape {tuple(shape)}")
        start_shape = list(shape)
        start_shape[dim] = 1
        device = tensordict.device or torch.device("cpu")
        mask = None
        if self.mask_key is not None:
            mask = tensordict.get(self.mask_key, None)
        if mask is None:
            # Every start in [0, T - L] (TorchRL draws from [0, T - L), never touching the last window).
            start = torch.randint(length - self.sub_seq_len + 1, start_shape, device=device)
        else:
            if mask.shape != shape:
                raise ValueError(f"RandomCropTensorDict: mask {self.mask_key!r} has shape {tuple(mask.shape)}, "
                                 f"expected the data's shape {tuple(shape)}")
            valid = mask.sum(dim, keepdim=True)
            if (valid < self.sub_seq_len).any():
                raise RuntimeError(f"RandomCropTensorDict: a trajectory has {int(valid.min())} valid steps, "
                                   f"fewer than sub_seq_len={self.sub_seq_len}")
            span = (valid - self.sub_seq_len + 1).to(device)
            start = (torch.rand(start_shape, device=device) * span).long().clamp_max(span - 1)
        view = [1] * len(shape)
        view[dim] = self.sub_seq_len
        index = start + torch.arange(self.sub_seq_len, device=device).view(view)
        return tensordict.gather(dim=dim, index=index)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("RandomCropTensorDict crops sampled trajectories: use it on data, not inside an env")
