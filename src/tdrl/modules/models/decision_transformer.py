"""Decision Transformer networks: a GPT-2 trunk over interleaved (return-to-go, state, action) tokens.

Chen et al., "Decision Transformer: Reinforcement Learning via Sequence Modeling" (2021),
https://arxiv.org/abs/2106.01345; Zheng et al., "Online Decision Transformer" (2022),
https://arxiv.org/abs/2202.05607. The trunk is ``transformers``' ``GPT2Model`` (extra ``llm``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["DTActor", "DecisionTransformer", "OnlineDTActor"]

_HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def _gpt2(config: dict[str, Any]) -> nn.Module:
    """A ``GPT2Model`` built from the DT config (one embedding row: inputs come as embeddings)."""
    if not _HAS_TRANSFORMERS:
        raise ImportError("DecisionTransformer needs transformers: pip install 'tdrl[llm]'")
    import transformers  # noqa: PLC0415 (optional extra `llm`; importing it costs seconds)

    gpt_config = transformers.GPT2Config(
        n_embd=config["n_embd"],
        n_layer=config["n_layer"],
        n_head=config["n_head"],
        n_inner=config["n_inner"],
        activation_function=config["activation"],
        n_positions=config["n_positions"],
        resid_pdrop=config["resid_pdrop"],
        attn_pdrop=config["attn_pdrop"],
        vocab_size=1,
    )
    return transformers.GPT2Model(config=gpt_config)


class DecisionTransformer(nn.Module):
    """GPT-2 over ``(R_1, s_1, a_1, R_2, s_2, a_2, ...)`` tokens; returns the hidden states of the state tokens.

    Each modality has its own linear embedding, the interleaved sequence is layer-normalised and fed to
    ``GPT2Model`` as ``inputs_embeds``. Since attention is causal, the state token of step ``t`` sees
    returns, states and actions before ``t`` and ``R_t, s_t``, never ``a_t``: it predicts the action.

    Args:
        state_dim: observation size.
        action_dim: action size.
        config: a :class:`DecisionTransformer.DTConfig` or a dict with its fields (``n_embd``, ``n_layer``,
            ``n_head``, ``n_inner``, ``activation``, ``n_positions``, ``resid_pdrop``, ``attn_pdrop``);
            ``None`` gives :meth:`default_config`.
        device: where the parameters are created.

    Inputs are ``observation [*B, T, state_dim]``, ``action [*B, T, action_dim]`` and
    ``return_to_go [*B, T, 1]`` (any number of leading batch dimensions); the output is ``[*B, T, n_embd]``.

    Examples:
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=30)
        >>> model = DecisionTransformer(state_dim=4, action_dim=2, config=config)
        >>> model(torch.randn(3, 5, 10, 4), torch.randn(3, 5, 10, 2), torch.randn(3, 5, 10, 1)).shape
        torch.Size([3, 5, 10, 16])
    """

    @dataclass
    class DTConfig:
        """The GPT-2 configuration of a :class:`DecisionTransformer`."""

        n_embd: Any = 256
        n_layer: Any = 4
        n_head: Any = 4
        n_inner: Any = 1024
        activation: Any = "relu"
        n_positions: Any = 1024
        resid_pdrop: Any = 0.1
        attn_pdrop: Any = 0.1

        def __repr__(self) -> str:
            fields = ", ".join(f"{f.name}: {getattr(self, f.name)}" for f in dataclasses.fields(self))
            return f"{type(self).__name__}({fields})"

    @classmethod
    def default_config(cls) -> DecisionTransformer.DTConfig:
        """The default configuration (256 wide, 4 layers, 4 heads)."""
        return cls.DTConfig()

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        config: dict | DecisionTransformer.DTConfig | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        config = _config_dict(config, self.default_config)
        super().__init__()
        with torch.device(device) if device is not None else nullcontext():
            self.state_dim = state_dim
            self.action_dim = action_dim
            self.hidden_size = config["n_embd"]
            self.transformer = _gpt2(config)
            self.embed_return = nn.Linear(1, self.hidden_size)
            self.embed_state = nn.Linear(state_dim, self.hidden_size)
            self.embed_action = nn.Linear(action_dim, self.hidden_size)
            self.embed_ln = nn.LayerNorm(self.hidden_size)

    def forward(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor) -> torch.Tensor:
        """Hidden states of the state tokens, ``[*B, T, n_embd]``."""
        if not observation.shape[:-1] == action.shape[:-1] == return_to_go.shape[:-1]:
            raise ValueError(
                "DecisionTransformer: observation, action and return_to_go must share their leading [*B, T] "
                f"dimensions, got {tuple(observation.shape)}, {tuple(action.shape)}, {tuple(return_to_go.shape)}"
            )
        lead, steps = observation.shape[:-2], observation.shape[-2]
        tokens = torch.stack(
            (self.embed_return(return_to_go), self.embed_state(observation), self.embed_action(action)), dim=-2
        ).reshape(-1, 3 * steps, self.hidden_size)
        hidden = self.transformer(inputs_embeds=self.embed_ln(tokens))["last_hidden_state"]
        return hidden.reshape(*lead, steps, 3, self.hidden_size)[..., 1, :]


def _config_dict(config: Any, default: Any) -> dict[str, Any]:
    if config is None:
        config = default()
    if isinstance(config, DecisionTransformer.DTConfig):
        return dataclasses.asdict(config)
    try:
        return dict(config)
    except (TypeError, ValueError) as err:
        raise TypeError(f"DecisionTransformer: config of type {type(config).__name__} is not supported; "
                        "pass a DecisionTransformer.DTConfig or a dict") from err


def _orthogonal_(layer: nn.Linear) -> nn.Linear:
    nn.init.orthogonal_(layer.weight.data)
    layer.bias.data.fill_(0.0)
    return layer


def _actor_config() -> DecisionTransformer.DTConfig:
    return DecisionTransformer.DTConfig(n_embd=512, n_inner=2048)


class DTActor(nn.Module):
    """Decision Transformer actor: a linear head on the state tokens gives a deterministic action per step.

    Args:
        state_dim: observation size.
        action_dim: action size.
        transformer_config: the :class:`DecisionTransformer` config (``None``: :meth:`default_config`).
        device: where the parameters are created.

    Examples:
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=30)
        >>> model = DTActor(state_dim=4, action_dim=2, transformer_config=config)
        >>> model(torch.randn(8, 10, 4), torch.randn(8, 10, 2), torch.randn(8, 10, 1)).shape
        torch.Size([8, 10, 2])
    """

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        transformer_config: dict | DecisionTransformer.DTConfig | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        config = _config_dict(transformer_config, self.default_config)
        self.transformer = DecisionTransformer(state_dim, action_dim, config=config, device=device)
        self.action_layer = _orthogonal_(nn.Linear(config["n_embd"], action_dim, device=device))

    def forward(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor) -> torch.Tensor:
        """The predicted actions, ``[*B, T, action_dim]``."""
        return self.action_layer(self.transformer(observation, action, return_to_go))

    @classmethod
    def default_config(cls) -> DecisionTransformer.DTConfig:
        """512 wide, 4 layers, 4 heads, 2048 inner (TorchRL's actor default)."""
        return _actor_config()


class OnlineDTActor(nn.Module):
    """Online Decision Transformer actor: Gaussian ``(loc, scale)`` per step, ``log(scale)`` in ``[-5, 2]``.

    Args:
        state_dim: observation size.
        action_dim: action size.
        transformer_config: the :class:`DecisionTransformer` config (``None``: :meth:`default_config`).
        device: where the parameters are created.

    Examples:
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32, n_positions=30)
        >>> model = OnlineDTActor(state_dim=4, action_dim=2, transformer_config=config)
        >>> mu, std = model(torch.randn(8, 10, 4), torch.randn(8, 10, 2), torch.randn(8, 10, 1))
        >>> mu.shape, bool((std > 0).all())
        (torch.Size([8, 10, 2]), True)
    """

    log_std_min: float = -5.0
    log_std_max: float = 2.0

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        transformer_config: dict | DecisionTransformer.DTConfig | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        config = _config_dict(transformer_config, self.default_config)
        self.transformer = DecisionTransformer(state_dim, action_dim, config=config, device=device)
        self.action_layer_mean = _orthogonal_(nn.Linear(config["n_embd"], action_dim, device=device))
        self.action_layer_logstd = _orthogonal_(nn.Linear(config["n_embd"], action_dim, device=device))

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loc, scale)`` of the action distribution, each ``[*B, T, action_dim]``."""
        hidden = self.transformer(observation, action, return_to_go)
        squashed = torch.tanh(self.action_layer_logstd(hidden))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (squashed + 1.0)
        return self.action_layer_mean(hidden), log_std.exp()

    @classmethod
    def default_config(cls) -> DecisionTransformer.DTConfig:
        """512 wide, 4 layers, 4 heads, 2048 inner (TorchRL's actor default)."""
        return _actor_config()
