"""``DiffusionActor``: a policy that denoises an action with a DDPM reverse chain conditioned on the observation.

Ho et al., "Denoising Diffusion Probabilistic Models" (2020, https://arxiv.org/abs/2006.11239) for the
schedule and the reverse step; Chi et al., "Diffusion Policy" (RSS 2023, https://arxiv.org/abs/2303.04137)
for its use as a visuomotor policy. :class:`~tdrl.objectives.DiffusionBCLoss` trains it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict.nn import InteractionType, interaction_type
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.data import Composite, TensorSpec
from tdrl.modules.tensordict_module.common import SafeModule

__all__ = ["DiffusionActor"]

_SCHEDULE = ("betas", "alphas", "alphas_cumprod")
# The largest step count whose integer timesteps stay distinct once cast to the model's dtype
# (bfloat16 holds 8 significant bits, float16 11).
_MAX_STEPS = {torch.bfloat16: 257, torch.float16: 2049}


class DDPMDenoiser(nn.Module):
    """A fixed linear-beta DDPM schedule around a score network that predicts the added noise.

    The score network reads ``cat([noisy_action, observation, t], -1)`` (``t`` the raw integer timestep as a
    float) and returns the noise estimate, shaped like the action.

    Args:
        score_network: the noise predictor.
        action_dim: size of the action.
        num_steps: number of diffusion steps ``K``.
        beta_start: first beta of the linear schedule.
        beta_end: last beta of the linear schedule.

    Examples:
        >>> net = nn.Linear(2 + 3 + 1, 2)
        >>> ddpm = DDPMDenoiser(net, action_dim=2, num_steps=5)
        >>> noisy, noise = ddpm.add_noise(torch.zeros(4, 2), torch.tensor([0, 1, 2, 4]))
        >>> ddpm(torch.randn(4, 3)).shape
        torch.Size([4, 2])
    """

    betas: Tensor
    alphas: Tensor
    alphas_cumprod: Tensor

    def __init__(
        self,
        score_network: nn.Module,
        action_dim: int,
        num_steps: int = 100,
        beta_start: float = 1e-4,
        beta_end: float = 0.02,
    ) -> None:
        super().__init__()
        if num_steps < 1:
            raise ValueError(f"DiffusionActor: num_steps must be at least 1, got {num_steps}")
        self.score_network = score_network
        self.action_dim = action_dim
        self.num_steps = num_steps
        betas = torch.linspace(beta_start, beta_end, num_steps)
        alphas = 1.0 - betas
        self.register_buffer("betas", betas)
        self.register_buffer("alphas", alphas)
        self.register_buffer("alphas_cumprod", torch.cumprod(alphas, 0))

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> DDPMDenoiser:  # type: ignore[override]
        # ``.half()`` / ``.to(bfloat16)`` cast the network, not the schedule: products of 100 alphas lose
        # their precision in 8-bit mantissas (TorchRL keeps the schedule's dtype the same way).
        kept = {name: getattr(self, name) for name in _SCHEDULE}
        super()._apply(fn, recurse=recurse)
        for name, before in kept.items():
            setattr(self, name, before.to(device=getattr(self, name).device))
        return self

    def _schedule(self, like: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        dtype = torch.float32 if like.dtype in _MAX_STEPS else like.dtype
        b, a, ab = (getattr(self, n).to(device=like.device, dtype=dtype) for n in _SCHEDULE)
        return b, a, ab

    def _check_dtype(self, dtype: torch.dtype) -> None:
        limit = _MAX_STEPS.get(dtype)
        if limit is not None and self.num_steps > limit:
            raise ValueError(
                f"DiffusionActor: num_steps={self.num_steps} timesteps are not all distinct in {dtype}; "
                f"use at most {limit} steps or a float32 model"
            )

    def add_noise(self, clean_action: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
        """The forward process ``q(x_t | x_0)``: ``(sqrt(ᾱ_t) x_0 + sqrt(1 - ᾱ_t) ε, ε)`` with ``ε ~ N(0, I)``.

        Args:
            clean_action: ``(..., action_dim)`` clean actions ``x_0``.
            t: integer timesteps in ``[0, num_steps)``, shaped like the batch of ``clean_action``.

        Returns:
            The noisy action and the noise drawn, both shaped like ``clean_action``.
        """
        self._check_dtype(clean_action.dtype)
        alpha_bar = self._schedule(clean_action)[2][t]
        alpha_bar = alpha_bar.reshape(alpha_bar.shape + (1,) * (clean_action.ndim - alpha_bar.ndim))
        noise = torch.randn_like(clean_action)
        noisy = alpha_bar.sqrt() * clean_action.to(alpha_bar.dtype) + (1.0 - alpha_bar).sqrt() * noise.to(
            alpha_bar.dtype
        )
        return noisy.to(clean_action.dtype), noise

    def forward(self, observation: Tensor) -> Tensor:
        """Runs the ``num_steps`` reverse steps from ``x_K`` (Gaussian; zeros in deterministic mode)."""
        batch, device, dtype = observation.shape[:-1], observation.device, observation.dtype
        self._check_dtype(dtype)
        betas, alphas, alpha_bars = self._schedule(observation)
        # DETERMINISTIC interaction: a repeatable chain from a zero latent without injected noise.
        deterministic = interaction_type() == InteractionType.DETERMINISTIC
        shape = (*batch, self.action_dim)
        x = torch.zeros(shape, device=device, dtype=dtype) if deterministic else torch.randn(
            shape, device=device, dtype=dtype
        )
        for k in range(self.num_steps - 1, -1, -1):
            t = torch.full((*batch, 1), k, dtype=dtype, device=device)
            eps = self.score_network(torch.cat([x, observation, t], dim=-1)).to(betas.dtype)
            # Ho et al. (2020), Algorithm 2: x_{k-1} = (x_k - beta_k / sqrt(1 - ᾱ_k) ε) / sqrt(alpha_k) + σ_k z.
            x = (x.to(betas.dtype) - betas[k] / (1.0 - alpha_bars[k]).sqrt() * eps) / alphas[k].sqrt()
            if not deterministic:
                z = torch.randn_like(x)
                if k > 0:
                    x = x + betas[k].sqrt() * z
            x = x.to(dtype)
        return x


def _default_score_network(action_dim: int, obs_dim: int | None) -> nn.Module:
    first: nn.Module = nn.LazyLinear(256) if obs_dim is None else nn.Linear(action_dim + obs_dim + 1, 256)
    return nn.Sequential(first, nn.SiLU(), nn.Linear(256, 256), nn.SiLU(), nn.Linear(256, action_dim))


class DiffusionActor(SafeModule):
    """A diffusion policy: reads ``"observation"``, writes ``"action"`` denoised by a DDPM reverse chain.

    The chain starts from Gaussian noise and injects noise at every step but the last; under
    ``set_interaction_type(InteractionType.DETERMINISTIC)`` it starts from zeros and injects none (a
    repeatable action, not a sample of the model).

    Args:
        action_dim: size of the action.
        obs_dim: size of the observation, for the default score network's first layer (a ``LazyLinear``
            when ``None``); ignored with a custom ``score_network``.
        score_network: noise predictor reading ``cat([noisy_action, observation, t], -1)``; defaults to a
            SiLU MLP with two hidden layers of 256 units.
        num_steps: diffusion steps (at most 257 for bfloat16 and 2049 for float16 models, so that the
            timesteps stay distinct).
        beta_start: first beta of the linear schedule.
        beta_end: last beta of the linear schedule.
        in_keys: the observation key (``["observation"]`` by default).
        out_keys: the action key (``["action"]`` by default).

    Keyword Args:
        spec: spec of the action (wrapped in a ``Composite`` under ``"action"`` when it is a leaf).
        **kwargs: passed to :class:`~tdrl.modules.SafeModule` (``safe``, ``inplace``).

    Examples:
        >>> from tensordict import TensorDict
        >>> actor = DiffusionActor(action_dim=2, num_steps=5)
        >>> actor(TensorDict(observation=torch.randn(4, 3), batch_size=[4]))["action"].shape
        torch.Size([4, 2])
    """

    def __init__(
        self,
        action_dim: int,
        obs_dim: int | None = None,
        score_network: nn.Module | None = None,
        num_steps: int = 100,
        beta_start: float = 1e-4,
        beta_end: float = 0.02,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: TensorSpec | None = None,
        **kwargs: Any,
    ) -> None:
        in_keys = ["observation"] if in_keys is None else list(in_keys)
        out_keys = ["action"] if out_keys is None else list(out_keys)
        if spec is not None and "action" in out_keys and not isinstance(spec, Composite):
            spec = Composite(action=spec)
        if score_network is None:
            score_network = _default_score_network(action_dim, obs_dim)
        module = DDPMDenoiser(score_network, action_dim, num_steps, beta_start, beta_end)
        super().__init__(module, in_keys=in_keys, out_keys=out_keys, spec=spec, **kwargs)
