"""``MultiAsyncCollector``: yields whichever worker's batch is ready first; workers never wait for each other."""

from __future__ import annotations

from tensordict import TensorDictBase

from tdrl.collectors._multi_base import MultiCollector

__all__ = ["MultiAsyncCollector"]


class MultiAsyncCollector(MultiCollector):
    """Each worker collects ``frames_per_batch`` frames at a time; each batch is one worker's ``[*env_batch, T]``.

    A worker starts its next batch as soon as its previous one was copied out, so collection overlaps with
    the caller's work. New weights reach a worker before the batch after its current one (at once for
    weights in shared memory). See :class:`~tdrl.collectors._multi_base.MultiCollector` for the arguments.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> collector = MultiAsyncCollector([PendulumEnv, PendulumEnv], frames_per_batch=10, total_frames=30)
        >>> [batch.shape for batch in collector]
        [torch.Size([10]), torch.Size([10]), torch.Size([10])]
        >>> collector.shutdown()
    """

    _turn = 0

    def _worker_frames(self, frames_per_batch: int) -> int:
        return frames_per_batch

    def _next_batch(self) -> TensorDictBase | None:
        n = self.num_workers
        for i in range(n):
            if not self._ready[i] and not self._busy[i]:
                self._request(i)
        self._check_busy_deadlines()
        ready = [i for i in range(n) if self._ready[i]]
        if ready:
            i = min(ready, key=lambda j: (j - self._turn) % n)
        else:
            i = self._wait_batch({j for j in range(n) if self._busy[j]}, "collection")
        self._turn = (i + 1) % n
        batch = self.buffers[i].clone()
        self._stamp_policy_version(batch, self._request_version[i])
        self._ready[i] = False
        if self.total_frames < 0 or self._frames + batch.numel() < self.total_frames:
            self._request(i)  # the worker goes on while the caller uses this batch
        self._frames += batch.numel()
        return self._finish(batch)
