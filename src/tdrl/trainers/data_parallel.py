"""Data-parallel learners with ``torch.distributed``: ``tdrl train ... trainer.world_size=N`` or ``torchrun``.

Every process (rank) builds the whole run from the same config, collects its own shard of every batch with
its own seed (``seed + rank``), and takes the same optimiser steps on the gradient averaged over all ranks,
so the parameters stay identical on every rank. The averaging is explicit (:class:`GradientAverager`: one
``all_reduce`` per parameter as soon as its gradient is accumulated), not ``DistributedDataParallel``:
tdrl's loss modules are called with a tensordict and read their parameters through ``*_params``
tensordicts and target copies, which DDP's wrapped ``forward`` would not see; averaging the ``.grad`` of the
loss module's parameters works with every loss, optimiser hook and stepper (TD3's two optimisers included),
and, being done during ``backward``, comes before gradient clipping, as with DDP.

Sizes are global: ``collector.frames_per_batch``, ``collector.total_frames``, ``trainer.minibatch_size``,
``replay.batch_size``, ``replay.buffer_size`` and ``replay.init_random_frames`` are the totals over all
ranks; each rank uses ``1 / world_size`` of them (:func:`shard_run_config`), and frame counters, logs and
checkpoints count the frames of all ranks. ``N`` ranks thus take the steps one process would take on the
same (global) batch; with a mean loss, the averaged gradient is the gradient of that batch.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

__all__ = ["DIST_ENV_KEYS", "DistContext", "GradientAverager", "broadcast_module", "check_world_size",
           "init_data_parallel", "resolve_backend", "shard_run_config", "torchrun_env"]

#: the environment variables ``torchrun`` sets and :func:`init_data_parallel` reads (``env://``)
DIST_ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclasses.dataclass(frozen=True)
class DistContext:
    """Where this process stands in a data-parallel run.

    Examples:
        >>> ctx = DistContext(rank=1, world_size=2, local_rank=1, backend="gloo")
        >>> ctx.is_main, ctx.world_size
        (False, 2)
    """

    rank: int
    world_size: int
    local_rank: int
    backend: str

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that writes the run folder (logs, checkpoints, summary)."""
        return self.rank == 0


def torchrun_env(environ: Mapping[str, str] | None = None) -> dict[str, int] | None:
    """``{"rank", "world_size", "local_rank"}`` when the process was started by ``torchrun`` (``RANK`` and
    ``WORLD_SIZE`` set), else ``None``.

    Examples:
        >>> torchrun_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
        {'rank': 1, 'world_size': 2, 'local_rank': 1}
        >>> torchrun_env({}) is None
        True
    """
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(env.get("LOCAL_RANK", rank))
    except ValueError as err:
        raise ValueError(f"RANK/WORLD_SIZE/LOCAL_RANK must be integers, got RANK={env['RANK']!r} "
                         f"WORLD_SIZE={env['WORLD_SIZE']!r} LOCAL_RANK={env.get('LOCAL_RANK')!r}") from err
    if not 0 <= rank < world:
        raise ValueError(f"RANK must be in [0, WORLD_SIZE={world}), got {rank}")
    return {"rank": rank, "world_size": world, "local_rank": local}


def resolve_backend(backend: str | None = None) -> str:
    """The ``torch.distributed`` backend: ``backend`` when given, else ``"nccl"`` with CUDA, ``"gloo"`` without.

    Examples:
        >>> resolve_backend("gloo")
        'gloo'
    """
    if backend is not None:
        if backend not in ("gloo", "nccl"):
            raise ValueError(f"trainer.dist_backend must be 'gloo' or 'nccl', got {backend!r}")
        return backend
    return "nccl" if torch.cuda.is_available() else "gloo"


