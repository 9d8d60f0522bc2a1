"""PILCO's saturating cost, in expectation over a Gaussian state belief.

Deisenroth & Rasmussen, "PILCO: A Model-Based and Data-Efficient Approach to Policy Search" (ICML 2011),
eqs. (24)-(25): for ``x ~ N(m, S)`` and ``c(x) = 1 - exp(-0.5 (x - x*)^T W (x - x*))``,
``E[c] = 1 - det(I + U S U)^(-1/2) exp(-0.5 v^T (I + U S U)^(-1) v)`` with ``U = W^(1/2)`` and
``v = U (m - x*)``.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor

from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import check_reduction

__all__ = ["ExponentialQuadraticCost"]

# Added to I + U S U before its Cholesky factorisation (TorchRL adds the same amount, so values agree).
_JITTER = 1e-5


def _sqrt_psd(weights: Tensor) -> Tensor:
    """The symmetric square root of a positive semi-definite matrix (negative eigenvalues clipped to 0)."""
    eigvals, eigvecs = torch.linalg.eigh(weights)
    return eigvecs @ torch.diag_embed(eigvals.clamp_min(0.0).sqrt()) @ eigvecs.transpose(-2, -1)


class ExponentialQuadraticCost(LossModule["ExponentialQuadraticCost._AcceptedKeys"]):
    """``loss_cost``: the expected saturating cost ``E[1 - exp(-0.5 |x - target|^2_W)]`` for ``x ~ N(mean, var)``.

    The cost lies in ``[0, 1]`` and is differentiable in the belief's mean and covariance, which lets a
    policy be optimised through moment-matched rollouts (PILCO).

    Args:
        target: the target state ``x*`` (``[D]`` or batch-shaped ``[..., D]``); the origin by default.
        weights: the ``[D, D]`` positive semi-definite precision ``W`` of the cost; the identity by default.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the per-belief costs; the output then has
            the belief's batch size).

    Keys (``set_keys``): ``loc`` (belief mean ``[..., D]``, default ``("observation", "mean")``), ``scale``
    (belief covariance ``[..., D, D]``, default ``("observation", "var")``) and ``loss_cost`` (the output).

    Examples:
        >>> cost = ExponentialQuadraticCost()
        >>> td = TensorDict({("observation", "mean"): torch.zeros(4, 2),
        ...                  ("observation", "var"): torch.eye(2).expand(4, 2, 2) * 1e-6}, [4])
        >>> float(cost(td)["loss_cost"]) < 1e-4
        True
    """

    target: Tensor | None
    weights: Tensor | None

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`ExponentialQuadraticCost`."""

        loc: NestedKey = ("observation", "mean")
        scale: NestedKey = ("observation", "var")
        loss_cost: NestedKey = "loss_cost"

    def __init__(
        self,
        target: Tensor | None = None,
        weights: Tensor | None = None,
        reduction: Literal["mean", "sum", "none"] = "mean",
    ) -> None:
        super().__init__()
        if weights is not None and (weights.ndim != 2 or weights.shape[0] != weights.shape[1]):
            raise ValueError(f"ExponentialQuadraticCost: weights must be a square [D, D] matrix, got {tuple(weights.shape)}")
        self.reduction = check_reduction(reduction)
        self.register_buffer("target", target)
        self.register_buffer("weights", weights)

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.loc, self._tensor_keys.scale]

    def _out_keys(self) -> list[str]:
        return [self._tensor_keys.loss_cost]  # type: ignore[list-item]

    def _check(self, mean: Tensor, cov: Tensor) -> None:
        d = mean.shape[-1]
        if cov.shape != (*mean.shape, d):
            raise ValueError(
                f"ExponentialQuadraticCost: {self._tensor_keys.scale!r} must be the [..., {d}, {d}] covariance of "
                f"{self._tensor_keys.loc!r} {tuple(mean.shape)}, got {tuple(cov.shape)}"
            )
        if self.weights is not None and self.weights.shape[-1] != d:
            raise ValueError(f"ExponentialQuadraticCost: weights are {tuple(self.weights.shape)}, the state has D={d}")

    def expected_cost(self, mean: Tensor, cov: Tensor) -> Tensor:
        """``E[c(x)]`` for ``x ~ N(mean, cov)``, shaped like the batch of ``mean``."""
        self._check(mean, cov)
        d = mean.shape[-1]
        # A = I + U cov U (+ jitter) with U = W^(1/2); the default W = I (and target 0) skips those products.
        shift = torch.eye(d, device=mean.device, dtype=mean.dtype) * (1.0 + _JITTER)
        v = (mean if self.target is None else mean - self.target).unsqueeze(-1)
        if self.weights is None:
            a = cov + shift
        else:
            u = _sqrt_psd(self.weights)
            a = u @ cov @ u + shift
            v = u @ v
        chol = torch.linalg.cholesky(a)
        quad = (v.transpose(-2, -1) @ torch.cholesky_solve(v, chol)).squeeze(-1).squeeze(-1)
        # det(A)^(-1/2) from the Cholesky diagonal: exp(-sum(log diag L)).
        inv_sqrt_det = torch.exp(-torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1))
        return 1.0 - inv_sqrt_det * torch.exp(-0.5 * quad)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """``{loss_cost: reduced expected cost}`` of the beliefs in ``tensordict``."""
        mean = self._get(tensordict, self._tensor_keys.loc)
        cost = self.expected_cost(mean, self._get(tensordict, self._tensor_keys.scale))
        out = self._finalize(tensordict, {self._tensor_keys.loss_cost: self._reduce(cost)})  # type: ignore[dict-item]
        if self.reduction == "none":
            # Per-belief costs: the output carries the beliefs' batch size, as TorchRL's does.
            out.batch_size = mean.shape[:-1]
        return out
