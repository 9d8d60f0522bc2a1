"""Probabilistic TensorDict modules with output specs (``SafeProbabilisticModule`` and its sequence)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import (
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
)
from tensordict.utils import NestedKey

from tdrl.data import TensorSpec
from tdrl.modules.distributions import Delta
from tdrl.modules.tensordict_module.common import SpecMixin
from tdrl.modules.tensordict_module.sequence import SafeSequential, gather_specs

__all__ = ["SafeProbabilisticModule", "SafeProbabilisticTensorDictSequential"]


class SafeProbabilisticModule(SpecMixin, ProbabilisticTensorDictModule):
    """A ``ProbabilisticTensorDictModule`` with an output ``spec`` (and optional projection into it).

    The log-probability key follows tensordict's rule: with ``composite_lp_aggregate()`` off (the default),
    ``return_log_prob=True`` writes ``f"{out_key}_log_prob"`` (``"action_log_prob"``), as TorchRL 0.14 does.

    Args:
        in_keys: distribution parameter keys (a list, or a dict ``{dist_kwarg: key}``).
        out_keys: sampled keys. Defaults to ``in_keys``-derived tensordict defaults.
        spec: spec of the (first) sampled value, or a ``Composite``.

    Keyword Args:
        safe: project the sampled value into ``spec``.
        default_interaction_type: interaction type used outside any ``set_interaction_type`` context.
            Defaults to ``InteractionType.DETERMINISTIC``.
        distribution_class: the distribution. Defaults to :class:`~tdrl.modules.distributions.Delta`.
        distribution_kwargs: extra kwargs for the distribution.
        return_log_prob: also write the log-probability of the sample.
        log_prob_keys: explicit log-prob keys (composite distributions).
        log_prob_key: explicit log-prob key.
        cache_dist: keep the last distribution (for losses that need it).
        n_empirical_estimate: samples used for empirical means when needed.
        num_samples: draw this many samples (prepended to the batch).
        generator: random generator (or seed, or a key holding one).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.modules.distributions import TanhNormal
        >>> mod = SafeProbabilisticModule(["loc", "scale"], ["action"], distribution_class=TanhNormal,
        ...                               return_log_prob=True)
        >>> td = TensorDict(loc=torch.zeros(3, 2), scale=torch.ones(3, 2), batch_size=[3])
        >>> sorted(mod(td).keys())
        ['action', 'action_log_prob', 'loc', 'scale']
    """

    def __init__(
        self,
        in_keys: NestedKey | list[NestedKey] | dict[str, NestedKey],
        out_keys: NestedKey | list[NestedKey] | None = None,
        spec: TensorSpec | None = None,
        *,
        safe: bool = False,
        default_interaction_type: InteractionType = InteractionType.DETERMINISTIC,
        distribution_class: type = Delta,
        distribution_kwargs: dict | None = None,
        return_log_prob: bool = False,
        log_prob_keys: list[NestedKey] | None = None,
        log_prob_key: NestedKey | None = None,
        cache_dist: bool = False,
        n_empirical_estimate: int = 1000,
        num_samples: int | torch.Size | None = None,
        generator: torch.Generator | int | NestedKey | None = None,
    ) -> None:
        super().__init__(
            in_keys=in_keys,
            out_keys=out_keys,
            default_interaction_type=default_interaction_type,
            distribution_class=distribution_class,
            distribution_kwargs=distribution_kwargs,
            return_log_prob=return_log_prob,
            log_prob_keys=log_prob_keys,
            log_prob_key=log_prob_key,
            cache_dist=cache_dist,
            n_empirical_estimate=n_empirical_estimate,
            num_samples=num_samples,
            generator=generator,
        )
        self.register_spec(safe=safe, spec=spec, n_spec_keys=len(self.out_keys) - int(bool(return_log_prob)))


class SafeProbabilisticTensorDictSequential(ProbabilisticTensorDictSequential, SafeSequential):
    """A ``ProbabilisticTensorDictSequential`` (networks, then a probabilistic module) with a merged ``spec``.

    Args:
        *modules: TensorDict modules; the last one must be probabilistic.
        partial_tolerant: skip modules whose inputs are missing.
        return_composite: return a composite distribution from ``get_dist`` (see tensordict).
        inplace: see ``TensorDictSequential``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor
        >>> from tdrl.modules.distributions import TanhNormal
        >>> seq = SafeProbabilisticTensorDictSequential(
        ...     TensorDictModule(torch.nn.Sequential(torch.nn.Linear(3, 4), NormalParamExtractor()),
        ...                      ["obs"], ["loc", "scale"]),
        ...     SafeProbabilisticModule(["loc", "scale"], ["action"], distribution_class=TanhNormal),
        ... )
        >>> seq(TensorDict(obs=torch.zeros(5, 3), batch_size=[5]))["action"].shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        *modules: TensorDictModule | ProbabilisticTensorDictModule,
        partial_tolerant: bool = False,
        return_composite: bool | None = None,
        inplace: bool | str | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"partial_tolerant": partial_tolerant, "inplace": inplace}
        if return_composite is not None:
            kwargs["return_composite"] = return_composite
        ProbabilisticTensorDictSequential.__init__(self, *modules, **kwargs)
        self.register_spec(safe=False, spec=gather_specs(tuple(self.module)))
