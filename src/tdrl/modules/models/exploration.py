"""Generalised state-dependent exploration (gSDE) and the exploration layers TorchRL keeps at this path.

Raffin, Kober & Stulp, "Smooth Exploration for Robotic Reinforcement Learning",
https://arxiv.org/abs/2005.05719. The exploration noise is a linear function of the state,
``eps(s) = (sigma * E) @ s``, with the noise matrix ``E`` drawn once per episode rather than once per step:
actions vary smoothly along a trajectory. ``E`` travels in the ``"_eps_gSDE"`` entry: a
:class:`~tdrl.envs.transforms.gSDENoise` primer zeroes it on reset, which tells the module to draw a new one.
"""

from __future__ import annotations

import math
import warnings

import torch
from tensordict.nn import InteractionType, interaction_type
from torch import distributions as d
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

from tdrl.modules.models.noisy import NoisyLazyLinear, NoisyLinear, reset_noise
from tdrl.modules.tensordict_module.dropout import ConsistentDropout, ConsistentDropoutModule
from tdrl.modules.utils.mappings import inv_softplus

# ConsistentDropout* live in tensordict_module/dropout.py; re-exported for TorchRL's path (models.exploration).
__all__ = [
    "ConsistentDropout",
    "ConsistentDropoutModule",
    "LazygSDEModule",
    "NoisyLazyLinear",
    "NoisyLinear",
    "gSDEModule",
    "reset_noise",
]

_DETERMINISTIC = (InteractionType.MODE, InteractionType.MEAN, InteractionType.DETERMINISTIC)


