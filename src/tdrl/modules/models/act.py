"""``ACTModel``: Action Chunking with Transformers, a CVAE whose decoder predicts a chunk of future actions.

Zhao et al., "Learning Fine-Grained Bimanual Manipulation with Low-Cost Hardware" (RSS 2023,
https://arxiv.org/abs/2304.13705). :class:`~tdrl.objectives.ACTLoss` trains it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["ACTModel"]


def sinusoidal_positions(length: int, dim: int) -> Tensor:
    """The ``(length, dim)`` sine/cosine position table of Vaswani et al. (2017): even columns sine, odd cosine.

    Examples:
        >>> sinusoidal_positions(3, 4)[0]
        tensor([0., 1., 0., 1.])
    """
    if dim % 2:
        raise ValueError(f"ACTModel: hidden_dim must be even for sinusoidal positions, got {dim}")
    position = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)
    return table


class ACTModel(nn.Module):
    """The ACT policy network: a Transformer CVAE encoder (training only) and a DETR-style action decoder.

    With ``action_chunk`` the encoder reads ``[CLS, a_0..a_{T-1}, obs]`` (sinusoidal positions) and its CLS
    output gives the posterior ``(mu, log_var)`` from which ``z`` is drawn by reparameterisation; without
    it ``z``, ``mu`` and ``log_var`` are zeros (the prior mean). The decoder's ``chunk_size`` learned queries
    attend to ``[obs, z]`` and a linear head maps them to actions.

    Args:
        obs_dim: size of the (proprioceptive) observation.
        action_dim: size of one action.
        chunk_size: actions predicted per call (``T``).
        hidden_dim: Transformer width (even).
        nheads: attention heads.
        num_encoder_layers: CVAE encoder depth.
        num_decoder_layers: action decoder depth.
        latent_dim: size of the style latent ``z``.
        dropout: dropout of every Transformer layer.
        dim_feedforward: feed-forward width of every layer (``4 * hidden_dim`` by default).

    Returns (``forward``):
        ``(action_pred [..., T, action_dim], mu [..., latent_dim], log_var [..., latent_dim])``.

    Examples:
        >>> model = ACTModel(obs_dim=3, action_dim=2, chunk_size=4, hidden_dim=8, nheads=2,
        ...                  num_encoder_layers=1, num_decoder_layers=1, latent_dim=4)
        >>> pred, mu, log_var = model(torch.randn(5, 3), torch.randn(5, 4, 2))
        >>> pred.shape, mu.shape
        (torch.Size([5, 4, 2]), torch.Size([5, 4]))
        >>> bool(model(torch.randn(5, 3))[1].eq(0).all())
        True
    """

    enc_pos: Tensor

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        chunk_size: int,
        hidden_dim: int = 256,
        nheads: int = 8,
        num_encoder_layers: int = 4,
        num_decoder_layers: int = 7,
        latent_dim: int = 32,
        dropout: float = 0.1,
        dim_feedforward: int | None = None,
    ) -> None:
        super().__init__()
        self.obs_dim, self.action_dim, self.chunk_size = obs_dim, action_dim, chunk_size
        self.hidden_dim, self.latent_dim = hidden_dim, latent_dim
        ffn = 4 * hidden_dim if dim_feedforward is None else dim_feedforward
        layer_kwargs = dict(d_model=hidden_dim, nhead=nheads, dim_feedforward=ffn, dropout=dropout, batch_first=True)
        self.obs_proj = nn.Linear(obs_dim, hidden_dim)
        self.cls_embed = nn.Embedding(1, hidden_dim)
        self.action_proj = nn.Linear(action_dim, hidden_dim)
        self.cvae_encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**layer_kwargs), num_layers=num_encoder_layers  # type: ignore[arg-type]
        )
        # One position per encoder token: CLS, the T actions and the observation.
        self.register_buffer("enc_pos", sinusoidal_positions(chunk_size + 2, hidden_dim), persistent=False)
        self.latent_proj = nn.Linear(hidden_dim, 2 * latent_dim)
        self.latent_out_proj = nn.Linear(latent_dim, hidden_dim)
        self.action_queries = nn.Embedding(chunk_size, hidden_dim)
        self.transformer_decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**layer_kwargs), num_layers=num_decoder_layers  # type: ignore[arg-type]
        )
        self.action_head = nn.Linear(hidden_dim, action_dim)

    def _posterior(self, obs_tok: Tensor, chunk: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        n = obs_tok.shape[0]
        tokens = torch.cat([self.cls_embed.weight.expand(n, 1, -1), self.action_proj(chunk), obs_tok], dim=1)
        cls = self.cvae_encoder(tokens + self.enc_pos[: tokens.shape[1]])[:, 0]
        mu, log_var = self.latent_proj(cls).chunk(2, dim=-1)
        z = mu + (0.5 * log_var).exp() * torch.randn_like(mu)
        return z, mu, log_var

    def forward(self, observation: Tensor, action_chunk: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Predicts an action chunk; ``action_chunk`` (training) turns the CVAE encoder on."""
        if observation.shape[-1] != self.obs_dim:
            raise ValueError(f"ACTModel: observation's last dim is {observation.shape[-1]}, expected {self.obs_dim}")
        batch = observation.shape[:-1]
        n = math.prod(batch)
        obs_tok = self.obs_proj(observation.reshape(n, self.obs_dim)).unsqueeze(1)
        if action_chunk is not None:
            if action_chunk.shape[-2:] != (self.chunk_size, self.action_dim):
                raise ValueError(
                    f"ACTModel: action_chunk ends with {tuple(action_chunk.shape[-2:])}, expected "
                    f"(chunk_size, action_dim) = {(self.chunk_size, self.action_dim)}"
                )
            z, mu, log_var = self._posterior(obs_tok, action_chunk.reshape(n, self.chunk_size, self.action_dim))
        else:
            # Three separate zero tensors: a caller writing into one must not change the others.
            z, mu, log_var = (obs_tok.new_zeros(n, self.latent_dim) for _ in range(3))
        memory = torch.cat([obs_tok, self.latent_out_proj(z).unsqueeze(1)], dim=1)
        decoded = self.transformer_decoder(self.action_queries.weight.expand(n, -1, -1), memory)
        pred = self.action_head(decoded).reshape(*batch, self.chunk_size, self.action_dim)
        return pred, mu.reshape(*batch, self.latent_dim), log_var.reshape(*batch, self.latent_dim)
