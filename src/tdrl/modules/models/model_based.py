"""Dreamer (v1) networks: RSSM prior / posterior / rollout, pixel encoder and decoder, actor.

Hafner et al., "Learning Latent Dynamics for Planning from Pixels" (PlaNet, RSSM), https://arxiv.org/abs/1811.04551;
"Dream to Control" (Dreamer), https://arxiv.org/abs/1912.01603. Names, arguments and parameter layouts follow
TorchRL 0.14.1 so state dicts load across both. The stochastic part of the latent is called ``state``, the
deterministic GRU part ``belief``.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import NormalParamExtractor, TensorDictModuleBase, TensorDictSequential
from torch import nn

from tdrl.modules.models.mlp import MLP

__all__ = ["DreamerActor", "ObsDecoder", "ObsEncoder", "RSSMPosterior", "RSSMPrior", "RSSMRollout"]


def _gaussian_head(in_linear: nn.Module, hidden_dim: int, state_dim: int, scale_lb: float,
                   device: Any) -> nn.Sequential:
    """``in_linear -> ELU -> Linear(2 * state_dim) -> (mean, softplus std + scale_lb)``."""
    return nn.Sequential(
        in_linear,
        nn.ELU(),
        nn.Linear(hidden_dim, 2 * state_dim, device=device),
        NormalParamExtractor(scale_lb=scale_lb, scale_mapping="softplus"),
    )


def _sample(mean: torch.Tensor, std: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
    # Reparametrised sample; ``noise`` makes it deterministic (tests, fixed-seed replays).
    if noise is None:
        noise = torch.randn_like(std)
    return mean + noise * std


def _depth_alias(owner: object, channels: int, depth: int | None) -> int:
    if depth is None:
        return channels
    warnings.warn(
        f"The depth argument in {type(owner)} will soon be deprecated and used for the depth of the network "
        "instead. Please use channels for the layer size and num_layers for the depth until depth replaces "
        "num_layers.",
        stacklevel=3,
    )
    return depth


class DreamerActor(nn.Module):
    """Dreamer's actor: an MLP on ``(state, belief)`` returning the ``loc`` and ``scale`` of the action.

    The scale is ``biased_softplus`` with bias ``std_bias`` and floor ``std_min_val`` (a wide initial policy).

    Args:
        out_features: action dimension.
        depth: number of hidden layers.
        num_cells: width of the hidden layers.
        activation_class: activation of the hidden layers.
        std_bias: the scale at a zero pre-activation.
        std_min_val: lower bound of the scale.
        device: device of the parameters.

    Examples:
        >>> actor = DreamerActor(2, depth=1, num_cells=8)
        >>> loc, scale = actor(torch.randn(5, 3), torch.randn(5, 4))
        >>> loc.shape, bool((scale > 0).all())
        (torch.Size([5, 2]), True)
    """

    def __init__(
        self,
        out_features: int,
        depth: int = 4,
        num_cells: int = 200,
        activation_class: type[nn.Module] = nn.ELU,
        std_bias: float = 5.0,
        std_min_val: float = 1e-4,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.backbone = MLP(
            out_features=2 * out_features,
            depth=depth,
            num_cells=num_cells,
            activation_class=activation_class,
            device=device,
        )
        self.backbone.append(NormalParamExtractor(scale_mapping=f"biased_softplus_{std_bias}_{std_min_val}"))

    def forward(self, state: torch.Tensor, belief: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc, scale = self.backbone(state, belief)
        return loc, scale


class ObsEncoder(nn.Module):
    """Pixel encoder: ``num_layers`` stride-2 4x4 convolutions with ReLU, doubling the channels, flattened.

    Args:
        channels: channels of the first convolution.
        num_layers: number of convolutions (at least 1).
        in_channels: input channels (``None``: a lazy first convolution).
        depth: deprecated spelling of ``channels``.
        device: device of the parameters.

    Examples:
        >>> enc = ObsEncoder(channels=4, num_layers=2, in_channels=3)
        >>> enc(torch.randn(2, 5, 3, 16, 16)).shape
        torch.Size([2, 5, 32])
    """

    def __init__(
        self,
        channels: int = 32,
        num_layers: int = 4,
        in_channels: int | None = None,
        depth: int | None = None,
        device: Any = None,
    ) -> None:
        channels = _depth_alias(self, channels, depth)
        if num_layers < 1:
            raise RuntimeError("num_layers cannot be smaller than 1.")
        super().__init__()
        if in_channels is not None:
            first: nn.Module = nn.Conv2d(in_channels, channels, 4, stride=2, device=device)
        else:
            first = nn.LazyConv2d(channels, 4, stride=2, device=device)
        layers: list[nn.Module] = [first, nn.ReLU()]
        width = channels
        for _ in range(1, num_layers):
            layers += [nn.Conv2d(width, 2 * width, 4, stride=2, device=device), nn.ReLU()]
            width *= 2
        self.encoder = nn.Sequential(*layers)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        if observation.ndim < 3:
            raise ValueError(f"ObsEncoder expects pixels shaped [*batch, C, H, W], got {tuple(observation.shape)}")
        *batch, c, h, w = observation.shape
        latent = self.encoder(observation.reshape(-1, c, h, w))
        return latent.reshape(*batch, -1)


class ObsDecoder(nn.Module):
    """Pixel decoder: a linear layer to ``8 * channels * 4`` features seen as a 1x1 image, then
    ``num_layers`` stride-2 transposed convolutions halving the channels, ending with ``out_channels``.

    With the defaults (4 layers, kernels ``[5, 5, 6, 6]``) the output is 64x64.

    Args:
        channels: channels before the last transposed convolution.
        num_layers: number of transposed convolutions (at least 1).
        kernel_sizes: one kernel size, or one per layer (default ``[5, 5, 6, 6]`` for 4 layers, else 5).
        latent_dim: ``state_dim + belief_dim`` (``None``: a lazy linear layer).
        out_channels: output channels (3 for RGB).
        depth: deprecated spelling of ``channels``.
        device: device of the parameters.

    Examples:
        >>> dec = ObsDecoder(channels=4, latent_dim=10)
        >>> dec(torch.randn(2, 6), torch.randn(2, 4)).shape
        torch.Size([2, 3, 64, 64])
    """

    def __init__(
        self,
        channels: int = 32,
        num_layers: int = 4,
        kernel_sizes: int | list[int] | None = None,
        latent_dim: int | None = None,
        out_channels: int = 3,
        depth: int | None = None,
        device: Any = None,
    ) -> None:
        channels = _depth_alias(self, channels, depth)
        if num_layers < 1:
            raise RuntimeError("num_layers cannot be smaller than 1.")
        super().__init__()
        linear_out = channels * 8 * 2 * 2
        if latent_dim is not None:
            first: nn.Module = nn.Linear(latent_dim, linear_out, device=device)
        else:
            first = nn.LazyLinear(linear_out, device=device)
        self.state_to_latent = nn.Sequential(first, nn.ReLU())
        if kernel_sizes is None:
            kernel_sizes = [5, 5, 6, 6] if num_layers == 4 else 5
        if isinstance(kernel_sizes, int):
            kernel_sizes = [kernel_sizes] * num_layers
        if len(kernel_sizes) != num_layers:
            raise ValueError(f"ObsDecoder: {num_layers} layers need {num_layers} kernel sizes, got {kernel_sizes}")
        self.decoder = nn.Sequential(*self._layers(channels, num_layers, kernel_sizes, linear_out, out_channels,
                                                   device))
        self._depth = channels

    @staticmethod
    def _layers(channels: int, num_layers: int, kernels: list[int], linear_out: int, out_channels: int,
                device: Any) -> list[nn.Module]:
        # Built from the output backwards: layer j (from the end) maps channels * 2**j -> channels * 2**(j-1);
        # the first maps the linear features. The layout (and so the state dict) is TorchRL's.
        layers: list[nn.Module] = [nn.ReLU(), nn.ConvTranspose2d(channels, out_channels, kernels[-1], stride=2,
                                                                 device=device)]
        width = channels
        for j in range(1, num_layers):
            kernel = kernels[num_layers - 1 - j]
            if j != num_layers - 1:
                layers = [nn.ReLU(), nn.ConvTranspose2d(2 * width, width, kernel, stride=2, device=device), *layers]
                width *= 2
            else:
                layers = [nn.ConvTranspose2d(linear_out, width, kernel, stride=2, device=device), *layers]
        return layers

    def forward(self, state: torch.Tensor, rnn_hidden: torch.Tensor) -> torch.Tensor:
        latent = self.state_to_latent(torch.cat([state, rnn_hidden], dim=-1))
        *batch, d = latent.shape
        pixels = self.decoder(latent.reshape(-1, d, 1, 1))
        return pixels.reshape(*batch, *pixels.shape[1:])


class RSSMPrior(nn.Module):
    """RSSM prior: ``belief' = GRU(ELU(Linear([state, action])), belief)``, ``state' ~ N(mean(belief'), std)``.

    Args:
        action_spec: the action spec (its shape is kept as ``action_shape``).
        hidden_dim: width of the projections (GRU input size).
        rnn_hidden_dim: belief size.
        state_dim: stochastic state size.
        scale_lb: lower bound of the std (softplus + ``scale_lb``).
        action_dim: action size; with it the first layer is a ``Linear``, else lazy.
        device: device of the parameters.

    Returns (forward): ``(prior_mean, prior_std, state, belief)``; ``noise`` replaces the standard normal draw.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> prior = RSSMPrior(Unbounded(2), hidden_dim=8, rnn_hidden_dim=6, state_dim=4, action_dim=2)
        >>> mean, std, state, belief = prior(torch.zeros(3, 4), torch.zeros(3, 6), torch.ones(3, 2))
        >>> state.shape, belief.shape
        (torch.Size([3, 4]), torch.Size([3, 6]))
    """

    def __init__(
        self,
        action_spec: Any,
        hidden_dim: int = 200,
        rnn_hidden_dim: int = 200,
        state_dim: int = 30,
        scale_lb: float = 0.1,
        action_dim: int | None = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim, device=device)
        if action_dim is not None:
            first: nn.Module = nn.Linear(state_dim + action_dim, hidden_dim, device=device)
        else:
            first = nn.LazyLinear(hidden_dim, device=device)
        self.action_state_projector = nn.Sequential(first, nn.ELU())
        self.rnn_to_prior_projector = _gaussian_head(
            # TorchRL 0.14.1 sizes this layer's input hidden_dim, so it fails unless rnn_hidden_dim == hidden_dim
            # (docs/differences.md); the parameter shapes are the same when they are equal.
            nn.Linear(rnn_hidden_dim, hidden_dim, device=device), hidden_dim, state_dim, scale_lb,
            device=device,
        )
        self.state_dim = state_dim
        self.rnn_hidden_dim = rnn_hidden_dim
        self.action_shape = action_spec.shape

    def forward(
        self, state: torch.Tensor, belief: torch.Tensor | None, action: torch.Tensor,
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.action_state_projector(torch.cat([state, action], dim=-1))
        dtype = x.dtype
        # GRUCell accepts one or two dims only; flatten extra batch dims. Run in float32 (bf16 autocast
        # breaks GRUCell on some cuBLAS builds).
        batch = x.shape[:-1]
        flat_x = x.reshape(-1, x.shape[-1]) if x.ndim > 2 else x
        flat_b = belief.reshape(-1, belief.shape[-1]) if belief is not None and belief.ndim > 2 else belief
        with torch.autocast(device_type=x.device.type, enabled=False):
            new_belief = self.rnn(flat_x.float(), flat_b.float() if flat_b is not None else None)
        new_belief = new_belief.to(dtype).reshape(*batch, -1)
        prior_mean, prior_std = self.rnn_to_prior_projector(new_belief)
        return prior_mean, prior_std, _sample(prior_mean, prior_std, noise), new_belief


class RSSMPosterior(nn.Module):
    """RSSM posterior: ``state ~ N(mean, std)`` from ``ELU(Linear([belief, obs_embedding]))``.

    Args:
        hidden_dim: width of the hidden layer.
        state_dim: stochastic state size.
        scale_lb: lower bound of the std.
        rnn_hidden_dim: belief size; with ``obs_embed_dim`` the first layer is a ``Linear``, else lazy.
        obs_embed_dim: size of the encoded observation.
        device: device of the parameters.

    Returns (forward): ``(posterior_mean, posterior_std, state)``.

    Examples:
        >>> post = RSSMPosterior(hidden_dim=8, state_dim=4, rnn_hidden_dim=6, obs_embed_dim=5)
        >>> mean, std, state = post(torch.zeros(3, 6), torch.randn(3, 5))
        >>> state.shape
        torch.Size([3, 4])
    """

    def __init__(
        self,
        hidden_dim: int = 200,
        state_dim: int = 30,
        scale_lb: float = 0.1,
        rnn_hidden_dim: int | None = None,
        obs_embed_dim: int | None = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        if rnn_hidden_dim is not None and obs_embed_dim is not None:
            first: nn.Module = nn.Linear(rnn_hidden_dim + obs_embed_dim, hidden_dim, device=device)
        else:
            first = nn.LazyLinear(hidden_dim, device=device)
        self.obs_rnn_to_post_projector = _gaussian_head(first, hidden_dim, state_dim, scale_lb,
                                                        device=device)
        self.hidden_dim = hidden_dim

    def forward(
        self, belief: torch.Tensor, obs_embedding: torch.Tensor, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, std = self.obs_rnn_to_post_projector(torch.cat([belief, obs_embedding], dim=-1))
        return mean, std, _sample(mean, std, noise)


class RSSMRollout(TensorDictModuleBase):
    """Runs the RSSM prior then posterior along the last (time) dim of a ``[*batch, T]`` tensordict.

    At each step the posterior's ``("next", "state")`` and the prior's ``("next", "belief")`` become the
    ``"state"`` and ``"belief"`` of the next step; the first step reads them from the data (the primer).
    Returns the stack of every step's inputs and outputs.

    Args:
        rssm_prior: TensorDict module of the prior (reads ``"state"``, ``"belief"``, ``"action"``).
        rssm_posterior: TensorDict module of the posterior (writes ``("next", "state")``).
        use_scan: accepted for TorchRL compatibility; the rollout is a Python loop either way (the same
            numbers; ``torch.compile`` unrolls it).
        compile_step: compile the per-step function.
        compile_backend: backend of that compilation.
        compile_mode: mode of that compilation.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Unbounded
        >>> prior = Mod(RSSMPrior(Unbounded(1), hidden_dim=8, rnn_hidden_dim=6, state_dim=4, action_dim=1),
        ...     ["state", "belief", "action"],
        ...     [("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")])
        >>> post = Mod(RSSMPosterior(hidden_dim=8, state_dim=4, rnn_hidden_dim=6, obs_embed_dim=5),
        ...     [("next", "belief"), ("next", "encoded_latents")],
        ...     [("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")])
        >>> data = TensorDict({"state": torch.zeros(2, 7, 4), "belief": torch.zeros(2, 7, 6),
        ...     "action": torch.randn(2, 7, 1), ("next", "encoded_latents"): torch.randn(2, 7, 5)}, [2, 7])
        >>> RSSMRollout(prior, post)(data)["next", "state"].shape
        torch.Size([2, 7, 4])
    """

    def __init__(
        self,
        rssm_prior: TensorDictModuleBase,
        rssm_posterior: TensorDictModuleBase,
        use_scan: bool = False,
        compile_step: bool = False,
        compile_backend: str = "inductor",
        compile_mode: str | None = None,
    ) -> None:
        super().__init__()
        seq = TensorDictSequential(rssm_prior, rssm_posterior)
        self.in_keys = seq.in_keys
        self.out_keys = seq.out_keys
        self.rssm_prior = rssm_prior
        self.rssm_posterior = rssm_posterior
        self.use_scan = use_scan
        self.compile_step = compile_step
        self.compile_backend = compile_backend
        self.compile_mode = compile_mode
        self._compiled_step = None

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.rssm_prior(tensordict)
        self.rssm_posterior(tensordict)
        return tensordict

    def _get_step_fn(self):
        if not self.compile_step:
            return self._step
        if self._compiled_step is None:
            self._compiled_step = torch.compile(self._step, backend=self.compile_backend, mode=self.compile_mode)
        return self._compiled_step

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.ndim < 1:
            raise ValueError("RSSMRollout expects a tensordict with a time dim last, got batch_size []")
        steps = tensordict.exclude(*self.out_keys).unbind(-1)
        # Stack the same entries at every step: the first step's inputs plus the modules' outputs.
        keys = [*steps[0].keys(include_nested=True, leaves_only=True), *self.out_keys]
        step_fn = self._get_step_fn()
        outs = []
        current = steps[0]
        for t in range(len(steps)):
            current = step_fn(current)
            outs.append(current.select(*keys, strict=False))
            if t + 1 < len(steps):
                nxt = steps[t + 1]
                nxt.set("state", current.get(("next", "state")))
                nxt.set("belief", current.get(("next", "belief")))
                current = nxt
        return torch.stack(outs, tensordict.ndim - 1)

# TorchRL 0.14.1 also serves the DreamerV3 RSSM and two-hot helpers from this module path.
from tdrl.modules.models.rssm_v3 import (  # noqa: E402
    RSSMPosteriorV3,
    RSSMPriorV3,
    RSSMRolloutV3,
    RSSMStateEstimatorV3,
)
from tdrl.modules.models.two_hot import (  # noqa: E402
    SymExpTwoHot,
    two_hot_cross_entropy,
    two_hot_decode,
    two_hot_encode,
)

__all__ += [
    "RSSMPosteriorV3",
    "RSSMPriorV3",
    "RSSMRolloutV3",
    "RSSMStateEstimatorV3",
    "SymExpTwoHot",
    "two_hot_cross_entropy",
    "two_hot_decode",
    "two_hot_encode",
]
