"""DreamerV3 building blocks: RMS-normalised layers, the block-diagonal GRU, the MLP heads and the image codec.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
Parameter names and layouts follow TorchRL 0.14.1 so state dicts load across the two libraries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "DreamerV3BlockGRU",
    "DreamerV3BlockGRUCell",
    "DreamerV3ImageDecoder",
    "DreamerV3ImageEncoder",
    "DreamerV3MLP",
]

# Truncated-normal scale of the reference implementation (a unit-variance output for unit-variance input).
_INIT_SCALE = 1.1368


def _trunc_normal(weight: torch.Tensor, fan_in: int) -> None:
    std = _INIT_SCALE / fan_in**0.5
    nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


def dreamer_v3_init(module: nn.Module) -> None:
    """Fan-in truncated-normal weights and zero biases on ``nn.Linear`` and (transposed) convolutions."""
    if isinstance(module, nn.Linear):
        fan_in = module.in_features
    elif isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
        fan_in = module.in_channels * module.kernel_size[0] * module.kernel_size[1]
    else:
        return
    _trunc_normal(module.weight, fan_in)
    if module.bias is not None:
        nn.init.zeros_(module.bias)


def rms_norm(value: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS normalisation over the last dim, computed in float32 and cast back to ``value``'s dtype."""
    return F.rms_norm(value.float(), (weight.shape[0],), weight.float(), eps).to(value.dtype)


class RMSNorm(nn.Module):
    """RMS normalisation with a learned scale (``weight``) and no shift."""

    def __init__(self, features: int, eps: float = 1e-4, device: torch.device | str | None = None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features, device=device))

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return rms_norm(value, self.weight, self.eps)


class ChannelRMSNorm(RMSNorm):
    """:class:`RMSNorm` over the channel dim of ``[..., C, H, W]`` feature maps."""

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return rms_norm(value.movedim(-3, -1), self.weight, self.eps).movedim(-1, -3)


