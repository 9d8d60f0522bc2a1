"""Trajectory splitting shared by collectors and offline datasets: ``split_trajectories``."""

from __future__ import annotations

import warnings

import torch
from tensordict import LazyStackedTensorDict, NestedKey, TensorDictBase, pad_sequence

__all__ = ["split_trajectories"]


def split_trajectories(
    rollout_tensordict: TensorDictBase,
    *,
    prefix: NestedKey | None = None,
    trajectory_key: NestedKey | None = None,
    done_key: NestedKey | None = None,
    as_nested: bool | torch.layout = False,
) -> TensorDictBase:
    """Splits a ``[*B, T]`` batch into one row per trajectory, padded to the longest: ``[n_traj, T_max]``.

    Trajectories are told apart by ``trajectory_key`` (default ``(prefix, "traj_ids")``) or, when that
    key is absent, by ``done_key`` (default ``("next", "done")``), in which case the ids are written under
    ``trajectory_key``. The padded output holds a boolean ``(prefix, "mask")`` entry that is ``True`` on real
    steps. ``prefix`` defaults to ``"collector"`` when the batch has a ``"collector"`` entry (collector
    batches), else to no prefix (offline datasets: ``"mask"`` and ``"traj_ids"`` at the root), as TorchRL.

    Args:
        rollout_tensordict: the batch; its last batch dim is time.
        prefix: where the mask (and computed ids) go.
        trajectory_key: the trajectory-id key.
        done_key: the done key used when there are no trajectory ids.
        as_nested: return a ``[n_traj, -1]`` tensordict of nested tensors (one row per trajectory, no
            padding and no mask) instead; a ``torch.layout`` picks the nested layout (default
            ``torch.strided``, as TorchRL).

    Returns:
        A ``[n_traj, T_max]`` tensordict (``[n_traj, -1]`` with ``as_nested``), trajectories ordered by id.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.arange(5.), ("collector", "traj_ids"): torch.tensor([0, 0, 1, 1, 1])}, [5])
        >>> out = split_trajectories(td)
        >>> out.shape, out["collector", "mask"].tolist()
        (torch.Size([2, 3]), [[True, True, False], [True, True, True]])
        >>> nested = split_trajectories(td, as_nested=torch.jagged)
        >>> nested.batch_size, [t.tolist() for t in nested["obs"].unbind()]
        (torch.Size([2, -1]), [[0.0, 1.0], [2.0, 3.0, 4.0]])
    """
    data = rollout_tensordict
    if data.ndim == 0:
        raise ValueError("split_trajectories needs a tensordict with a time dim, got batch_size []")
    if prefix is None:
        prefix = "collector" if "collector" in data.keys() else ()
    prefix = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    trajectory_key = (*prefix, "traj_ids") if trajectory_key is None else trajectory_key
    # [*B, T] -> [B*T], env-major, so each env's steps stay in time order.
    flat = data.reshape(-1)
    ids = flat.get(trajectory_key, None)
    if ids is None:
        done_key = ("next", "done") if done_key is None else done_key
        done = data.get(done_key)
        if done is None:
            raise KeyError(f"split_trajectories needs {trajectory_key!r} or {done_key!r} in the batch")
        done = done.reshape(*data.shape, -1).any(-1)
        # A new trajectory starts after each done and at each env's first step.
        starts = torch.zeros_like(done)
        starts[..., 0] = True
        starts[..., 1:] = done[..., :-1]
        ids = starts.reshape(-1).cumsum(0) - 1
        flat = flat.clone(False).set(trajectory_key, ids)
    ids = ids.reshape(-1)
    order = torch.argsort(ids, stable=True)
    _, counts = torch.unique_consecutive(ids[order], return_counts=True)
    pieces = list(flat[order].split(counts.tolist(), 0))
    if as_nested is not False:
        layout = as_nested if isinstance(as_nested, torch.layout) else torch.strided
        with warnings.catch_warnings():  # torch flags strided nested tensors as a prototype API
            warnings.filterwarnings(
                "ignore", message="The PyTorch API of nested tensors", category=UserWarning
            )
            return LazyStackedTensorDict(*pieces, stack_dim=0).densify(layout=layout)
    out = pad_sequence(pieces)
    mask = torch.arange(out.shape[1]).unsqueeze(0) < counts.unsqueeze(1)
    out.set((*prefix, "mask"), mask)
    return out
