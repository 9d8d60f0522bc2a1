"""Decision Transformer losses: action regression (``DTLoss``) and the Online DT's entropy-regularised
likelihood (``OnlineDTLoss``).

Chen et al., "Decision Transformer: Reinforcement Learning via Sequence Modeling" (2021),
https://arxiv.org/abs/2106.01345; Zheng et al., "Online Decision Transformer" (2022),
https://arxiv.org/abs/2202.05607.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.objectives._temperature import auto_target_entropy
from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import LossFunction, distance_loss

__all__ = ["DTLoss", "OnlineDTLoss"]


def _rsample_and_log_prob(dist: torch.distributions.Distribution, shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    fused = getattr(dist, "rsample_and_log_prob", None)
    if fused is not None:
        return fused(shape)
    sample = dist.rsample(shape)
    return sample, dist.log_prob(sample)


class OnlineDTLoss(LossModule["OnlineDTLoss._AcceptedKeys"]):
    """Online Decision Transformer loss: negative log-likelihood of the dataset's actions, minus an entropy
    bonus weighted by a learnt temperature ``alpha`` that tracks a target entropy.

    Terms: ``loss_log_likelihood = -log pi(a | context)``, ``loss_entropy = -alpha * H`` (``H`` estimated
    from ``samples_mc_entropy`` reparameterised samples) and ``loss_alpha = alpha * (H - target_entropy)``
    (``H`` detached); ``alpha`` and ``entropy`` are reported alongside.

    Args:
        actor_network: a probabilistic actor over the context (e.g. an :class:`~tdrl.modules.OnlineDTActor`
            writing ``loc``/``scale`` followed by a ``TanhNormal``).

    Keyword Args:
        alpha_init: initial temperature (default 1.0).
        min_alpha, max_alpha: bounds the temperature is clamped to (``None``: unbounded).
        fixed_alpha: keep ``alpha`` at ``alpha_init`` (a buffer, not a parameter).
        target_entropy: target of the temperature loss; ``"auto"`` is ``-dim(action)`` from the actor's spec.
        samples_mc_entropy: samples of the Monte-Carlo entropy estimate (default 1).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        scalar_output_mode: with ``reduction="none"``, ``"exclude"`` (drop ``alpha``/``entropy``) or
            ``"non_tensor"`` (store them as non-tensor entries); ``None`` warns, then excludes.

    Keys (``set_keys``): ``action_target`` (the dataset's action) and ``action_pred`` (the actor's action).

    Examples:
        >>> from tensordict.nn import ProbabilisticTensorDictModule as ProbMod, TensorDictModule as Mod
        >>> from tdrl.data import Unbounded
        >>> from tdrl.modules import DecisionTransformer, OnlineDTActor, ProbabilisticActor, TanhNormal
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=30)
        >>> net = Mod(OnlineDTActor(3, 2, transformer_config=config),
        ...           ["observation", "action", "return_to_go"], ["loc", "scale"])
        >>> actor = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
        ...                            spec=Unbounded((2,)))
        >>> loss = OnlineDTLoss(actor)
        >>> td = TensorDict({"observation": torch.randn(4, 5, 3), "action": torch.rand(4, 5, 2) * 1.8 - 0.9,
        ...                  "return_to_go": torch.randn(4, 5, 1)}, [4, 5])
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_alpha', 'loss_entropy', 'loss_log_likelihood']
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`OnlineDTLoss`."""

        action_target: NestedKey = "action"
        action_pred: NestedKey = "action"

    def __init__(
        self,
        actor_network: ProbabilisticTensorDictSequential,
        *,
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        fixed_alpha: bool = False,
        target_entropy: str | float = "auto",
        samples_mc_entropy: int = 1,
        reduction: Literal["mean", "sum", "none"] | None = None,
        scalar_output_mode: Literal["exclude", "non_tensor"] | None = None,
    ) -> None:
        super().__init__()
        self.convert_to_functional(actor_network, "actor_network")
        device = self._default_device()
        self.register_buffer("alpha_init", torch.tensor(float(alpha_init), device=device))
        if bool(min_alpha) ^ bool(max_alpha):
            if max_alpha == 0:
                raise ValueError("OnlineDTLoss: max_alpha must be either None or greater than 0.")
            min_alpha, max_alpha = min_alpha or 0.0, max_alpha or 1e9
        # Buffers, as in TorchRL, so the bounds follow .to() and state_dicts load across the libraries.
        self._optional_buffer("min_log_alpha", math.log(min_alpha) if min_alpha else None, device)
        self._optional_buffer("max_log_alpha", math.log(max_alpha) if max_alpha else None, device)
        self.fixed_alpha = fixed_alpha
        log_alpha = torch.tensor(math.log(alpha_init), device=device)
        if fixed_alpha:
            self.register_buffer("log_alpha", log_alpha)
        else:
            self.log_alpha = nn.Parameter(log_alpha)
        if target_entropy == "auto":
            target_entropy = auto_target_entropy(getattr(actor_network, "spec", None), self._tensor_keys.action_pred)
        self.register_buffer("target_entropy", torch.tensor(float(target_entropy), device=device))
        if samples_mc_entropy < 1:
            raise ValueError(f"OnlineDTLoss: samples_mc_entropy must be >= 1, got {samples_mc_entropy}")
        self.samples_mc_entropy = samples_mc_entropy
        self._set_reduction(reduction)
        self._set_scalar_output_mode(scalar_output_mode, "alpha, entropy")

    def _collect_in_keys(self) -> list[NestedKey]:
        return sorted({*self.actor_network.in_keys, self._tensor_keys.action_target}, key=str)

    def _out_keys(self) -> list[str]:
        return ["loss_log_likelihood", "loss_entropy", "loss_alpha", "alpha", "entropy"]

    @property
    def alpha(self) -> Tensor:
        """The current temperature (clamped to its bounds first), detached."""
        if self.min_log_alpha is not None or self.max_log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.clamp_(self.min_log_alpha, self.max_log_alpha)
        return self.log_alpha.detach().exp()

    def get_entropy_bonus(self, dist: torch.distributions.Distribution) -> Tensor:
        """Monte-Carlo entropy estimate ``-mean(log pi(x))`` over ``samples_mc_entropy`` reparameterised draws."""
        _, log_p = _rsample_and_log_prob(dist, (self.samples_mc_entropy,))
        return -log_p.mean(0)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """The Online DT loss terms of the batch."""
        td = tensordict.copy()
        target = self._get(td, self._tensor_keys.action_target)
        if target.requires_grad:
            raise RuntimeError(
                f"OnlineDTLoss: the target action {self._tensor_keys.action_target!r} requires grad; "
                "it must be data (detach it)"
            )
        dist = self._actor_dist(td)
        entropy = self.get_entropy_bonus(dist)
        alpha = self.alpha
        terms = {
            "loss_log_likelihood": -dist.log_prob(target),
            "loss_entropy": -alpha * entropy,
            "loss_alpha": self.log_alpha.exp() * (entropy - self.target_entropy).detach(),
        }
        if self.reduction == "none":
            out = TensorDict(terms, batch_size=tensordict.batch_size)
            if self.scalar_output_mode == "non_tensor":
                out.set_non_tensor("alpha", alpha)
                out.set_non_tensor("entropy", entropy.detach().mean())
            return out
        mask = self._mask(td)
        reduced = {k: self._reduce(v, mask) for k, v in terms.items()}
        reduced["entropy"] = entropy.detach().mean()
        reduced["alpha"] = alpha
        return self._finalize(tensordict, reduced)


class DTLoss(LossModule["DTLoss._AcceptedKeys"]):
    """Decision Transformer loss: distance between the actor's predicted actions and the dataset's.

    Args:
        actor_network: the actor over the context (e.g. a :class:`~tdrl.modules.DTActor` module), writing
            its prediction at ``action_pred``.

    Keyword Args:
        loss_function: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (elementwise).
        device: unused (TorchRL's signature).

    Keys (``set_keys``): ``action_target`` (the dataset's action, read before the actor runs) and
    ``action_pred`` (where the actor writes its prediction); both ``"action"`` by default.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.modules import DecisionTransformer, DTActor
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=30)
        >>> actor = Mod(DTActor(3, 2, transformer_config=config), ["observation", "action", "return_to_go"],
        ...             ["action"])
        >>> td = TensorDict({"observation": torch.randn(4, 5, 3), "action": torch.randn(4, 5, 2),
        ...                  "return_to_go": torch.randn(4, 5, 1)}, [4, 5])
        >>> DTLoss(actor)(td)["loss"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DTLoss`."""

        action_target: NestedKey = "action"
        action_pred: NestedKey = "action"

    def __init__(
        self,
        actor_network: TensorDictModuleBase,
        *,
        loss_function: LossFunction = "l2",
        reduction: Literal["mean", "sum", "none"] | None = None,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        if loss_function not in ("l1", "l2", "smooth_l1"):
            raise ValueError(f"DTLoss: loss_function must be 'l1', 'l2' or 'smooth_l1', got {loss_function!r}")
        self.convert_to_functional(actor_network, "actor_network")
        self.loss_function = loss_function
        self._set_reduction(reduction)

    def _collect_in_keys(self) -> list[NestedKey]:
        keys = {*self.actor_network.in_keys, self._tensor_keys.action_pred, self._tensor_keys.action_target}
        return sorted(keys, key=str)

    def _out_keys(self) -> list[str]:
        return ["loss"]

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """``{"loss": distance(predicted action, dataset action)}``."""
        td = tensordict.copy()
        target = self._get(td, self._tensor_keys.action_target).detach()
        pred = self._get(self._call("actor_network", td), self._tensor_keys.action_pred)
        loss = distance_loss(pred, target, self.loss_function)
        return self._finalize(tensordict, {"loss": self._reduce(loss, self._mask(td))})
