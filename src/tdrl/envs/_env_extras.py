"""``EnvBase`` methods TorchRL programs call besides stepping: ``check_env_specs()``, ``auto_specs_()`` and the
unbatched views of the input/output spec containers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data import Categorical, Composite, TensorSpec
from tdrl.envs.utils import check_env_specs as _check_env_specs
from tdrl.envs.utils import make_composite_from_td

__all__ = ["EnvExtrasMixin"]

_DEFAULT_DONE_KEYS = ("done", "terminated", "truncated")


def _as_list(keys: NestedKey | Sequence[NestedKey]) -> list[NestedKey]:
    return [keys] if isinstance(keys, (str, tuple)) else list(keys)


def _bool_as_categorical(spec: Composite) -> Composite:
    """Boolean leaves (done flags, masks) become two-valued ``Categorical`` specs, as an env declares them."""
    for key in list(spec.keys(True, True)):
        leaf = spec[key]
        if isinstance(leaf, TensorSpec) and not isinstance(leaf, Composite) and leaf.dtype == torch.bool:
            spec[key] = Categorical(2, shape=leaf.shape, dtype=torch.bool, device=leaf.device)
    return spec


def _take(spec: Composite, keys: list[NestedKey], shape: torch.Size) -> Composite | None:
    """Moves the ``keys`` present in ``spec`` into a new ``Composite`` (``None`` when there are none)."""
    found = [k for k in keys if k in spec.keys(True, True)]
    if not found:
        return None
    out = Composite(shape=shape)
    for key in found:
        out[key] = spec[key]
        del spec[key]
    return out


class EnvExtrasMixin:
    """Mixed into ``EnvBase``."""

    if TYPE_CHECKING:  # provided by EnvBase, EnvSpecsMixin and ResetMixin
        batch_size: torch.Size

        @property
        def input_spec(self) -> Composite: ...
        @property
        def output_spec(self) -> Composite: ...
        def _unbatched(self, spec: Composite) -> Composite: ...
        def reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase: ...
        def step(self, tensordict: TensorDictBase) -> TensorDictBase: ...

    @property
    def input_spec_unbatched(self) -> Composite:
        """``input_spec`` without the batch dims."""
        return self._unbatched(self.input_spec)

    @property
    def output_spec_unbatched(self) -> Composite:
        """``output_spec`` without the batch dims."""
        return self._unbatched(self.output_spec)

    def check_env_specs(self, *args: Any, **kwargs: Any) -> None:
        """:func:`~tdrl.envs.utils.check_env_specs` on this env (same arguments)."""
        _check_env_specs(self, *args, **kwargs)

    def auto_specs_(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        *,
        tensordict: TensorDictBase | None = None,
        action_key: NestedKey | Sequence[NestedKey] = "action",
        done_key: NestedKey | Sequence[NestedKey] | None = None,
        observation_key: NestedKey | Sequence[NestedKey] = "observation",
        reward_key: NestedKey | Sequence[NestedKey] = "reward",
    ) -> Any:
        """Sets the env's specs from what a reset and two steps of ``policy`` produce; returns the env.

        Every entry the steps write must be named by ``action_key``, ``done_key`` (default: ``done``,
        ``terminated``, ``truncated``), ``observation_key`` or ``reward_key``; inputs that are neither actions
        nor outputs become the state spec.

        Raises:
            RuntimeError: an output entry is not accounted for by the given keys, or an entry changes shape
                between the two steps.
        """
        batch = self.batch_size
        data = self.reset() if tensordict is None else tensordict
        data = data.update(policy(data.copy()))
        first = self.step(data.copy())
        nxt0 = first.get("next").copy()
        second = self.step(nxt0.copy().update(policy(nxt0.copy())))
        nxt1 = second.get("next")
        for key in nxt0.keys(True, True):
            if key in nxt1.keys(True, True) and nxt0.get(key).shape != nxt1.get(key).shape:
                raise RuntimeError(f"auto_specs_: entry {key!r} changes shape between steps "
                                   f"({tuple(nxt0.get(key).shape)} then {tuple(nxt1.get(key).shape)})")
        output = _bool_as_categorical(make_composite_from_td(nxt0, unsqueeze_null_shapes=False))
        done = _take(output, _as_list(done_key) if done_key is not None else list(_DEFAULT_DONE_KEYS), batch)
        reward = _take(output, _as_list(reward_key), batch)
        observation = _take(output, _as_list(observation_key), batch)
        leftover = list(output.keys(True, True))
        if leftover:
            raise RuntimeError(f"Keys {leftover} are unaccounted for: pass every output name to auto_specs_ "
                               "(done_key, reward_key, observation_key)")
        inputs = _bool_as_categorical(make_composite_from_td(data.exclude("next"), unsqueeze_null_shapes=False))
        action = _take(inputs, _as_list(action_key), batch)
        # Outputs echoed in the input (the reset's observation and done flags) are not state.
        for key in list(inputs.keys(True, True)):
            if key in nxt0.keys(True, True):
                del inputs[key]
        for spec, attr in ((action, "full_action_spec"), (done, "full_done_spec"),
                           (observation, "full_observation_spec"), (reward, "full_reward_spec")):
            if spec is not None:
                setattr(self, attr, spec)
        self.full_state_spec = inputs
        return self
