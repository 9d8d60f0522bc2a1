"""``Transform`` and ``Compose``: tensordict-to-tensordict maps that also rewrite an env's specs.

A transform is used in two settings:

* inside a :class:`~tdrl.envs.transforms.TransformedEnv`, where ``_reset(td, td_reset)`` and
  ``_step(td, next_td)`` run on each reset/step output, ``inv`` runs on the action input, and the
  ``transform_*_spec`` methods turn the base env's specs into the transformed env's;
* on plain data (a replay-buffer sample): ``transform(td)`` calls ``forward``, ``transform.inv(td)`` the
  inverse.

Subclasses usually only implement ``_apply_transform`` (a tensor map applied to every ``in_keys`` entry)
and the spec method of the specs they change.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey
from torch import nn

__all__ = ["Compose", "ObservationTransform", "Transform"]


def _keys(keys: NestedKey | Sequence[NestedKey] | None) -> list[NestedKey]:
    if keys is None:
        return []
    if isinstance(keys, (str, tuple)):
        return [unravel_key(keys)]
    return [unravel_key(k) for k in keys]


class Transform(nn.Module):
    """Base class of environment / data transforms.

    The contract (the full table is in ``docs/transforms.md``). A subclass overrides TorchRL's hooks, the
    same names as in TorchRL so that TorchRL transforms port unchanged:

    * ``_apply_transform(tensor)``: the tensor map applied to each ``in_keys`` entry (written to
      ``out_keys``) by the default ``_call``; most transforms only need this and a spec method;
    * ``_call(next_tensordict)``: the whole map of a step/reset output (default: ``_apply_transform`` per key);
    * ``_step(tensordict, next_tensordict)`` / ``_reset(tensordict, tensordict_reset)``: episode state
      (counters, sums, frame stacks): they may read the step input ``tensordict`` and must return the
      (possibly new) output; they must not modify ``tensordict``;
    * ``_inv_apply_transform`` / ``_inv_call``: the inverse map of the action/state input (``inv``
      works on a shallow copy, so the caller's input is never modified);
    * ``transform_*_spec``: the specs of every entry the transform adds, renames or reshapes.

    Order inside a ``TransformedEnv`` step: ``inv`` (last transform first) on the input, the base env's
    ``compute_next`` (its ``_step`` and its one post-processing stage, so done entries are complete),
    then each transform's ``_step``, first to last. On reset: ``_reset_env_preprocess`` (last first),
    ``inv``, the base env's ``_reset``, then each ``_reset`` first to last. Specs: ``transform_output_spec``
    first to last, ``transform_input_spec`` last to first, once per change (not per step).

    Args:
        in_keys: entries read by the forward transform.
        out_keys: entries written by the forward transform (default: ``in_keys``).
        in_keys_inv: entries written by the inverse transform, in the base env's domain.
        out_keys_inv: entries read by the inverse transform, in the outer domain (default: ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class Double(Transform):
        ...     def _apply_transform(self, obs):
        ...         return obs * 2
        >>> Double(in_keys=["x"])(TensorDict({"x": torch.ones(2)}, []))["x"]
        tensor([2., 2.])
    """

    invertible: bool = False

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__()
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.in_keys_inv = in_keys_inv
        self.out_keys_inv = out_keys_inv
        self._missing_tolerance = False
        # Plain attributes (not submodules): a transform does not own the env it is attached to.
        self.__dict__["_container"] = None
        self.__dict__["_parent"] = None

    # ------------------------------------------------------------------ keys
    @property
    def in_keys(self) -> list[NestedKey]:
        return self._in_keys

    @in_keys.setter
    def in_keys(self, value: Sequence[NestedKey] | None) -> None:
        self._in_keys = _keys(value)

    @property
    def out_keys(self) -> list[NestedKey]:
        return self._out_keys if self._out_keys is not None else list(self._in_keys)

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey] | None) -> None:
        self._out_keys = None if value is None else _keys(value)

    @property
    def in_keys_inv(self) -> list[NestedKey]:
        return self._in_keys_inv

    @in_keys_inv.setter
    def in_keys_inv(self, value: Sequence[NestedKey] | None) -> None:
        self._in_keys_inv = _keys(value)

    @property
    def out_keys_inv(self) -> list[NestedKey]:
        return self._out_keys_inv if self._out_keys_inv is not None else list(self._in_keys_inv)

    @out_keys_inv.setter
    def out_keys_inv(self, value: Sequence[NestedKey] | None) -> None:
        self._out_keys_inv = None if value is None else _keys(value)

    @property
    def missing_tolerance(self) -> bool:
        return self._missing_tolerance

    def set_missing_tolerance(self, mode: bool = False) -> None:
        """When ``mode`` is True, ``in_keys`` missing from the data are skipped instead of raising."""
        self._missing_tolerance = bool(mode)

    # ------------------------------------------------------------- forward
    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        raise TypeError(
            f"{type(self).__name__} maps no tensors: override `_apply_transform` (or `_call`/`forward`)"
        )

    def _missing(self, key: NestedKey, tensordict: TensorDictBase) -> None:
        if not self._missing_tolerance:
            raise KeyError(
                f"{self}: key {key!r} not found; available keys: "
                f"{sorted(map(str, tensordict.keys(True, True)))}"
            )

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Applies ``_apply_transform`` to every ``in_keys`` entry of a step/reset output."""
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, next_tensordict)
                continue
            next_tensordict.set(out_key, self._apply_transform(value))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Transforms data outside an env (e.g. a replay-buffer sample): the root ``in_keys`` entries."""
        return self._call(tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Env hook run on each step output; ``tensordict`` is the step input."""
        return self._call(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        """Env hook run on each reset output; ``tensordict`` is the reset input (may hold ``_reset``)."""
        return self._call(tensordict_reset)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """Env hook run on the reset input, before the base env resets."""
        return tensordict

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Env hook run after ``step_mdp``: ``tensordict`` is the step result (what a rollout stores),
        ``tensordict_`` the next input. Used to drop entries from the stored step once they were carried over."""
        return tensordict, tensordict_

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        """Maps ``env.fake_tensordict()`` where the rollout layout differs from the specs (default: identity)."""
        return fake_tensordict

    # ------------------------------------------------------------- inverse
    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        if self.invertible:
            raise TypeError(f"{type(self).__name__} is invertible but defines no `_inv_apply_transform`")
        return state

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Inverse inputs are optional: a reset input, for one, carries no action.
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is not None:
                tensordict.set(in_key, self._inv_apply_transform(value))
        return tensordict

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the inverse transform to a shallow copy of ``tensordict`` (the input is not modified)."""
        return self._inv_call(tensordict.copy())

    # --------------------------------------------------------------- specs
    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """The env's batch size after this transform, from the one before it (unchanged by default)."""
        return batch_size

    def transform_output_spec(self, output_spec: Any) -> Any:
        """Maps the env's ``output_spec`` (observation, reward and done specs) through this transform."""
        output_spec = output_spec.clone()
        output_spec["full_observation_spec"] = self.transform_observation_spec(
            output_spec["full_observation_spec"]
        )
        if "full_reward_spec" in output_spec.keys():
            output_spec["full_reward_spec"] = self.transform_reward_spec(output_spec["full_reward_spec"])
        if "full_done_spec" in output_spec.keys():
            output_spec["full_done_spec"] = self.transform_done_spec(output_spec["full_done_spec"])
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        """Maps the env's ``input_spec`` (state and action specs) through this transform."""
        input_spec = input_spec.clone()
        if "full_state_spec" in input_spec.keys():
            input_spec["full_state_spec"] = self.transform_state_spec(input_spec["full_state_spec"])
        if "full_action_spec" in input_spec.keys():
            input_spec["full_action_spec"] = self.transform_action_spec(input_spec["full_action_spec"])
        return input_spec

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return observation_spec

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return reward_spec

    def transform_done_spec(self, done_spec: Any) -> Any:
        return done_spec

    def transform_action_spec(self, action_spec: Any) -> Any:
        return action_spec

    def transform_state_spec(self, state_spec: Any) -> Any:
        return state_spec

    def check_keys(self, available: Sequence[NestedKey]) -> None:
        """Raises a ``KeyError`` naming the missing ``in_keys`` (called when attached to an env)."""
        if self._missing_tolerance:
            return
        have = set(available)
        missing = [k for k in self._required_keys() if k not in have]
        if missing:
            raise KeyError(
                f"{type(self).__name__}: in_keys {missing} not found in the env; available keys: "
                f"{sorted(map(str, have))}"
            )

    def dump(self, **kwargs: Any) -> None:
        """Writes what the transform recorded (a no-op except for recorders; ``Compose`` dispatches)."""
        del kwargs

    def _required_keys(self) -> list[NestedKey]:
        return list(self.in_keys)

    def _added_keys(self) -> list[NestedKey]:
        """Keys this transform creates besides ``out_keys`` (seen by the transforms after it)."""
        return []

    # ------------------------------------------------------------ plumbing
    @property
    def container(self) -> Any:
        """The ``TransformedEnv`` or ``Compose`` holding this transform (None when detached)."""
        return self.__dict__["_container"]

    def set_container(self, container: Any) -> None:
        if self.__dict__["_container"] is not None and self.__dict__["_container"] is not container:
            raise AttributeError(
                f"{type(self).__name__} already belongs to a container; clone() it to use it elsewhere"
            )
        self.__dict__["_container"] = container
        self.__dict__["_parent"] = None

    def reset_parent(self) -> None:
        self.__dict__["_container"] = None
        self.__dict__["_parent"] = None

    @property
    def parent(self) -> Any:
        """The env seen by this transform: the base env followed by the transforms placed before it."""
        parent = self.__dict__["_parent"]
        if parent is None:
            container = self.container
            if container is None:
                return None
            parent = container._parent_of(self)
            self.__dict__["_parent"] = parent
        return parent

    def _invalidate_parent(self) -> None:
        self.__dict__["_parent"] = None

    def clone(self) -> Transform:
        """A detached deep copy of the transform."""
        container, parent = self.__dict__["_container"], self.__dict__["_parent"]
        self.__dict__["_container"] = self.__dict__["_parent"] = None
        try:
            out = copy.deepcopy(self)
        finally:
            self.__dict__["_container"], self.__dict__["_parent"] = container, parent
        return out

    def __deepcopy__(self, memo: dict) -> Transform:
        cls = type(self)
        out = cls.__new__(cls)
        memo[id(self)] = out
        for k, v in self.__dict__.items():
            out.__dict__[k] = None if k in ("_container", "_parent") else copy.deepcopy(v, memo)
        return out

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_container"] = None
        state["_parent"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(in_keys={self.in_keys}, out_keys={self.out_keys})"


class ObservationTransform(Transform):
    """Base class of observation transforms: ``in_keys`` default to ``["observation", "pixels"]``.

    Examples:
        >>> class Negate(ObservationTransform):
        ...     def _apply_transform(self, obs):
        ...         return -obs
        >>> Negate().in_keys
        ['observation', 'pixels']
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(
            in_keys=["observation", "pixels"] if in_keys is None else in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
        )


class Compose(Transform):
    """Applies transforms in sequence (their inverses in reverse order).

    Args:
        *trsfs: the transforms, applied first to last (or one list of them, or ``transforms=[...]``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.envs.transforms import RewardScaling, RewardClipping
        >>> t = Compose(RewardScaling(loc=0.0, scale=10.0), RewardClipping(-1.0, 1.0))
        >>> t(TensorDict({"reward": torch.tensor([0.05, 0.5])}, [2]))["reward"]
        tensor([0.5000, 1.0000])
    """

    def __init__(self, *trsfs: Transform, **kwargs: Any) -> None:
        if not trsfs and "transforms" in kwargs:
            trsfs = tuple(kwargs.pop("transforms"))
        if len(trsfs) == 1 and isinstance(trsfs[0], (list, tuple)):
            trsfs = tuple(trsfs[0])
        if kwargs:
            raise TypeError(f"Compose got unexpected keyword arguments {sorted(kwargs)}")
        for t in trsfs:
            if not isinstance(t, Transform):
                raise TypeError(f"Compose expects Transform instances, got {type(t).__name__}")
        super().__init__()
        self.transforms = nn.ModuleList(trsfs)
        for t in trsfs:
            t.set_container(self)

    @property
    def in_keys(self) -> list[NestedKey]:
        return [k for t in self.transforms for k in t.in_keys] if "transforms" in self._modules else []

    @in_keys.setter
    def in_keys(self, value: Any) -> None:
        pass

    @property
    def out_keys(self) -> list[NestedKey]:
        return [k for t in self.transforms for k in t.out_keys] if "transforms" in self._modules else []

    @out_keys.setter
    def out_keys(self, value: Any) -> None:
        pass

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._call(next_tensordict)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t(tensordict)
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        for t in reversed(self.transforms):
            tensordict = t._reset_env_preprocess(tensordict)
        return tensordict

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        for t in self.transforms:
            tensordict, tensordict_ = t._post_step_mdp_hooks(tensordict, tensordict_)
        return tensordict, tensordict_

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            fake_tensordict = t.transform_fake_tensordict(fake_tensordict)
        return fake_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in reversed(self.transforms):
            tensordict = t._inv_call(tensordict)
        return tensordict

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        for t in self.transforms:
            batch_size = t.transform_env_batch_size(batch_size)
        return batch_size

    def transform_output_spec(self, output_spec: Any) -> Any:
        for t in self.transforms:
            output_spec = t.transform_output_spec(output_spec)
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        for t in reversed(self.transforms):
            input_spec = t.transform_input_spec(input_spec)
        return input_spec

    def _spec_chain(self, name: str, spec: Any, reverse: bool = False) -> Any:
        for t in reversed(self.transforms) if reverse else self.transforms:
            spec = getattr(t, name)(spec)
        return spec

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return self._spec_chain("transform_observation_spec", observation_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return self._spec_chain("transform_reward_spec", reward_spec)

    def transform_done_spec(self, done_spec: Any) -> Any:
        return self._spec_chain("transform_done_spec", done_spec)

    def transform_action_spec(self, action_spec: Any) -> Any:
        return self._spec_chain("transform_action_spec", action_spec, reverse=True)

    def transform_state_spec(self, state_spec: Any) -> Any:
        return self._spec_chain("transform_state_spec", state_spec, reverse=True)

    def set_missing_tolerance(self, mode: bool = False) -> None:
        super().set_missing_tolerance(mode)
        for t in self.transforms:
            t.set_missing_tolerance(mode)

    def check_keys(self, available: Sequence[NestedKey]) -> None:
        # Each transform sees the keys produced by the ones before it.
        keys = list(available)
        for t in self.transforms:
            t.check_keys(keys)
            keys.extend(k for k in t.out_keys if k not in keys)
            keys.extend(t._added_keys())

    def dump(self, **kwargs: Any) -> None:
        for t in self.transforms:
            t.dump(**kwargs)

    def append(self, transform: Transform) -> None:
        """Adds a transform at the end."""
        if not isinstance(transform, Transform):
            raise TypeError(f"Compose.append expects a Transform, got {type(transform).__name__}")
        transform.set_container(self)
        self.transforms.append(transform)
        self._invalidate_parent()

    def insert(self, index: int, transform: Transform) -> None:
        """Inserts a transform at ``index`` (negative indices count from the end)."""
        if not isinstance(transform, Transform):
            raise TypeError(f"Compose.insert expects a Transform, got {type(transform).__name__}")
        n = len(self.transforms)
        if not -n - 1 <= index <= n:
            raise IndexError(f"Compose.insert: index {index} out of range for {n} transforms")
        if index < 0:
            index += n + 1
        transform.set_container(self)
        self.transforms.insert(index, transform)
        self._invalidate_parent()

    def _invalidate_parent(self) -> None:
        super()._invalidate_parent()
        for t in self.transforms:
            t._invalidate_parent()

    def _parent_of(self, transform: Transform, extra: list[Transform] | None = None) -> Any:
        """The env seen by ``transform``: what precedes this Compose, then the transforms before it."""
        idx = next(i for i, t in enumerate(self.transforms) if t is transform)
        container = self.container
        if container is None:
            return None
        return container._parent_of(self, extra=[*self.transforms[:idx], *(extra or [])])

    def __getitem__(self, item: int | slice) -> Transform:
        if isinstance(item, slice):
            return Compose(*[t.clone() for t in self.transforms[item]])
        return self.transforms[item]

    def __len__(self) -> int:
        return len(self.transforms)

    def __iter__(self) -> Iterator[Transform]:
        return iter(self.transforms)

    def to(self, *args: Any, **kwargs: Any) -> Compose:
        for t in self.transforms:
            t.to(*args, **kwargs)
        return super().to(*args, **kwargs)

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(t) for t in self.transforms)
        return f"Compose(\n    {inner})"
