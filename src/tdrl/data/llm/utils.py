"""KL-coefficient controllers for KL-regularised RLHF rewards.

The reward an RLHF policy is trained on is ``r - beta * KL(policy || reference)``; a controller sets
``beta`` (``kl_coef``) after each batch and, when given a ``model`` with a ``kl_coef`` attribute (e.g. a
``KLRewardTransform``), writes the new coefficient there.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["AdaptiveKLController", "ConstantKLController", "KLControllerBase"]


class KLControllerBase(abc.ABC):
    """A KL controller: ``update(kl_values)`` returns the new coefficient and writes it to ``model``."""

    model: Any
    coef: float | None  # None: ConstantKLController(kl_coef=None), as TorchRL's, leaves the model's own value

    def _push(self) -> None:
        if self.model is not None:
            self.model.kl_coef = self.coef

    @abc.abstractmethod
    def update(self, kl_values: Sequence[float] | None = None) -> float | None:
        """Updates and returns the coefficient from the KL rewards of the last batch."""


class ConstantKLController(KLControllerBase):
    """Keeps the KL coefficient fixed.

    Args:
        kl_coef: the coefficient.
        model: an object with a ``kl_coef`` attribute to keep set to ``kl_coef``.

    Examples:
        >>> ConstantKLController(kl_coef=0.1).update([-0.3])
        0.1
    """

    def __init__(self, *, kl_coef: float | None = None, model: Any = None) -> None:
        if model is not None and not hasattr(model, "kl_coef"):
            raise AttributeError(f"ConstantKLController: model {type(model).__name__} has no attribute 'kl_coef'")
        self.model = model
        self.coef = kl_coef
        self._push()

    def update(self, kl_values: Sequence[float] | None = None) -> float | None:
        self._push()
        return self.coef


class AdaptiveKLController(KLControllerBase):
    """Adapts the KL coefficient towards a target KL (Ziegler et al., 2019, section 2.2).

    `Fine-Tuning Language Models from Human Preferences <https://arxiv.org/abs/1909.08593>`_: with the
    observed KL ``KL_t`` over ``n`` steps, ``e_t = clip(KL_t / target - 1, -0.2, 0.2)`` and
    ``beta_{t+1} = beta_t * (1 + e_t * n / horizon)``. The values passed to ``update`` are KL *rewards*
    (``-beta * KL`` per step, as a ``KLRewardTransform`` writes them), so ``KL_t = -mean(values) / beta``.

    Args:
        init_kl_coef: the first coefficient ``beta_0``.
        target: the KL the coefficient steers towards: a smaller observed KL lowers ``beta``.
        horizon: how many steps a full 20% correction is spread over.
        model: an object whose ``kl_coef`` attribute receives every new coefficient.

    Examples:
        >>> ctl = AdaptiveKLController(init_kl_coef=0.2, target=0.1, horizon=100)
        >>> round(ctl.update([-0.5, -0.2, -0.1]), 6)  # observed KL 1.33 > 0.1: beta grows by 0.6%
        0.2012
    """

    coef: float  # always set: init_kl_coef

    def __init__(self, *, init_kl_coef: float, target: float, horizon: int, model: Any = None) -> None:
        if target <= 0 or horizon <= 0:
            raise ValueError(f"AdaptiveKLController needs target > 0 and horizon > 0; got {target=}, {horizon=}")
        self.model = model
        self.coef = float(init_kl_coef)
        self.target = target
        self.horizon = horizon
        self._push()

    def update(self, kl_values: Sequence[float] | None = None) -> float:
        if kl_values is None or len(kl_values) == 0:
            raise ValueError(
                f"{type(self).__name__}.update needs the KL rewards of the last batch (`kl_values`); got {kl_values!r}."
            )
        kl = -float(torch.as_tensor(kl_values, dtype=torch.float64).mean()) / self.coef
        error = min(max(kl / self.target - 1.0, -0.2), 0.2)
        self.coef *= 1.0 + error * len(kl_values) / self.horizon
        self._push()
        return self.coef