class BlockLinear(nn.Module):
    """``num_blocks`` independent linear maps over equal slices of the features (weight ``[G, in/G, out/G]``)."""

    def __init__(self, in_features: int, out_features: int, num_blocks: int, *,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        if in_features % num_blocks or out_features % num_blocks:
            raise ValueError(
                f"in_features ({in_features}) and out_features ({out_features}) must be divisible by "
                f"num_blocks ({num_blocks})"
            )
        self.in_features, self.out_features, self.num_blocks = in_features, out_features, num_blocks
        self.weight = nn.Parameter(torch.empty(num_blocks, in_features // num_blocks, out_features // num_blocks,
                                               device=device))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device))
        # The reference scales by the full input width, not the block's.
        _trunc_normal(self.weight, in_features)

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        lead = value.shape[:-1]
        blocks = value.reshape(-1, self.num_blocks, self.in_features // self.num_blocks).transpose(0, 1)
        out = torch.bmm(blocks, self.weight.to(value.dtype)).transpose(0, 1)
        return out.reshape(*lead, self.out_features) + self.bias.to(value.dtype)


def _norm_silu(in_features: int, out_features: int, eps: float, device) -> list[nn.Module]:
    return [nn.Linear(in_features, out_features, device=device), RMSNorm(out_features, eps, device=device), nn.SiLU()]


def block_gru_update(features: torch.Tensor, hidden: torch.Tensor, dynamics: Callable[[torch.Tensor], torch.Tensor],
                     gates: BlockLinear, num_blocks: int, update_bias: float) -> torch.Tensor:
    """One block-GRU step: each block sees its own hidden slice and all of ``features``; gates per block."""
    size = hidden.shape[-1]
    grouped = hidden.reshape(*hidden.shape[:-1], num_blocks, size // num_blocks)
    shared = features.unsqueeze(-2).expand(*features.shape[:-1], num_blocks, features.shape[-1])
    mixed = dynamics(torch.cat([grouped, shared], -1).flatten(-2))
    reset, cand, update = gates(mixed).reshape(*mixed.shape[:-1], num_blocks, 3, size // num_blocks).unbind(-2)
    cand = (reset.flatten(-2).sigmoid() * cand.flatten(-2)).tanh()
    update = (update.flatten(-2) + update_bias).sigmoid()
    return update * cand + (1 - update) * hidden


class _RSSMBlockGRU(nn.Module):
    """The recurrent core of :class:`~tdrl.modules.RSSMPriorV3` with ``recurrent_model="block_gru"``."""

    def __init__(self, *, state_dim: int, action_dim: int, hidden_dim: int, belief_dim: int, num_blocks: int,
                 num_layers: int, norm_eps: float, device=None) -> None:
        super().__init__()
        if belief_dim % num_blocks:
            raise ValueError(f"rnn_hidden_dim ({belief_dim}) must be divisible by num_blocks ({num_blocks})")
        self.belief_dim, self.num_blocks = belief_dim, num_blocks
        self.belief_projection = nn.Sequential(*_norm_silu(belief_dim, hidden_dim, norm_eps, device))
        self.state_projection = nn.Sequential(*_norm_silu(state_dim, hidden_dim, norm_eps, device))
        self.action_projection = nn.Sequential(*_norm_silu(action_dim, hidden_dim, norm_eps, device))
        layers: list[nn.Module] = []
        width = belief_dim + 3 * hidden_dim * num_blocks
        for _ in range(num_layers):
            layers += [BlockLinear(width, belief_dim, num_blocks, device=device), RMSNorm(belief_dim, norm_eps, device),
                       nn.SiLU()]
            width = belief_dim
        self.hidden_layers = nn.Sequential(*layers)
        self.gates = BlockLinear(belief_dim, 3 * belief_dim, num_blocks, device=device)
        self.apply(dreamer_v3_init)

    def forward(self, state: torch.Tensor, belief: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        # Actions are squashed to [-1, 1] by their (stopped) magnitude, as in the reference.
        action = action / action.detach().abs().clamp_min(1)
        features = torch.cat(
            [self.belief_projection(belief), self.state_projection(state), self.action_projection(action)], -1
        )
        return block_gru_update(features, belief, self.hidden_layers, self.gates, self.num_blocks, -1.0)


class DreamerV3BlockGRUCell(nn.Module):
    """One step of DreamerV3's block-diagonal GRU.

    The input and the hidden state are projected (linear, RMS norm, activation) to ``projection_size``; every
    one of the ``num_blocks`` blocks then mixes its hidden slice with both projections through
    ``num_layers`` block-linear layers and computes its reset, candidate and update gates.

    Args:
        input_size: input features.
        hidden_size: hidden-state width (divisible by ``num_blocks``).

    Keyword Args:
        projection_size: width of the input and hidden projections (default 512).
        num_blocks: independent recurrent blocks (default 8).
        num_layers: block-linear dynamics layers (default 1).
        activation_class: parameter-free elementwise activation, a class or a callable (default ``nn.SiLU``).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        update_bias: offset added to the update-gate logit (default ``-1.0``).
        device: parameter device.

    Examples:
        >>> cell = DreamerV3BlockGRUCell(6, 8, projection_size=4, num_blocks=2)
        >>> cell(torch.randn(3, 6), torch.zeros(3, 8)).shape
        torch.Size([3, 8])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        projection_size: int = 512,
        num_blocks: int = 8,
        num_layers: int = 1,
        activation_class: type[nn.Module] | Callable = nn.SiLU,
        norm_eps: float = 1e-4,
        update_bias: float = -1.0,
        device: torch.device | str | int | None = None,
    ) -> None:
        super().__init__()
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be positive, got {num_blocks}")
        if hidden_size % num_blocks:
            raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_blocks ({num_blocks})")
        if num_layers < 1:
            raise ValueError(f"num_layers must be positive, got {num_layers}")
        activation = activation_class() if isinstance(activation_class, type) else activation_class
        if not callable(activation):
            raise TypeError(f"activation_class must build a callable activation, got {activation!r}")
        if isinstance(activation, nn.Module) and next(activation.parameters(), None) is not None:
            raise ValueError("activation_class must not have learnable parameters")
        self.input_size, self.hidden_size, self.projection_size = input_size, hidden_size, projection_size
        self.num_blocks, self.num_layers = num_blocks, num_layers
        self.norm_eps, self.update_bias, self.activation = norm_eps, update_bias, activation
        self.input_linear = nn.Linear(input_size, projection_size, device=device)
        self.input_norm = RMSNorm(projection_size, norm_eps, device=device)
        self.hidden_linear = nn.Linear(hidden_size, projection_size, device=device)
        self.hidden_norm = RMSNorm(projection_size, norm_eps, device=device)
        self.dynamic_linears = nn.ModuleList(
            BlockLinear(hidden_size + 2 * projection_size * num_blocks if i == 0 else hidden_size, hidden_size,
                        num_blocks, device=device)
            for i in range(num_layers)
        )
        self.dynamic_norms = nn.ModuleList(RMSNorm(hidden_size, norm_eps, device=device) for _ in range(num_layers))
        self.gates = BlockLinear(hidden_size, 3 * hidden_size, num_blocks, device=device)
        self.apply(dreamer_v3_init)

    def _dynamics(self, value: torch.Tensor) -> torch.Tensor:
        for linear, norm in zip(self.dynamic_linears, self.dynamic_norms):
            value = self.activation(norm(linear(value)))
        return value

    def _linear_norm_act(self, value: torch.Tensor, linear: nn.Linear, norm: RMSNorm) -> torch.Tensor:
        # Parameters stay float32; the projection runs in the activation dtype.
        out = F.linear(value, linear.weight.to(value.dtype), linear.bias.to(value.dtype))
        return self.activation(rms_norm(out, norm.weight, self.norm_eps))

    def project_input(self, value: torch.Tensor) -> torch.Tensor:
        """The input projection (computed once per sequence by :class:`DreamerV3BlockGRU`)."""
        return self._linear_norm_act(value, self.input_linear, self.input_norm)

    def step_projected(self, projected: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """One recurrent step from an already projected input."""
        features = torch.cat((projected, self._linear_norm_act(hidden, self.hidden_linear, self.hidden_norm)), -1)
        return block_gru_update(features, hidden, self._dynamics, self.gates, self.num_blocks, self.update_bias)

    def forward(self, input: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        if input.shape[-1] != self.input_size:
            raise ValueError(f"input.size(-1) must be {self.input_size}, got {input.shape[-1]}")
        if hidden is None:
            hidden = input.new_zeros(*input.shape[:-1], self.hidden_size)
        if hidden.shape != (*input.shape[:-1], self.hidden_size):
            raise ValueError(
                f"hidden must have shape {(*input.shape[:-1], self.hidden_size)} (input batch, hidden_size), "
                f"got {tuple(hidden.shape)}"
            )
        return self.step_projected(self.project_input(input), hidden)


class DreamerV3BlockGRU(nn.Module):
    """DreamerV3's block-diagonal GRU over a batch-major ``[batch, time, input_size]`` sequence.

    ``is_init`` (``[batch, time]`` or ``[batch, time, 1]``, bool) zeroes the carry before the marked steps.
    Every ``recurrent_backend`` computes the same recurrence with ordinary autograd (tdrl ships no custom
    scan or Triton kernel: docs/differences.md), so all of them support double backward.

    Args:
        input_size: input features.
        hidden_size: hidden-state width.

    Keyword Args:
        projection_size, num_blocks, num_layers, activation_class, norm_eps, update_bias, device: as in
            :class:`DreamerV3BlockGRUCell`.
        recurrent_backend: ``"reference"`` (default), ``"scan"`` or ``"triton"``.

    Examples:
        >>> gru = DreamerV3BlockGRU(6, 8, projection_size=4, num_blocks=2)
        >>> output, hidden = gru(torch.randn(3, 5, 6))
        >>> output.shape, hidden.shape
        (torch.Size([3, 5, 8]), torch.Size([3, 8]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        projection_size: int = 512,
        num_blocks: int = 8,
        num_layers: int = 1,
        activation_class: type[nn.Module] | Callable = nn.SiLU,
        norm_eps: float = 1e-4,
        update_bias: float = -1.0,
        recurrent_backend: Literal["reference", "scan", "triton"] = "reference",
        device: torch.device | str | int | None = None,
    ) -> None:
        super().__init__()
        if recurrent_backend not in ("reference", "scan", "triton"):
            raise ValueError(f"recurrent_backend must be 'reference', 'scan' or 'triton', got {recurrent_backend!r}")
        self.cell = DreamerV3BlockGRUCell(
            input_size, hidden_size, projection_size=projection_size, num_blocks=num_blocks, num_layers=num_layers,
            activation_class=activation_class, norm_eps=norm_eps, update_bias=update_bias, device=device,
        )
        self.recurrent_backend = recurrent_backend

    def forward(self, input: torch.Tensor, hidden: torch.Tensor | None = None,
                is_init: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if input.ndim != 3 or input.shape[-1] != self.cell.input_size:
            raise ValueError(f"input must have shape [batch, time, {self.cell.input_size}], got {tuple(input.shape)}")
        batch, time, _ = input.shape
        if time == 0:
            raise ValueError("input must contain at least one timestep")
        if hidden is None:
            hidden = input.new_zeros(batch, self.cell.hidden_size)
        if hidden.shape != (batch, self.cell.hidden_size):
            raise ValueError(f"hidden must have shape {(batch, self.cell.hidden_size)}, got {tuple(hidden.shape)}")
        if is_init is None:
            is_init = torch.zeros(batch, time, dtype=torch.bool, device=input.device)
        elif is_init.ndim == 3 and is_init.shape[-1] == 1:
            is_init = is_init.squeeze(-1)
        if is_init.shape != (batch, time) or is_init.dtype is not torch.bool:
            raise ValueError(f"is_init must be a bool tensor of shape {(batch, time)} or {(batch, time, 1)}, got "
                             f"{tuple(is_init.shape)} {is_init.dtype}")
        projected = self.cell.project_input(input.flatten(0, 1)).unflatten(0, (batch, time))
        outputs = []
        for x_t, init_t in zip(projected.unbind(1), is_init.unbind(1)):
            hidden = self.cell.step_projected(x_t, torch.where(init_t.unsqueeze(-1), 0, hidden))
            outputs.append(hidden)
        return torch.stack(outputs, 1), hidden


class DreamerV3MLP(nn.Module):
    """DreamerV3's head: ``depth`` x (linear, RMS norm, SiLU), then an optional linear output.

    Several inputs are concatenated along the last dim.

    Args:
        in_features: input features (after concatenation).
        out_features: output features, or ``None`` to return the last hidden activation.
        depth: hidden layers (default 3).
        num_cells: hidden width (default 1024).
        outscale: factor on the output layer's initial weights (default 1.0).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        device: parameter device.

    Examples:
        >>> module = DreamerV3MLP(6, 4, depth=2, num_cells=8)
        >>> module(torch.randn(3, 2), torch.randn(3, 4)).shape
        torch.Size([3, 4])
    """

    def __init__(self, in_features: int, out_features: int | None, depth: int = 3, num_cells: int = 1024,
                 outscale: float = 1.0, norm_eps: float = 1e-4, device: torch.device | str | None = None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(depth):
            layers += _norm_silu(width, num_cells, norm_eps, device)
            width = num_cells
        head = nn.Linear(width, out_features, device=device) if out_features is not None else None
        if head is not None:
            layers.append(head)
        self.model = nn.Sequential(*layers)
        self.model.apply(dreamer_v3_init)
        if head is not None:
            with torch.no_grad():
                head.weight.mul_(outscale)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(inputs[0] if len(inputs) == 1 else torch.cat(inputs, -1))


def _check_conv_args(kernel_size: int, mults: tuple[int, ...]) -> None:
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size}")
    if not mults:
        raise ValueError("mults must contain at least one stage")


class DreamerV3ImageEncoder(nn.Module):
    """DreamerV3's image encoder: stride-2 convolutions, each followed by a channel RMS norm and SiLU.

    Images are ``[*batch, C, H, W]``, ``uint8`` in ``[0, 255]`` or float in ``[0, 1]``, shifted to
    ``[-0.5, 0.5]``; the output is the flattened last feature map.

    Args:
        in_channels: image channels (default 3).
        depth: base channels; stage ``i`` has ``depth * mults[i]`` (default 64).
        mults: channel multiplier per stage (default ``(2, 3, 4, 4)``).
        kernel_size: odd kernel size (default 5).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        device: parameter device.

    Examples:
        >>> encoder = DreamerV3ImageEncoder(depth=8, mults=(1, 2))
        >>> encoder(torch.randint(0, 256, (4, 3, 16, 16), dtype=torch.uint8)).shape
        torch.Size([4, 256])
        >>> encoder.output_features((3, 16, 16))
        256
    """

    def __init__(self, in_channels: int = 3, depth: int = 64, mults: tuple[int, ...] = (2, 3, 4, 4),
                 kernel_size: int = 5, norm_eps: float = 1e-4, device: torch.device | str | None = None) -> None:
        super().__init__()
        _check_conv_args(kernel_size, mults)
        layers: list[nn.Module] = []
        channels = in_channels
        for mult in mults:
            layers += [
                nn.Conv2d(channels, depth * mult, kernel_size, stride=2, padding=kernel_size // 2, device=device),
                ChannelRMSNorm(depth * mult, norm_eps, device=device),
                nn.SiLU(),
            ]
            channels = depth * mult
        self.layers = nn.Sequential(*layers)
        self.layers.apply(dreamer_v3_init)
        self.out_channels, self.num_stages = channels, len(mults)

    def output_features(self, image_shape: tuple[int, int, int]) -> int:
        """Flattened output size for a ``(C, H, W)`` image."""
        _, height, width = image_shape
        for _ in range(self.num_stages):
            height, width = -(-height // 2), -(-width // 2)
        return self.out_channels * height * width

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        if image.ndim < 3:
            raise ValueError(f"image must be [*batch, C, H, W], got shape {tuple(image.shape)}")
        if not image.is_floating_point():
            image = image.float() / 255.0
        lead = image.shape[:-3]
        features = self.layers(image.reshape(-1, *image.shape[-3:]) - 0.5)
        return features.reshape(*lead, -1)


class DreamerV3ImageDecoder(nn.Module):
    """DreamerV3's image decoder: a (block-)linear map to the smallest feature map, then stride-2 transposed
    convolutions (channel RMS norm and SiLU between them); the output is shifted by ``0.5`` (unbounded).

    Args:
        in_features: latent features (e.g. state and belief concatenated; several inputs are concatenated).
        image_shape: decoded ``(C, H, W)``; ``H`` and ``W`` divisible by ``2 ** len(mults)`` (default
            ``(3, 64, 64)``).
        depth: base channels, mirroring the encoder (default 64).
        mults: the encoder's channel multipliers (default ``(2, 3, 4, 4)``).
        kernel_size: odd kernel size (default 5).
        num_blocks: blocks of the input projection; ``1`` uses a dense linear layer (default 8).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        device: parameter device.

    Examples:
        >>> decoder = DreamerV3ImageDecoder(12, image_shape=(3, 16, 16), depth=8, mults=(1, 2), num_blocks=2)
        >>> decoder(torch.randn(4, 8), torch.randn(4, 4)).shape
        torch.Size([4, 3, 16, 16])
    """

    def __init__(self, in_features: int, image_shape: tuple[int, int, int] = (3, 64, 64), depth: int = 64,
                 mults: tuple[int, ...] = (2, 3, 4, 4), kernel_size: int = 5, num_blocks: int = 8,
                 norm_eps: float = 1e-4, device: torch.device | str | None = None) -> None:
        super().__init__()
        _check_conv_args(kernel_size, mults)
        channels, height, width = image_shape
        factor = 2 ** len(mults)
        if height % factor or width % factor:
            raise ValueError(f"image height and width {tuple(image_shape[1:])} must be divisible by "
                             f"2 ** len(mults) = {factor}")
        first = depth * mults[-1]
        self.initial_shape = (first, height // factor, width // factor)
        size = math.prod(self.initial_shape)
        self.projection: nn.Module
        if num_blocks > 1:
            self.projection = BlockLinear(in_features, size, num_blocks, device=device)
        else:
            self.projection = nn.Linear(in_features, size, device=device)
            dreamer_v3_init(self.projection)
        self.projection_norm = ChannelRMSNorm(first, norm_eps, device=device)
        layers: list[nn.Module] = []
        in_channels = first
        for stage in reversed(range(len(mults))):
            out_channels = channels if stage == 0 else depth * mults[stage - 1]
            layers.append(nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2,
                                             padding=kernel_size // 2, output_padding=1, device=device))
            if stage:
                layers += [ChannelRMSNorm(out_channels, norm_eps, device=device), nn.SiLU()]
            in_channels = out_channels
        self.layers = nn.Sequential(*layers)
        self.layers.apply(dreamer_v3_init)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        value = inputs[0] if len(inputs) == 1 else torch.cat(inputs, -1)
        lead = value.shape[:-1]
        hidden = self.projection(value.reshape(-1, value.shape[-1])).reshape(-1, *self.initial_shape)
        image = self.layers(F.silu(self.projection_norm(hidden))) + 0.5
        return image.reshape(*lead, *image.shape[-3:])
