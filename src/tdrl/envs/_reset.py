"""Resets for ``EnvBase``: full and partial (``"_reset"`` masks), done checks, ``maybe_reset``.

A partial reset asks ``_reset`` for new data and keeps it only where the mask is True
(:func:`~tdrl.envs.utils.update_during_reset`); the other sub-envs keep their data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data import Composite
from tdrl.envs.step_plan import StepPlan
from tdrl.envs.utils import terminated_or_truncated, update_during_reset

__all__ = ["ResetMixin"]


def _as_mask_of(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``mask`` (``(*batch,)`` or ``(*batch, 1)``) broadcast to ``value``'s shape."""
    if mask.shape == value.shape:
        return mask
    if mask.ndim > value.ndim:
        return mask.reshape(value.shape)
    return mask.reshape(*mask.shape, *([1] * (value.ndim - mask.ndim))).expand_as(value)


class ResetMixin:
    """``reset``, ``maybe_reset`` and ``any_done`` (relies on ``EnvBase``'s specs, keys and ``_reset``)."""

    if TYPE_CHECKING:  # provided by EnvBase and EnvSpecsMixin
        _supports_set_state: bool
        _allow_done_after_reset: bool

        def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase: ...
        def _assert_tensordict_shape(self, tensordict: TensorDictBase) -> None: ...
        @classmethod
        def _complete_done(cls, done_spec: Composite, data: TensorDictBase) -> TensorDictBase: ...
        @property
        def reset_keys(self) -> list[NestedKey]: ...
        @property
        def state_keys(self) -> list[NestedKey]: ...
        @property
        def done_keys_groups(self) -> list[list[NestedKey]]: ...
        @property
        def full_done_spec(self) -> Composite: ...
        @property
        def step_plan(self) -> StepPlan: ...

    def reset(
        self, tensordict: TensorDictBase | None = None, *, set_state: bool | None = None, **kwargs: Any
    ) -> TensorDictBase:
        """Resets the env (only the sub-envs selected by ``"_reset"`` masks, when given).

        Args:
            tensordict: optional input; its ``"_reset"`` entries select the sub-envs to reset, the others
                keep their data. It is updated in place and returned.
            set_state: reset to the state held in ``tensordict`` (envs with ``_supports_set_state``);
                ``None`` honors a state found there.
            **kwargs: passed to ``_reset``.

        Returns:
            The reset data (``tensordict`` updated, or a new tensordict).
        """
        if tensordict is not None:
            self._assert_tensordict_shape(tensordict)
        select_reset_only = kwargs.pop("select_reset_only", False)
        if set_state and not self._supports_set_state:
            raise ValueError(f"{type(self).__name__} cannot reset to a given state (set_state=True)")
        if self._supports_set_state:
            if set_state is None:
                # A state in the input is honored (TorchRL's default), unless "_reset" masks ask for a reset.
                set_state = self._has_state(tensordict) and not self._has_reset_mask(tensordict)
            kwargs["set_state"] = False if select_reset_only else bool(set_state)
        if select_reset_only and tensordict is not None:
            tensordict_reset = self._reset(tensordict.select(*self.reset_keys, strict=False), **kwargs)
        else:
            tensordict_reset = self._reset(tensordict, **kwargs)
        if tensordict_reset is tensordict and tensordict is not None:
            raise RuntimeError(
                f"{type(self).__name__}._reset returned its input tensordict; it must return a new one "
                "(e.g. start from tensordict.empty())"
            )
        if not isinstance(tensordict_reset, TensorDictBase):
            raise TypeError(
                f"{type(self).__name__}._reset returned {type(tensordict_reset).__name__}, expected a TensorDict"
            )
        return self._reset_proc_data(tensordict, tensordict_reset)

    def _has_reset_mask(self, tensordict: TensorDictBase | None) -> bool:
        return tensordict is not None and any(tensordict.get(k, None) is not None for k in self.reset_keys)

    def _has_state(self, tensordict: TensorDictBase | None) -> bool:
        if tensordict is None or not self.state_keys:
            return False
        keys = set(tensordict.keys(True))
        return any(k in keys for k in self.state_keys)

    def _reset_proc_data(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        self._complete_done(self.full_done_spec, tensordict_reset)
        self._reset_check_done(tensordict, tensordict_reset)
        if tensordict is not None:
            return update_during_reset(tensordict_reset, tensordict, self.reset_keys)
        for key in self.reset_keys:
            tensordict_reset.pop(key, None)
        return tensordict_reset

    def _reset_check_done(self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase) -> None:
        """Raises if a reset sub-env is still done (unless ``allow_done_after_reset``)."""
        if self._allow_done_after_reset:
            return
        for reset_key, group in zip(self.reset_keys, self.done_keys_groups):
            mask = None if tensordict is None else tensordict.get(reset_key, None)
            for done_key in group:
                done = tensordict_reset.get(done_key, None)
                if done is None or not bool(done.any()):
                    continue
                if mask is None or bool(done[_as_mask_of(mask, done)].any()):
                    raise RuntimeError(
                        f"{type(self).__name__}: the done entry {done_key!r} is True after reset() "
                        "(pass allow_done_after_reset=True if the env really starts done)"
                    )

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Whether any sub-env of ``tensordict`` (a root/next-level tensordict) is done; writes ``"_reset"``."""
        if self.step_plan.simple_done:
            if type(tensordict) is TensorDict:
                done = tensordict._tensordict.get("done")
            else:
                done = tensordict.get("done", None)
            if done is None or not (done.item() if done.numel() == 1 else bool(done.any())):
                return False
            tensordict.set("_reset", done.clone())
            return True
        return terminated_or_truncated(tensordict, full_done_spec=self.full_done_spec, key="_reset")

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Resets the sub-envs of ``tensordict`` that are done (partial reset); returns the tensordict."""
        if self.any_done(tensordict):
            tensordict = self.reset(tensordict, select_reset_only=True)
        return tensordict
