"""``RBFController``: PILCO's radial-basis-function policy, propagating a Gaussian state belief analytically.

Deisenroth & Rasmussen, "PILCO: A Model-Based and Data-Efficient Approach to Policy Search" (ICML 2011),
and Deisenroth's thesis (2010), appendix A.2 (moments of an RBF network under a Gaussian input) and
section 3.5.1 (the sine squashing).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["RBFController"]

# Added to the action covariance's diagonal so that it stays positive definite.
_COV_JITTER = 1e-6


def _eye(n: int, like: Tensor) -> Tensor:
    return torch.eye(n, device=like.device, dtype=like.dtype)


class RBFController(nn.Module):
    """Maps a Gaussian state belief ``N(mean, covariance)`` to the moment-matched Gaussian of its action.

    The policy is ``pi(x) = sum_i w_i exp(-0.5 |x - c_i|^2_{Lambda^-1})`` over ``n_basis`` centres ``c_i``
    with shared lengthscales ``Lambda = diag(l^2)``; with ``max_action`` the output is squashed by
    ``max_action * sin(.)`` (:meth:`squash_sin`). The forward pass returns the action's mean and covariance and the
    input-output cross-covariance in PILCO's form ``S^-1 cov(x, u)`` (``S`` the state covariance), the
    factor its rollout multiplies by ``S`` to join state and action.

    Args:
        input_dim: size of the state ``D``.
        output_dim: size of the action ``F``.
        max_action: bound of the squashed action (a float or a per-dimension tensor); ``None`` leaves the
            action unsquashed.
        n_basis: number of basis functions.

    Returns (``forward``):
        ``(action_mean [*batch, F], action_covariance [*batch, F, F], cross_covariance [*batch, D, F])``.

    Examples:
        >>> controller = RBFController(input_dim=4, output_dim=1, max_action=2.0, n_basis=5)
        >>> cov = torch.eye(4).expand(2, 4, 4) * 0.1
        >>> [t.shape for t in controller(torch.randn(2, 4), cov)]
        [torch.Size([2, 1]), torch.Size([2, 1, 1]), torch.Size([2, 4, 1])]
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        max_action: float | Tensor,
        n_basis: int = 10,
    ) -> None:
        super().__init__()
        self.input_dim, self.output_dim, self.n_basis = input_dim, output_dim, n_basis
        self.max_action = max_action
        self.centers = nn.Parameter(torch.randn(n_basis, input_dim) * 0.5)
        self.weights = nn.Parameter(torch.randn(n_basis, output_dim) * 0.1)
        self.lengthscales = nn.Parameter(torch.ones(input_dim))
        # Signal variance of the basis functions (fixed at 1, as in PILCO's deterministic RBF policy).
        self.variance = 1.0

    @staticmethod
    def squash_sin(mean: Tensor, covariance: Tensor, max_action: float | Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Exact moments of ``max_action * sin(u)`` for ``u ~ N(mean, covariance)``.

        Args:
            mean: ``[*batch, K]``.
            covariance: ``[*batch, K, K]``.
            max_action: a scalar or ``[K]`` bound.

        Returns:
            The squashed mean ``[*batch, K]``, its covariance ``[*batch, K, K]`` and
            ``cov(u)^-1 cov(u, squashed)`` as the diagonal ``[*batch, K, K]``.

        Examples:
            >>> m, s, c = RBFController.squash_sin(torch.zeros(1, 2), torch.zeros(1, 2, 2), 1.0)
            >>> m
            tensor([[0., 0.]])
        """
        k = mean.shape[-1]
        bound = torch.as_tensor(max_action, dtype=mean.dtype, device=mean.device).reshape(-1)
        if bound.numel() == 1 and k > 1:
            bound = bound.expand(k)
        var = torch.diagonal(covariance, dim1=-2, dim2=-1)
        damp = torch.exp(-var / 2.0)
        squashed_mean = bound * damp * torch.sin(mean)
        # E[sin(a) sin(b)] via the product-to-sum identity: (E[cos(a - b)] - E[cos(a + b)]) / 2.
        log_q = -(var.unsqueeze(-1) + var.unsqueeze(-2)) / 2.0
        q = torch.exp(log_q)
        minus = (torch.exp(log_q + covariance) - q) * torch.cos(mean.unsqueeze(-1) - mean.unsqueeze(-2))
        plus = (torch.exp(log_q - covariance) - q) * torch.cos(mean.unsqueeze(-1) + mean.unsqueeze(-2))
        squashed_cov = (bound.unsqueeze(-1) * bound.unsqueeze(-2)) * (minus - plus) / 2.0
        cross = torch.diag_embed(bound * damp * torch.cos(mean))
        return squashed_mean, squashed_cov, cross

    def _basis_mean(self, mean: Tensor, cov: Tensor) -> tuple[Tensor, Tensor]:
        """``E[phi_i(x)]`` ``[B, N]`` and ``(Lambda + S)^-1 (c_i - m)`` ``[B, N, D]`` (thesis eqs. A.34-A.36)."""
        d = mean.shape[-1]
        inv_l = torch.diag(1.0 / self.lengthscales)
        b_mat = inv_l @ cov @ inv_l + _eye(d, mean)
        scaled = (self.centers.unsqueeze(0) - mean.unsqueeze(1)) @ inv_l
        t = torch.linalg.solve(b_mat, scaled.mT).mT
        norm = self.variance * torch.exp(-0.5 * torch.linalg.slogdet(b_mat)[1])
        phi = norm.unsqueeze(-1) * torch.exp(-0.5 * (scaled * t).sum(-1))
        return phi, t @ inv_l

    def _basis_second_moment(self, mean: Tensor, cov: Tensor) -> Tensor:
        """``E[phi_i(x) phi_j(x)]`` ``[B, N, N]`` (thesis eqs. A.42-A.45)."""
        b, n, d = mean.shape[0], self.n_basis, mean.shape[-1]
        sq = self.lengthscales**2
        diff = self.centers.unsqueeze(1) - self.centers.unsqueeze(0)
        centre = (self.centers.unsqueeze(1) + self.centers.unsqueeze(0)) / 2.0
        between = -0.25 * ((diff**2) / sq).sum(-1)
        b_q = cov + torch.diag(sq / 2.0).unsqueeze(0)
        z = (centre.unsqueeze(0) - mean[:, None, None, :]).reshape(b, n * n, d)
        around = -0.5 * (z * torch.linalg.solve(b_q, z.mT).mT).sum(-1).reshape(b, n, n)
        c_q = torch.exp(0.5 * (torch.log(sq / 2.0).sum() - torch.linalg.slogdet(b_q)[1]))
        return (self.variance**2 * c_q.reshape(b, 1, 1)) * torch.exp(between.unsqueeze(0) + around)

    def forward(self, mean: Tensor, covariance: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The action belief of the state belief ``N(mean, covariance)``."""
        d = self.input_dim
        if mean.shape[-1] != d or covariance.shape != (*mean.shape, d):
            raise ValueError(
                f"RBFController: expected mean [..., {d}] and covariance [..., {d}, {d}], got "
                f"{tuple(mean.shape)} and {tuple(covariance.shape)}"
            )
        batch = mean.shape[:-1]
        m, s = mean.reshape(-1, d), covariance.reshape(-1, d, d)
        phi, t_scaled = self._basis_mean(m, s)
        action_mean = phi @ self.weights
        cross = t_scaled.mT @ (phi.unsqueeze(-1) * self.weights)
        w = self.weights.unsqueeze(0).expand(m.shape[0], -1, -1)
        action_cov = w.mT @ self._basis_second_moment(m, s) @ w - action_mean.unsqueeze(-1) @ action_mean.unsqueeze(1)
        action_cov = (action_cov + action_cov.mT) / 2.0 + _COV_JITTER * _eye(self.output_dim, m)
        if self.max_action is not None:
            action_mean, action_cov, squash = self.squash_sin(action_mean, action_cov, self.max_action)
            cross = cross @ squash
        return (
            action_mean.reshape(*batch, self.output_dim),
            action_cov.reshape(*batch, self.output_dim, self.output_dim),
            cross.reshape(*batch, d, self.output_dim),
        )
