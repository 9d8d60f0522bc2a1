"""``MultiSyncCollector``: every worker collects its share of a batch; the parent stacks them."""

from __future__ import annotations

import warnings

import torch
from tensordict import TensorDictBase

from tdrl._utils import TDRLWarning
from tdrl.collectors._multi_base import MultiCollector

__all__ = ["MultiSyncCollector"]

_TRAJ_KEY = ("collector", "traj_ids")
_MASK_KEY = ("collector", "mask")


class MultiSyncCollector(MultiCollector):
    """Collects ``frames_per_batch`` frames per batch, ``frames_per_batch // num_workers`` from each worker.

    Workers start a batch when it is requested (``next``), so weights updated between batches are used by
    every worker's next batch. With ``cat_results="stack"`` (default) a batch is ``[num_workers, *env_batch,
    T]``; with an int ``d`` the workers' batches are concatenated along ``d`` (``-1``: along time). See
    :class:`~tdrl.collectors._multi_base.MultiCollector` for the arguments.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = MultiSyncCollector([PendulumEnv, PendulumEnv], frames_per_batch=20, total_frames=40)
        >>> [batch.shape for batch in collector]
        [torch.Size([2, 10]), torch.Size([2, 10])]
        >>> collector.shutdown()
    """

    def _worker_frames(self, frames_per_batch: int) -> int:
        per_worker = -(-frames_per_batch // self.num_workers)
        if per_worker * self.num_workers != frames_per_batch:
            warnings.warn(
                f"frames_per_batch ({frames_per_batch}) is not divisible by num_workers ({self.num_workers}); "
                f"each batch will hold {per_worker * self.num_workers} frames",
                TDRLWarning,
                stacklevel=4,
            )
            self.requested_frames_per_batch = per_worker * self.num_workers
        return per_worker

    def _next_batch(self) -> TensorDictBase | None:
        n = self.num_workers
        preempt = self.preemptive_threshold is not None and self.preemptive_threshold < 1.0
        self._stop_np[0] = 0
        pending = set()
        for i in range(n):
            if not self._ready[i]:
                if not self._busy[i]:
                    self._request(i)
                pending.add(i)
        preempt_count = int(n * self.preemptive_threshold) if preempt else n
        received = n - len(pending)
        while pending:
            if preempt and received >= preempt_count:
                self._stop_np[0] = 1
            i = self._wait_batch(pending, "collection")
            pending.discard(i)
            received += 1
        self._ready = [False] * n
        batch = self._gather()
        versions = torch.tensor(self._request_version)
        self._stamp_policy_version(batch, versions if self.cat_results == "stack" else versions.min())
        if preempt:
            mask = batch.get(_TRAJ_KEY) != -1
            batch.set(_MASK_KEY, mask)
            self._frames += int(mask.sum())
        else:
            self._frames += batch.numel()
        return self._finish(batch)

    def _extend(self, batch: TensorDictBase) -> None:
        if self.cat_results == "stack" and not self.split_trajs:
            for row in batch.unbind(0):  # each worker's steps stay contiguous, as TorchRL's workers write them
                self.replay_buffer.extend(row)
        else:
            self.replay_buffer.extend(batch)

    def _gather(self) -> TensorDictBase:
        cat = self.cat_results
        if cat == "stack":
            batch = torch.stack(self.buffers, 0)
        elif isinstance(cat, int):
            batch = torch.cat(self.buffers, cat)
        else:
            raise ValueError(f"cat_results must be 'stack' or an int dim, got {cat!r}")
        if batch.batch_dims:
            batch.refine_names(*([None] * (batch.batch_dims - 1)), "time")
        return batch
