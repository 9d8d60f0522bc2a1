"""Collector helpers: ``split_trajectories``."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase, pad_sequence

__all__ = ["split_trajectories"]


def split_trajectories(
    rollout_tensordict: TensorDictBase,
    *,
    prefix: str | None = None,
    trajectory_key: NestedKey | None = None,
    done_key: NestedKey | None = None,
    as_nested: bool = False,
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
        as_nested: return nested tensors instead of padding (not supported: raises ``ValueError``).

    Returns:
        A ``[n_traj, T_max]`` tensordict, trajectories ordered by id.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.arange(5.), ("collector", "traj_ids"): torch.tensor([0, 0, 1, 1, 1])}, [5])
        >>> out = split_trajectories(td)
        >>> out.shape, out["collector", "mask"].tolist()
        (torch.Size([2, 3]), [[True, True, False], [True, True, True]])
    """
    if as_nested:
        raise ValueError("split_trajectories(as_nested=True) is not supported by tdrl; use the padded form")
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
    out = pad_sequence(pieces)
    mask = torch.arange(out.shape[1]).unsqueeze(0) < counts.unsqueeze(1)
    out.set((prefix, "mask"), mask)
    return out