def check_world_size(world_size: Any, backend: str = "gloo") -> int:
    """Returns ``world_size`` once it is a usable number of data-parallel learners; raises ``ValueError`` else
    (and ``ImportError`` when this torch has no ``torch.distributed``).

    Examples:
        >>> check_world_size(2)
        2
        >>> check_world_size(0)
        Traceback (most recent call last):
        ...
        ValueError: trainer.world_size must be an integer >= 1, got 0
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"trainer.world_size must be an integer >= 1, got {world_size!r}")
    if world_size > 1 and not torch.distributed.is_available():
        raise ImportError(f"trainer.world_size={world_size} needs torch.distributed, which this torch build lacks "
                          "(torch.distributed.is_available() is False); train with trainer.world_size=1")
    if backend == "nccl":
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if world_size > gpus:
            raise ValueError(f"trainer.world_size={world_size} with the nccl backend needs one CUDA device per rank; "
                             f"{gpus} available (use trainer.dist_backend=gloo for CPU processes)")
    return world_size


def init_data_parallel(rank: int, world_size: int, *, local_rank: int | None = None, backend: str | None = None,
                       init_method: str = "env://") -> DistContext:
    """Joins the process group (``MASTER_ADDR``/``MASTER_PORT`` from the environment by default).

    With ``nccl``, the rank's CUDA device is ``local_rank``.

    Examples:
        >>> import torch.distributed as dist, tempfile, pathlib
        >>> url = pathlib.Path(tempfile.mkdtemp(), "store").as_uri()
        >>> ctx = init_data_parallel(0, 1, backend="gloo", init_method=url)
        >>> ctx.is_main, dist.get_world_size()
        (True, 1)
        >>> dist.destroy_process_group()
    """
    backend = resolve_backend(backend)
    check_world_size(world_size, backend)
    local_rank = rank if local_rank is None else local_rank
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
    torch.distributed.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size)
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, backend=backend)


def _split(total: int, world_size: int, key: str, *, exact: bool) -> int:
    if exact and total % world_size:
        raise ValueError(f"{key} ({total}) must be a multiple of trainer.world_size ({world_size}): each rank takes "
                         f"an equal share (e.g. {key}={(total // world_size + 1) * world_size})")
    return max(1, -(-total // world_size))


def shard_run_config(cfg: DictConfig, rank: int, world_size: int) -> DictConfig:
    """The config rank ``rank`` of ``world_size`` builds: the global sizes divided between the ranks, and its
    own seed (``seed + rank``). ``cfg`` (a composed preset-format config) is not changed.

    Examples:
        >>> from tdrl.trainers.algorithms.configs.presets import compose_run_config
        >>> cfg = compose_run_config(["collector.frames_per_batch=256", "trainer.minibatch_size=64", "seed=3"])
        >>> shard = shard_run_config(cfg, 1, 2)
        >>> shard.collector.frames_per_batch, shard.trainer.minibatch_size, shard.seed
        (128, 32, 4)
    """
    shard = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    if world_size == 1:
        return shard
    col = shard.collector
    if col is None:
        raise ValueError(f"trainer.world_size={world_size}: offline runs (dataset.path) train in one process")
    if col.get("backend", "local") == "ray":
        raise ValueError(f"trainer.world_size={world_size} with collector=ray: use one or the other "
                         "(Ray collectors feed one learner)")
    n_envs = int(shard.env.num_envs)
    if col.frames_per_batch % (world_size * n_envs):
        raise ValueError(f"collector.frames_per_batch ({col.frames_per_batch}) must be a multiple of trainer.world_size "
                         f"x env.num_envs ({world_size * n_envs}): each rank collects an equal share")
    col.frames_per_batch //= world_size
    col.total_frames = _split(int(col.total_frames), world_size, "collector.total_frames", exact=False)
    if shard.trainer.get("minibatch_size") is not None:
        shard.trainer.minibatch_size = _split(int(shard.trainer.minibatch_size), world_size,
                                              "trainer.minibatch_size", exact=True)
    if shard.get("replay") is not None:
        rb = shard.replay
        rb.batch_size = _split(int(rb.batch_size), world_size, "replay.batch_size", exact=True)
        rb.buffer_size = max(rb.batch_size, _split(int(rb.buffer_size), world_size, "replay.buffer_size", exact=False))
        rb.init_random_frames = -(-int(rb.init_random_frames) // world_size)
    if shard.seed is not None:
        shard.seed = int(shard.seed) + rank
    return shard


def _learned_tensors(module: nn.Module) -> Iterable[torch.Tensor]:
    seen: set[int] = set()
    for tensor in [*module.parameters(), *module.buffers()]:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            yield tensor


def _collective(tensor: torch.Tensor, backend: str, op: Any) -> None:
    """Runs ``op(t)`` on ``tensor`` in place, through a CUDA copy for nccl when ``tensor`` is on the CPU."""
    if backend == "nccl" and tensor.device.type != "cuda":
        moved = tensor.detach().cuda()
        op(moved)
        tensor.detach().copy_(moved.cpu())
    else:
        op(tensor.detach())


def broadcast_module(module: nn.Module, src: int = 0) -> None:
    """Copies every parameter and buffer of ``module`` from rank ``src`` to all ranks (in place).

    Examples:
        >>> import torch.distributed as dist, tempfile, pathlib
        >>> ctx = init_data_parallel(0, 1, backend="gloo", init_method=pathlib.Path(tempfile.mkdtemp(), "s").as_uri())
        >>> net = torch.nn.Linear(2, 1)
        >>> broadcast_module(net)  # one rank: nothing changes
        >>> dist.destroy_process_group()
    """
    backend = torch.distributed.get_backend()
    for tensor in _learned_tensors(module):
        _collective(tensor, backend, lambda t: torch.distributed.broadcast(t, src))


class GradientAverager:
    """Replaces the gradient of each parameter of ``module`` by its mean over the ranks, during ``backward``.

    A hook on each parameter (``register_post_accumulate_grad_hook``) all-reduces its ``.grad`` once it is
    accumulated, so clipping and the optimiser step see the averaged gradient; every rank must run the same
    backward passes (true of tdrl's trainers: same loss, same number of steps on every rank).

    Args:
        module: the module whose parameters (those that require grad) are averaged.

    Examples:
        >>> import torch.distributed as dist, tempfile, pathlib
        >>> ctx = init_data_parallel(0, 1, backend="gloo", init_method=pathlib.Path(tempfile.mkdtemp(), "a").as_uri())
        >>> net = torch.nn.Linear(2, 1)
        >>> averager = GradientAverager(net)
        >>> net(torch.ones(1, 2)).sum().backward()
        >>> net.bias.grad
        tensor([1.])
        >>> averager.remove(); dist.destroy_process_group()
    """

    def __init__(self, module: nn.Module) -> None:
        self.world_size = torch.distributed.get_world_size()
        self.backend = torch.distributed.get_backend()
        params = [p for p in module.parameters() if p.requires_grad]
        self._handles = [p.register_post_accumulate_grad_hook(self._average) for p in params]

    def _average(self, param: torch.Tensor) -> None:
        if param.grad is None or self.world_size == 1:
            return
        _collective(param.grad, self.backend, torch.distributed.all_reduce)
        param.grad.div_(self.world_size)

    def remove(self) -> None:
        """Removes the hooks."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
