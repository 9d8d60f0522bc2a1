"""Hooks that transform batches: key selection, replay buffers, sub-sampling, reward normalisation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase, pad
from tensordict.utils import NestedKey

from tdrl.trainers.hooks.base import TrainerHookBase

if TYPE_CHECKING:
    from tdrl.trainers.trainer import Trainer

__all__ = ["BatchSubSampler", "ReplayBufferTrainer", "RewardNormalizer", "SelectKeys", "mask_batch"]

_MASK = ("collector", "mask")


def mask_batch(batch: TensorDictBase) -> TensorDictBase:
    """Keeps the valid steps of a padded batch (``("collector", "mask")``), flattening it.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"x": torch.arange(4), "collector": {"mask": torch.tensor([1, 1, 0, 1]).bool()}}, [4])
        >>> mask_batch(td)["x"]
        tensor([0, 1, 3])
    """
    mask = batch.get(_MASK, None)
    return batch if mask is None else batch[mask]


class SelectKeys(TrainerHookBase):
    """Keeps only ``keys`` in each collected batch (``batch_process``).

    Examples:
        >>> from tensordict import TensorDict
        >>> SelectKeys(["a"])(TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2])).keys()
        _StringKeys(dict_keys(['a']))
    """

    def __init__(self, keys: Sequence[NestedKey]) -> None:
        if isinstance(keys, str):
            raise RuntimeError("SelectKeys expects a sequence of keys, got a single str")
        self.keys = list(keys)

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        return batch.select(*self.keys)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        del state_dict

    def register(self, trainer: Trainer, name: str = "select_keys") -> None:
        trainer.register_op("batch_process", self)
        trainer.register_module(name, self)


class ReplayBufferTrainer(TrainerHookBase):
    """Extends a replay buffer with each batch and samples the optimisation sub-batches from it.

    Args:
        replay_buffer: the buffer.
        batch_size: sample size (``None``: the buffer's own).
        memmap: kept for TorchRL compatibility (storage choice belongs to the buffer).
        device: where samples are moved.
        flatten_tensordicts: flatten batches (or keep their masked steps) before extending.
        max_dims: pad each batch dim to these sizes when not flattening (``-1``: no padding).
        iterate: iterate over the buffer instead of sampling (``StopIteration`` ends an epoch).

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import LazyTensorStorage, TensorDictReplayBuffer
        >>> hook = ReplayBufferTrainer(TensorDictReplayBuffer(storage=LazyTensorStorage(10)), batch_size=4,
        ...     flatten_tensordicts=True)
        >>> _ = hook.extend(TensorDict({"x": torch.arange(6).view(2, 3)}, [2, 3]))
        >>> hook.sample(None).shape
        torch.Size([4])
    """

    def __init__(
        self,
        replay_buffer: Any,
        batch_size: int | None = None,
        memmap: bool = False,
        device: Any = None,
        flatten_tensordicts: bool = False,
        max_dims: Sequence[int] | None = None,
        iterate: bool = False,
    ) -> None:
        self.replay_buffer = replay_buffer
        self._update_priority = getattr(replay_buffer, "update_tensordict_priority", None)
        self.batch_size = batch_size
        self.memmap = memmap
        self.device = device
        self.flatten_tensordicts = flatten_tensordicts
        self.max_dims = max_dims
        self.iterate = iterate
        self._iter = iter(replay_buffer) if iterate else None

    def extend(self, batch: TensorDictBase) -> TensorDictBase:
        if self.flatten_tensordicts:
            if _MASK in batch.keys(True):
                batch = batch[batch.get(_MASK)]
            else:
                batch = batch.reshape(-1)
        elif self.max_dims is not None:
            pads: list[int] = []
            for d in range(batch.ndim):
                extra = 0 if self.max_dims[d] == -1 else self.max_dims[d] - batch.batch_size[d]
                pads = [0, extra] + pads
            batch = pad(batch, pads)
        batch = batch.cpu()
        self.replay_buffer.extend(batch)
        if self.iterate:
            # A pass over the new contents starts now. Without this, a pass that took exactly its
            # optim_steps_per_batch samples ends (StopIteration) on the first sample of the next epoch,
            # which then takes no step: TorchRL 0.14.1 runs every other epoch empty (docs/differences.md).
            self._iter = iter(self.replay_buffer)
        return batch

    def sample(self, batch: TensorDictBase | None) -> TensorDictBase:
        del batch
        if self._iter is not None:
            try:
                sample = next(self._iter)
            except StopIteration:
                self._iter = iter(self.replay_buffer)
                raise
        else:
            sample = self.replay_buffer.sample(batch_size=self.batch_size)
        return sample.to(self.device) if self.device is not None else sample

    def update_priority(self, batch: TensorDictBase) -> None:
        if self._update_priority is not None:
            self._update_priority(batch)

    def state_dict(self) -> dict[str, Any]:
        return {"replay_buffer": self.replay_buffer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.replay_buffer.load_state_dict(state_dict["replay_buffer"])
        if self.iterate:
            self._iter = iter(self.replay_buffer)

    def register(self, trainer: Trainer, name: str = "replay_buffer") -> None:
        trainer.register_op("batch_process", self.extend)
        trainer.register_op("process_optim_batch", self.sample)
        trainer.register_op("post_loss", self.update_priority)
        trainer.register_module(name, self)


class RewardNormalizer(TrainerHookBase):
    """Normalises rewards with exponentially decayed running statistics.

    Args:
        decay: decay of the running sums.
        scale: factor applied after normalising.
        eps: lower bound of the variance.
        log_pbar: kept for TorchRL compatibility.
        reward_key: defaults to ``("next", "reward")``.

    Examples:
        >>> from tensordict import TensorDict
        >>> norm = RewardNormalizer()
        >>> td = TensorDict({"next": {"reward": torch.tensor([1.0, 3.0])}}, [2])
        >>> norm.update_reward_stats(td)
        >>> norm.normalize_reward(td)["next", "reward"].mean().abs() < 1e-6
        tensor(True)
    """

    def __init__(
        self,
        decay: float = 0.999,
        scale: float = 1.0,
        eps: float | None = None,
        log_pbar: bool = False,
        reward_key: NestedKey | None = None,
    ) -> None:
        self.decay = decay
        self.scale = scale
        self.eps = torch.finfo(torch.get_default_dtype()).eps if eps is None else eps
        self.log_pbar = log_pbar
        self.reward_key = ("next", "reward") if reward_key is None else reward_key
        self._stats: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def update_reward_stats(self, batch: TensorDictBase) -> None:
        reward = batch.get(self.reward_key)
        mask = batch.get(_MASK, None)
        if mask is not None:
            reward = reward[mask]
        zero = torch.zeros((), dtype=reward.dtype)
        s = self.decay * self._stats.get("sum", zero) + reward.sum()
        ssq = self.decay * self._stats.get("ssq", zero) + reward.pow(2).sum()
        count = self.decay * self._stats.get("count", zero) + reward.numel()
        var = (ssq - s.pow(2) / count) / (count - 1) if count > 1 else torch.zeros_like(s)
        self._stats = {"sum": s, "ssq": ssq, "count": count, "mean": s / count,
                       "std": var.clamp_min(self.eps).sqrt()}

    def normalize_reward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self._stats:
            raise RuntimeError("RewardNormalizer.normalize_reward ran before update_reward_stats saw a batch")
        tensordict = tensordict.copy()
        reward = tensordict.get(self.reward_key)
        mean, std = self._stats["mean"].to(reward.device), self._stats["std"].to(reward.device)
        tensordict.set(self.reward_key, (reward - mean) / std * self.scale)
        return tensordict

    def state_dict(self) -> dict[str, Any]:
        return {"stats": dict(self._stats), "scale": self.scale, "decay": self.decay}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._stats = dict(state_dict["stats"])
        self.scale = state_dict["scale"]
        self.decay = state_dict["decay"]

    def register(self, trainer: Trainer, name: str = "reward_normalizer") -> None:
        trainer.register_op("batch_process", self.update_reward_stats)
        trainer.register_op("process_optim_batch", self.normalize_reward)
        trainer.register_module(name, self)


class BatchSubSampler(TrainerHookBase):
    """Samples ``batch_size`` items of a collected batch, as contiguous sub-trajectories for ``[B, T]`` data.

    Args:
        batch_size: items per sub-batch (``batch_size // sub_traj_len`` trajectories of ``sub_traj_len``).
        sub_traj_len: length of the sub-trajectories (``<= 0``: the whole time dimension).
        min_sub_traj_len: lower bound of the length when masked trajectories are short.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"x": torch.arange(20).view(2, 10)}, [2, 10])
        >>> BatchSubSampler(batch_size=8, sub_traj_len=4)(td).shape
        torch.Size([2, 4])
    """

    def __init__(self, batch_size: int, sub_traj_len: int = 0, min_sub_traj_len: int = 0) -> None:
        self.batch_size = batch_size
        self.sub_traj_len = sub_traj_len
        self.min_sub_traj_len = min_sub_traj_len

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        if batch.ndim == 1:
            return batch[torch.randperm(batch.shape[0])[: self.batch_size]]
        batch = batch.reshape(-1, batch.shape[-1])
        n_traj, horizon = batch.shape
        length = self.sub_traj_len if self.sub_traj_len > 0 else horizon
        mask = batch.get(_MASK, None)
        if mask is not None:
            traj_len = mask.sum(-1)
            length = max(self.min_sub_traj_len, min(length, int(traj_len.min())))
        else:
            traj_len = torch.full((n_traj,), horizon)
        if not 1 <= length <= horizon:
            raise ValueError(f"sub_traj_len={length} is not allowed: expected a value in [1, {horizon}]")
        n = self.batch_size // length
        if n == 0:
            raise RuntimeError(
                f"BatchSubSampler(batch_size={self.batch_size}) is smaller than one sub-trajectory ({length} steps)"
            )
        valid = torch.nonzero(traj_len >= length).squeeze(-1)
        traj = valid[torch.randint(valid.numel(), (n,))]
        start = (torch.rand(n) * (traj_len[traj] - length + 1)).long().clamp_max(horizon - length)
        time_idx = start.unsqueeze(-1) + torch.arange(length)
        out = batch[traj.unsqueeze(-1).expand(n, length), time_idx]
        if mask is not None and not out.get(_MASK).all():
            raise RuntimeError("BatchSubSampler sampled invalid (masked) steps")
        return out

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        del state_dict

    def register(self, trainer: Trainer, name: str = "batch_subsampler") -> None:
        trainer.register_op("process_optim_batch", self)
        trainer.register_module(name, self)