class gSDEModule(nn.Module):  # noqa: N801 - TorchRL's name
    """State-dependent exploration noise added to a mean action: ``forward(mu, state, _eps_gSDE)`` returns
    ``(mu, scale, action, _eps_gSDE)``.

    ``scale = sqrt(sum_j (sigma_ij s_j)^2)`` is the standard deviation of the noise of each action
    dimension. Under ``ExplorationType.RANDOM`` the action is ``mu + (sigma * E) @ s``; under the mode, mean
    or deterministic types it is ``mu``. The noise matrix ``E`` (``[*batch, action_dim, state_dim]``) comes
    from ``_eps_gSDE``: rows that are all zero (a :class:`~tdrl.envs.transforms.gSDENoise` reset, or its
    ``[*batch, 1]`` placeholder) are redrawn, other rows are reused, so the noise is fixed over an episode.

    Args:
        action_dim: action dimension.
        state_dim: state dimension.
        sigma_init: initial ``sigma`` (default ``sqrt((1 - scale_min) / state_dim)``; learned through a
            softplus when ``learn_sigma``).
        scale_min: lower bound of ``sigma``. Defaults to ``0.01``.
        scale_max: upper bound of ``sigma``. Defaults to ``10.0``.
        learn_sigma: ``sigma`` is a parameter (default) rather than a buffer.
        transform: a ``torch.distributions.Transform`` applied to the action (e.g. a tanh).
        device: where the parameters are created.

    Examples:
        >>> from tensordict.nn import InteractionType, set_interaction_type
        >>> module = gSDEModule(action_dim=2, state_dim=3)
        >>> with set_interaction_type(InteractionType.RANDOM):
        ...     mu, scale, action, eps = module(torch.zeros(4, 2), torch.randn(4, 3), torch.zeros(4, 1))
        >>> eps.shape, scale.shape, bool((action != mu).all())
        (torch.Size([4, 2, 3]), torch.Size([4, 2]), True)
        >>> with set_interaction_type(InteractionType.RANDOM):  # the same noise matrix: no redraw
        ...     again = module(torch.zeros(4, 2), torch.randn(4, 3), eps)[3]
        >>> bool((again == eps).all())
        True
    """

    def __init__(
        self,
        action_dim: int,
        state_dim: int,
        sigma_init: float | None = None,
        scale_min: float = 0.01,
        scale_max: float = 10.0,
        learn_sigma: bool = True,
        transform: d.Transform | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.action_dim, self.state_dim = action_dim, state_dim
        self.scale_min, self.scale_max = scale_min, scale_max
        self.transform = transform
        self.learn_sigma = learn_sigma
        if learn_sigma:
            if sigma_init is None:
                sigma_init = inv_softplus(math.sqrt((1.0 - scale_min) / state_dim))
            # Zeros, as TorchRL: softplus(0) = log 2 is the starting sigma (sigma_init is recorded only).
            self.log_sigma = nn.Parameter(torch.zeros(action_dim, state_dim, device=device))
        else:
            if sigma_init is None:
                sigma_init = math.sqrt((1.0 - scale_min) / state_dim)
            self.register_buffer("_sigma", torch.full((action_dim, state_dim), float(sigma_init), device=device))
        if sigma_init != 0.0:
            self.register_buffer("sigma_init", torch.as_tensor(sigma_init, device=device))

    @property
    def sigma(self) -> torch.Tensor:
        """The noise scale matrix ``[action_dim, state_dim]`` (at least ``scale_min``)."""
        raw = nn.functional.softplus(self.log_sigma) if self.learn_sigma else self._sigma
        return raw.clamp_min(self.scale_min)

    def _noise(self, eps: torch.Tensor | None, state: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        batch = state.shape[:-1]
        full = (*batch, *sigma.shape)
        mode = interaction_type()
        if eps is None:
            if mode == InteractionType.RANDOM:
                return torch.randn(full, device=sigma.device, dtype=sigma.dtype)
            return torch.zeros(full, device=sigma.device, dtype=sigma.dtype)
        if tuple(eps.shape[: len(batch)]) != tuple(batch):
            raise RuntimeError(
                f"gSDEModule: noise '_eps_gSDE' of shape {tuple(eps.shape)} and state of shape "
                f"{tuple(state.shape)} must share the batch dimensions"
            )
        placeholder = eps.numel() == math.prod(batch)
        flat = eps.reshape(*batch, -1)
        zero_rows = (flat == 0).all(-1)
        if placeholder and not zero_rows.all():
            raise RuntimeError(
                f"gSDEModule: '_eps_gSDE' of shape {tuple(eps.shape)} is a reset placeholder (one value per "
                "batch element) but holds non-zero values; a gSDENoise primer writes zeros there"
            )
        if not placeholder and tuple(eps.shape) != full:
            raise RuntimeError(f"gSDEModule: '_eps_gSDE' has shape {tuple(eps.shape)}, expected {full}")
        if not zero_rows.any():
            return eps
        fresh = torch.randn(full, device=sigma.device, dtype=sigma.dtype)
        if zero_rows.all():
            return fresh
        # Only the rows of the batch elements that were reset get a new noise matrix.
        return torch.where(zero_rows.reshape(*batch, 1, 1), fresh, eps)

    def forward(
        self, mu: torch.Tensor, state: torch.Tensor, _eps_gSDE: torch.Tensor | None  # noqa: N803 - TorchRL's key
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(mu, scale, action, noise matrix)``; see the class docstring."""
        if state.shape[:-1] != mu.shape[:-1]:
            raise RuntimeError(
                f"gSDEModule: mu and state must share the batch dimensions, got {tuple(mu.shape)} and "
                f"{tuple(state.shape)}"
            )
        mode = interaction_type()
        if mode != InteractionType.RANDOM and mode not in _DETERMINISTIC:
            raise RuntimeError(f"gSDEModule: exploration type {mode} is not supported; use RANDOM or MODE")
        sigma = self.sigma.clamp_max(self.scale_max)
        eps = self._noise(_eps_gSDE, state, sigma)
        if mode == InteractionType.RANDOM:
            action = mu + ((sigma * eps) @ state.unsqueeze(-1)).squeeze(-1)
        else:
            action = mu
        scale = (sigma * state.unsqueeze(-2)).pow(2).sum(-1).clamp_min(1e-5).sqrt()
        if not torch.compiler.is_compiling() and not torch.isfinite(scale).all():
            warnings.warn("gSDEModule: non-finite scale", RuntimeWarning, stacklevel=2)
        if self.transform is not None:
            action = self.transform(action)
        return mu, scale, action, eps


class LazygSDEModule(LazyModuleMixin, gSDEModule):
    """:class:`gSDEModule` whose dimensions (and initial ``sigma``) come from the first call.

    ``sigma`` starts at ``sqrt(1 / (state_dim * E[s^2]))`` per state feature (times ``sigma_init`` when
    given), so the initial noise has about unit variance whatever the state's scale.

    Args:
        sigma_init: multiplier of the data-driven initial ``sigma`` (default: none).
        scale_min: lower bound of ``sigma``. Defaults to ``0.01``.
        scale_max: upper bound of ``sigma``. Defaults to ``10.0``.
        learn_sigma: ``sigma`` is a parameter (default) rather than a buffer.
        transform: a ``torch.distributions.Transform`` applied to the action.
        device: where the parameters are created.

    Examples:
        >>> from tensordict.nn import InteractionType, set_interaction_type
        >>> module = LazygSDEModule()
        >>> with set_interaction_type(InteractionType.RANDOM):
        ...     _ = module(torch.zeros(4, 2), torch.randn(4, 3), torch.zeros(4, 1))
        >>> type(module).__name__, tuple(module.log_sigma.shape)
        ('gSDEModule', (2, 3))
    """

    cls_to_become = gSDEModule

    def __init__(
        self,
        sigma_init: float | None = None,
        scale_min: float = 0.01,
        scale_max: float = 10.0,
        learn_sigma: bool = True,
        transform: d.Transform | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(0, 0, sigma_init=0.0, scale_min=scale_min, scale_max=scale_max, learn_sigma=learn_sigma,
                         transform=transform, device=device)
        factory = {"device": device, "dtype": torch.get_default_dtype()}
        self._sigma_init = sigma_init
        self.sigma_init = UninitializedBuffer(**factory)
        if learn_sigma:
            self.log_sigma = UninitializedParameter(**factory)
        else:
            self._sigma = UninitializedBuffer(**factory)

    def reset_parameters(self) -> None:
        """Nothing to reset before the shapes are known."""

    def initialize_parameters(self, mu: torch.Tensor, state: torch.Tensor, _eps_gSDE: torch.Tensor | None) -> None:  # noqa: N803
        """Materialises ``sigma`` from the first batch's action and state dimensions and state scale."""
        if not self.has_uninitialized_params():
            return
        action_dim, state_dim = mu.shape[-1], state.shape[-1]
        with torch.no_grad():
            if state.ndim > 2:
                state = state.flatten(0, -2).squeeze(0)
            inv_var = torch.ones(1, device=mu.device) if state.ndim == 1 else state.pow(2).mean(0).reciprocal()
            self.sigma_init.materialize(inv_var.shape)
            if self.learn_sigma and self._sigma_init is None:
                inv_var.clamp_min_(self.scale_min)
            base = (inv_var / state_dim).sqrt()
            value = base if self._sigma_init is None else self._sigma_init * base
            if self.learn_sigma:
                self.sigma_init.data.copy_(inv_softplus(value))
                self.log_sigma.materialize((action_dim, state_dim))
                self.log_sigma.data.copy_(self.sigma_init.expand_as(self.log_sigma))
            else:
                self.sigma_init.data.copy_(value)
                self._sigma.materialize((action_dim, state_dim))
                self._sigma.data.copy_(self.sigma_init.expand_as(self._sigma))
