"""Collector helpers: ``split_trajectories``."""

from __future__ import annotations

import warnings

import torch
from tensordict import LazyStackedTensorDict, NestedKey, TensorDictBase, pad_sequence

__all__ = ["split_trajectories"]


def split_trajectories(
    rollout_tensordict: TensorDictBase,
    *,
    prefix: str | None = None,
    trajectory_key: NestedKey | None = None,
    done_key: NestedKey | None = None,
    as_nested: bool | torch.layout = False,
) -> TensorDictBase:
    """Splits a ``[*B, T]`` batch into one row per trajectory, padded to the longest: ``[n_traj, T_max]``.

    Trajectories are told apart by ``trajectory_key`` (default ``("collector", "traj_ids")``) or, when that
    key is absent, by ``done_key`` (default ``("next", "done")``). The padded output holds a boolean
    ``(prefix, "mask")`` entry (``prefix`` defaults to ``"collector"``) that is ``True`` on real steps.

    Args:
        rollout_tensordict: the batch; its last batch dim is time.
        prefix: where the mask goes (``"collector"`` by default).
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
    prefix = "collector" if prefix is None else prefix
    trajectory_key = ("collector", "traj_ids") if trajectory_key is None else trajectory_key
    data = rollout_tensordict
    if data.ndim == 0:
        raise ValueError("split_trajectories needs a tensordict with a time dim, got batch_size []")
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
    out.set((prefix, "mask"), mask)
    return out
