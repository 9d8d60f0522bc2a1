"""How a loss builds and uses its value estimator (a mixin of :class:`~tdrl.objectives.LossModule`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives import value as _value_pkg
from tdrl.objectives.utils import ValueEstimators, default_value_kwargs

__all__ = ["ValueEstimation"]

_ESTIMATOR_CLASSES = {
    ValueEstimators.TD0: "TD0Estimator",
    ValueEstimators.TD1: "TD1Estimator",
    ValueEstimators.TDLambda: "TDLambdaEstimator",
    ValueEstimators.GAE: "GAE",
    ValueEstimators.MAGAE: "MultiAgentGAE",
    ValueEstimators.VTrace: "VTrace",
}


class ValueEstimation:
    """``value_estimator``, ``make_value_estimator`` and the TD(0) bootstrap shared by every loss.

    Expects the attributes :class:`~tdrl.objectives.LossModule` sets: ``_value_estimator``, ``_value_hp``,
    ``value_type``, ``default_value_estimator``, ``SUPPORTED_VALUE_ESTIMATORS``, ``_tensor_keys``, ``_get``
    and ``_forward_value_estimator_keys``.
    """

    if TYPE_CHECKING:  # set by LossModule
        _value_estimator: Any
        _value_hp: dict[str, Any]
        value_type: ValueEstimators | type | None
        default_value_estimator: ValueEstimators | None
        SUPPORTED_VALUE_ESTIMATORS: tuple[ValueEstimators, ...]
        # Each loss's own key class; the TD(0) bootstrap reads its reward / done / terminated keys.
        _tensor_keys: Any

        def _get(self, tensordict: TensorDictBase, key: NestedKey) -> Tensor: ...
        def _forward_value_estimator_keys(self) -> None: ...

    @property
    def value_estimator(self):
        """The value estimator (built with defaults on first access; on-policy losses build it at construction)."""
        if self._value_estimator is None:
            self.make_value_estimator(self.default_value_estimator)
        return self._value_estimator

    @value_estimator.setter
    def value_estimator(self, value) -> None:
        self._value_estimator = value

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict[str, Any]:
        """Extra constructor arguments of the estimator (e.g. ``value_network``); losses override."""
        return {}

    def make_value_estimator(self, value_type: ValueEstimators | Any = None, **hyperparams: Any) -> Any:
        """Builds the value estimator used for targets/advantages.

        Args:
            value_type: a :class:`ValueEstimators` member (default: the loss's ``default_value_estimator``),
                its name in any case (``"gae"``, ``"TDLambda"``, as TorchRL accepts from configs), an
                estimator instance, or an estimator class.
            **hyperparams: estimator hyperparameters (``gamma``, ``lmbda``, ...), over the defaults of
                :func:`default_value_kwargs`.

        Returns:
            the loss itself.
        """
        if value_type is None:
            value_type = self.default_value_estimator
        if isinstance(value_type, str):
            value_type = _value_type_from_alias(value_type)
        if isinstance(value_type, ValueEstimators):
            if self.SUPPORTED_VALUE_ESTIMATORS and value_type not in self.SUPPORTED_VALUE_ESTIMATORS:
                raise ValueError(
                    f"{type(self).__name__} does not support the {value_type.name} value estimator; "
                    f"supported: {[v.name for v in self.SUPPORTED_VALUE_ESTIMATORS]}"
                )
            hp = default_value_kwargs(value_type)
            hp.update(hyperparams)
            self._value_hp = dict(hp)
            cls_name = _ESTIMATOR_CLASSES[value_type]
            cls = getattr(_value_pkg, cls_name, None)
            if cls is None:
                raise ImportError(f"tdrl.objectives.value.{cls_name} is not available in this build")
            hp.update({k: v for k, v in self._value_estimator_hp(value_type).items() if k not in hyperparams})
            self._value_estimator = cls(**hp)
        elif isinstance(value_type, type):
            self._value_hp = dict(hyperparams)
            self._value_estimator = value_type(**hyperparams)
        else:
            self._value_hp = {"gamma": getattr(value_type, "gamma", 0.99)}
            self._value_estimator = value_type
        self.value_type = value_type if isinstance(value_type, (ValueEstimators, type)) else type(value_type)
        self._forward_value_estimator_keys()
        return self

    def _gamma(self) -> float | Tensor:
        if not self._value_hp:
            self._value_hp = default_value_kwargs(self.default_value_estimator or ValueEstimators.TD0)
        gamma = self._value_hp.get("gamma", 0.99)
        est = self._value_estimator
        if est is not None and hasattr(est, "gamma"):
            gamma = est.gamma
        return gamma

    def _uses_td0(self) -> bool:
        return self.value_type is ValueEstimators.TD0 or self.value_type is None

    def _bootstrap_target(self, tensordict: TensorDictBase, next_value: Tensor) -> Tensor:
        """Target of a state(-action) value from ``next_value`` (TD(0) inline; other estimators delegated).

        ``next_value`` is shaped like ``("next", reward)``; ``terminated`` defaults to ``done``.
        """
        keys = self._tensor_keys
        if not self._uses_td0():
            return self.value_estimator.value_estimate(tensordict, next_value=next_value)
        reward = self._get(tensordict, ("next", keys.reward))
        terminated = tensordict.get(("next", keys.terminated), None)
        if terminated is None:
            terminated = self._get(tensordict, ("next", keys.done))
        if next_value.shape != reward.shape:
            raise ValueError(
                f"{type(self).__name__}: next-state value of shape {tuple(next_value.shape)} does not match "
                f"('next', {keys.reward!r}) of shape {tuple(reward.shape)}"
            )
        if terminated.dtype is not torch.bool:
            terminated = terminated.bool()
        next_value = torch.where(terminated, next_value.new_zeros(()), next_value)
        return reward + self._gamma() * next_value


def _value_type_from_alias(alias: str) -> ValueEstimators:
    # TorchRL's aliases: a member's name in any case ("td0", "TDLambda", "gae", "vtrace").
    for member in ValueEstimators:
        if member.name.lower() == alias.lower():
            return member
    raise KeyError(f"Unknown value estimator alias {alias!r}; known: {[m.name.lower() for m in ValueEstimators]}.")
