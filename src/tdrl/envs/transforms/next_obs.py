"""Smaller ``("next", obs)`` storage: ``NextObservationDelta`` (a low-precision delta, rebuilt at sampling)
and ``NextStateReconstructor`` (rebuilt from the following row of a sampled batch)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform, _keys

__all__ = ["NextObservationDelta", "NextStateReconstructor"]

_INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)


def _path(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


class NextObservationDelta(Transform):
    """Stores ``("next", k)`` as ``("next", "delta", k) = (next_obs - obs).to(delta_dtype)``; rebuilds it at sampling.

    In an env, each step writes the delta next to the full ``("next", k)``; once ``step_mdp`` has carried
    the full value to the next step's root, the full ``("next", k)`` is dropped from the stored step (so a
    rollout or collector batch holds only the delta). On plain data (a replay-buffer transform),
    ``forward`` writes ``("next", k) = k + delta`` back and, by default, removes the delta. The
    compression is lossy (``delta_dtype`` precision). Place it outside batched envs
    (``TransformedEnv(ParallelEnv(...), NextObservationDelta())``).

    Args:
        in_keys: the observations to compress; default: every floating observation leaf of the parent env
            whose dtype is not in ``excluded_dtypes`` (required when used without an env).

    Keyword Args:
        delta_dtype: floating dtype of the stored delta (default ``torch.float16``).
        restore_dtype: dtype of the rebuilt ``("next", k)``; ``"root"`` (default) takes the root entry's.
        drop_delta: remove the delta after rebuilding (default True).
        excluded_dtypes: dtypes never picked by the default ``in_keys`` (default: integers and bool).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = NextObservationDelta(in_keys=["observation"])
        >>> data = TensorDict({"observation": torch.tensor([[1.0], [2.0]]),
        ...                    ("next", "delta", "observation"): torch.tensor([[0.5], [-1.0]], dtype=torch.float16)}, [2])
        >>> out = t(data)
        >>> out["next", "observation"].flatten().tolist(), ("next", "delta") in out.keys(True)
        ([1.5, 1.0], False)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        *,
        delta_dtype: torch.dtype = torch.float16,
        restore_dtype: torch.dtype | Literal["root"] = "root",
        drop_delta: bool = True,
        excluded_dtypes: tuple[torch.dtype, ...] = _INT_DTYPES,
    ) -> None:
        if not isinstance(delta_dtype, torch.dtype) or not delta_dtype.is_floating_point:
            raise ValueError(
                f"NextObservationDelta: delta_dtype must be a floating dtype, got {delta_dtype!r}"
            )
        if restore_dtype != "root" and not (
            isinstance(restore_dtype, torch.dtype) and restore_dtype.is_floating_point
        ):
            raise ValueError(
                f"NextObservationDelta: restore_dtype must be a floating dtype or 'root', got {restore_dtype!r}"
            )
        self._given_keys = None if in_keys is None else _keys(in_keys)
        super().__init__()
        self.delta_dtype = delta_dtype
        self.restore_dtype = restore_dtype
        self.drop_delta = drop_delta
        self.excluded_dtypes = tuple(excluded_dtypes)

    @property
    def in_keys(self) -> list[NestedKey]:
        given = self.__dict__.get("_given_keys")
        if given is not None:
            return list(given)
        parent = self.parent
        if parent is None:
            return []
        return [
            unravel_key(key)
            for key, spec in parent.full_observation_spec.items(True, True)
            if spec.dtype is not None
            and spec.dtype.is_floating_point
            and spec.dtype not in self.excluded_dtypes
        ]

    @in_keys.setter
    def in_keys(self, value: Any) -> None:
        if value:
            self.__dict__["_given_keys"] = _keys(value)

    @property
    def out_keys(self) -> list[NestedKey]:
        return self.in_keys

    @out_keys.setter
    def out_keys(self, value: Any) -> None:
        pass

    def check_keys(self, available: Sequence[NestedKey]) -> None:
        # Observations absent from a step are skipped, as TorchRL does.
        return None

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.in_keys:
            obs, next_obs = tensordict.get(key, None), next_tensordict.get(key, None)
            if obs is not None and next_obs is not None:
                # Subtract at full precision, cast once: fewer lost bits than casting both operands first.
                next_tensordict.set(("delta", *_path(key)), (next_obs - obs).to(self.delta_dtype))
        return next_tensordict

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        next_td = tensordict.get("next", None)
        if next_td is not None:
            for key in self.in_keys:
                if next_td.get(key, None) is not None:
                    del next_td[key]
        return tensordict, tensordict_

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        next_td = fake_tensordict.get("next", None)
        if next_td is not None:
            for key in self.in_keys:
                leaf = next_td.get(key, None)
                if leaf is not None:
                    next_td.set(("delta", *_path(key)), leaf.to(self.delta_dtype))
                    del next_td[key]
        return fake_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Rebuilds ``("next", k) = k + ("next", "delta", k)`` (keys missing either side are skipped)."""
        for key in self.in_keys:
            delta_key = ("next", "delta", *_path(key))
            obs, delta = tensordict.get(key, None), tensordict.get(delta_key, None)
            if obs is None or delta is None:
                continue
            dtype = obs.dtype if self.restore_dtype == "root" else self.restore_dtype
            tensordict.set(("next", *_path(key)), obs.to(dtype) + delta.to(dtype))
            if self.drop_delta:
                del tensordict[delta_key]
        if self.drop_delta:
            delta_td = tensordict.get(("next", "delta"), None)
            if delta_td is not None and delta_td.is_empty():
                del tensordict[("next", "delta")]
        return tensordict

    def __repr__(self) -> str:
        return f"NextObservationDelta(in_keys={self.__dict__.get('_given_keys')}, delta_dtype={self.delta_dtype})"


class NextStateReconstructor(Transform):
    """Rebuilds ``("next", k)`` in a flat sampled batch from row ``i + 1`` of the same trajectory.

    Row ``i`` gets ``k[i + 1]`` when row ``i + 1`` exists, carries the same trajectory id, row ``i`` is not
    done and (when ``step_count_key`` is set) the step count goes up by one; otherwise ``fill_value``
    (NaN by default). The producer side is a collector that drops the duplicated ``("next", obs)``.

    Args:
        keys: the root entries whose ``("next", k)`` are rebuilt (default ``("observation",)``).

    Keyword Args:
        traj_key: trajectory id entry (default ``("collector", "traj_ids")``; None: one trajectory).
        done_key: entry marking the end of a trajectory at row ``i`` (default ``("next", "done")``; None: off).
        step_count_key: optional step counter that must increase by one between rows.
        fill_value: value of the rows with no next row (an integer for integer entries).
        strict: raise when a configured marker entry is missing (default True); else skip that check.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict({"observation": torch.arange(4.0).unsqueeze(-1),
        ...                    ("next", "done"): torch.tensor([[False], [True], [False], [False]]),
        ...                    ("collector", "traj_ids"): torch.tensor([0, 0, 1, 1])}, [4])
        >>> NextStateReconstructor()(data)["next", "observation"].flatten().tolist()
        [1.0, nan, 3.0, nan]
    """

    def __init__(
        self,
        keys: Sequence[NestedKey] = ("observation",),
        *,
        traj_key: NestedKey | None = ("collector", "traj_ids"),
        done_key: NestedKey | None = ("next", "done"),
        step_count_key: NestedKey | None = None,
        fill_value: float = float("nan"),
        strict: bool = True,
    ) -> None:
        super().__init__()
        self.keys = tuple(unravel_key(k) for k in ([keys] if isinstance(keys, str) else keys))
        self.traj_key = traj_key
        self.done_key = done_key
        self.step_count_key = step_count_key
        self.fill_value = fill_value
        self.strict = strict

    def _marker(self, data: TensorDictBase, key: NestedKey, what: str, n: int) -> torch.Tensor | None:
        value = data.get(key, None)
        if value is None:
            if self.strict:
                raise KeyError(
                    f"NextStateReconstructor: the {what} {key!r} is not in the sampled batch; pass it explicitly, "
                    f"None to disable the check, or strict=False to skip it"
                )
            return None
        if value.shape[0] != n:
            raise ValueError(
                f"NextStateReconstructor: {key!r} has leading dim {value.shape[0]}, batch size is {n}"
            )
        return value.reshape(n, -1)[:, 0]

    def _valid(self, data: TensorDictBase, n: int) -> torch.Tensor:
        valid = torch.ones(n - 1, dtype=torch.bool, device=data.device)
        traj = None if self.traj_key is None else self._marker(data, self.traj_key, "trajectory key", n)
        if traj is not None:
            valid &= traj[1:] == traj[:-1]
        done = None if self.done_key is None else self._marker(data, self.done_key, "done key", n)
        if done is not None:
            valid &= ~done[:-1].bool()
        count = (
            None
            if self.step_count_key is None
            else self._marker(data, self.step_count_key, "step-count key", n)
        )
        if count is not None:
            valid &= count[1:] == count[:-1] + 1
        return torch.cat([valid, valid.new_zeros(1)])

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims != 1:
            raise ValueError(
                f"NextStateReconstructor expects a flat (B,) sample, got batch_size {tuple(tensordict.batch_size)}"
            )
        n = tensordict.batch_size[0]
        if n == 0:
            return tensordict
        valid = self._valid(tensordict, n)
        for key in self.keys:
            root = tensordict.get(key)
            if (
                not root.is_floating_point()
                and isinstance(self.fill_value, float)
                and math.isnan(self.fill_value)
            ):
                raise TypeError(
                    f"NextStateReconstructor: {key!r} has dtype {root.dtype}, which cannot hold NaN; "
                    f"pass an integer fill_value"
                )
            shifted = torch.cat([root[1:], root[:1]])
            mask = valid.reshape(n, *(1,) * (root.ndim - 1))
            tensordict.set(
                ("next", *_path(key)), torch.where(mask, shifted, root.new_full((), self.fill_value))
            )
        return tensordict

    def __repr__(self) -> str:
        return f"NextStateReconstructor(keys={list(self.keys)}, traj_key={self.traj_key!r})"
