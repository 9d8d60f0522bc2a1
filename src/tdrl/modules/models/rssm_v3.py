"""DreamerV3's RSSM with discrete latents: prior, posterior, acting-time state estimator and sequence rollout.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
The stochastic state is ``num_categoricals`` one-hot vectors of ``num_classes``, sampled with straight-through
gradients. Random draws follow TorchRL 0.14.1's order, so a seeded run samples the same states.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential
from tensordict.utils import NestedKey, unravel_key
from torch import nn

from tdrl.modules.models.dreamer_v3 import RMSNorm, _RSSMBlockGRU, dreamer_v3_init
from tdrl.modules.models.two_hot import unimix_probs

__all__ = ["RSSMPosteriorV3", "RSSMPriorV3", "RSSMRolloutV3", "RSSMStateEstimatorV3", "straight_through_categorical"]


def straight_through_categorical(logits: torch.Tensor, unimix: float = 0.0,
                                 uniform: torch.Tensor | None = None) -> torch.Tensor:
    """A one-hot sample of each categorical of ``logits`` (``[..., C, K]``) whose gradient is the probabilities'.

    ``uniform`` (``[..., C]``) supplies the inverse-CDF draws; by default they are drawn here.
    """
    probs = unimix_probs(logits, unimix)
    if uniform is None:
        uniform = torch.rand(probs.shape[:-1], device=probs.device)
    index = (uniform.unsqueeze(-1) > probs.cumsum(-1)).sum(-1).clamp_max(probs.shape[-1] - 1)
    one_hot = torch.zeros_like(probs).scatter_(-1, index.unsqueeze(-1), 1.0)
    return probs + (one_hot - probs).detach()


def _mlp_norm(in_features: int, hidden: int, out_features: int, layers: int, eps: float, device,
              first: nn.Linear | None = None) -> nn.Sequential:
    mods: list[nn.Module] = []
    width = in_features
    for i in range(layers):
        linear = first if i == 0 and first is not None else nn.Linear(width, hidden, device=device)
        mods += [linear, RMSNorm(hidden, eps, device=device), nn.SiLU()]
        width = hidden
    mods.append(nn.Linear(width, out_features, device=device))
    seq = nn.Sequential(*mods)
    seq.apply(dreamer_v3_init)
    return seq


class RSSMPriorV3(nn.Module):
    """DreamerV3's sequence model and dynamics predictor: ``h_t = f(h_{t-1}, z_{t-1}, a_{t-1})``,
    ``z_hat_t ~ Cat(MLP(h_t))``.

    Args:
        action_spec: read only for its shape (exclusive with ``action_shape``).
        hidden_dim: projector width (default 512).
        rnn_hidden_dim: belief width (default 512).
        num_categoricals: categoricals in the latent (default 32).
        num_classes: classes per categorical (default 32).
        action_dim: action features; ``None`` uses a lazy first layer (``"gru"`` only).
        device: parameter device.

    Keyword Args:
        action_shape: action shape (exclusive with ``action_spec``).
        recurrent_model: ``"gru"`` (TorchRL's historical ``GRUCell`` core, default) or ``"block_gru"``
            (DreamerV3's RMS-normalised block GRU; needs ``action_dim``).
        num_blocks: block-GRU groups (default 8).
        num_layers: block-linear dynamics layers (default 1).
        prior_num_layers: predictor layers in ``"block_gru"`` mode (default 2).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        unimix: uniform fraction mixed into the sampled categoricals (default 0).

    Examples:
        >>> prior = RSSMPriorV3(action_shape=(2,), hidden_dim=16, rnn_hidden_dim=8, num_categoricals=4,
        ...                     num_classes=4, action_dim=2)
        >>> logits, state, belief = prior(torch.zeros(3, 16), torch.zeros(3, 8), torch.randn(3, 2))
        >>> logits.shape, state.shape, belief.shape
        (torch.Size([3, 4, 4]), torch.Size([3, 16]), torch.Size([3, 8]))
    """

    def __init__(
        self,
        action_spec: Any = None,
        hidden_dim: int = 512,
        rnn_hidden_dim: int = 512,
        num_categoricals: int = 32,
        num_classes: int = 32,
        action_dim: int | None = None,
        device: torch.device | str | None = None,
        *,
        action_shape: torch.Size | tuple[int, ...] | None = None,
        recurrent_model: Literal["gru", "block_gru"] = "gru",
        num_blocks: int = 8,
        num_layers: int = 1,
        prior_num_layers: int = 2,
        norm_eps: float = 1e-4,
        unimix: float = 0.0,
    ) -> None:
        super().__init__()
        if action_spec is not None and action_shape is not None:
            raise ValueError("pass only one of action_spec or action_shape")
        shape = action_spec.shape if action_spec is not None else action_shape
        self.action_shape = torch.Size(shape) if shape is not None else None
        if not 0 <= unimix < 1:
            raise ValueError(f"unimix must be in [0, 1), got {unimix}")
        if recurrent_model not in ("gru", "block_gru"):
            raise ValueError(f"recurrent_model must be 'gru' or 'block_gru', got {recurrent_model!r}")
        if recurrent_model == "block_gru" and action_dim is None:
            raise ValueError("recurrent_model='block_gru' needs an explicit action_dim")
        self.num_categoricals, self.num_classes, self.rnn_hidden_dim = num_categoricals, num_classes, rnn_hidden_dim
        self.unimix, self.recurrent_model = unimix, recurrent_model
        state_dim = num_categoricals * num_classes
        self.rnn: nn.Module
        self.action_state_projector: nn.Module | None
        if recurrent_model == "block_gru":
            assert action_dim is not None
            self.rnn = _RSSMBlockGRU(state_dim=state_dim, action_dim=action_dim, hidden_dim=hidden_dim,
                                     belief_dim=rnn_hidden_dim, num_blocks=num_blocks, num_layers=num_layers,
                                     norm_eps=norm_eps, device=device)
            self.rnn_to_prior_projector = _mlp_norm(rnn_hidden_dim, hidden_dim, state_dim, prior_num_layers,
                                                    norm_eps, device)
            self.action_state_projector = None
        else:
            self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim, device=device)
            first = (nn.Linear(state_dim + action_dim, hidden_dim, device=device) if action_dim is not None
                     else nn.LazyLinear(hidden_dim, device=device))
            self.action_state_projector = nn.Sequential(first, nn.SiLU())
            self.rnn_to_prior_projector = nn.Sequential(
                nn.Linear(rnn_hidden_dim, hidden_dim, device=device), nn.SiLU(),
                nn.Linear(hidden_dim, state_dim, device=device),
            )

    def forward(self, state: torch.Tensor, belief: torch.Tensor, action: torch.Tensor, *,
                _uniform: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns the prior logits ``[..., C, K]``, a sampled state ``[..., C * K]`` and the new belief."""
        logits, belief = self.belief_and_logits(state, belief, action)
        sample = straight_through_categorical(logits, self.unimix, uniform=_uniform)
        return logits, sample.flatten(-2), belief

    def belief_and_logits(self, state: torch.Tensor, belief: torch.Tensor,
                          action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The prior logits and the new belief, without sampling."""
        belief = self.update_belief(state, belief, action)
        logits = self.rnn_to_prior_projector(belief)
        return logits.unflatten(-1, (self.num_categoricals, self.num_classes)), belief

    def update_belief(self, state: torch.Tensor, belief: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Advances the deterministic state only (acting never needs the prior head)."""
        if not action.is_floating_point():
            action = action.to(belief.dtype)
        if self.action_state_projector is None:
            return self.rnn(state, belief, action)
        projected = self.action_state_projector(torch.cat([state, action], dim=-1))
        # GRUCell in float32: under autocast cuBLAS may not dispatch the half-precision cell.
        with torch.autocast(device_type=projected.device.type, enabled=False):
            new = self.rnn(projected.float(), belief.float())
        return new.to(projected.dtype)


class RSSMPosteriorV3(nn.Module):
    """DreamerV3's representation model: ``z_t ~ Cat(MLP([h_t, e_t]))`` from the belief and an embedding.

    Args:
        hidden_dim: projector width (default 512).
        num_categoricals: categoricals (default 32).
        num_classes: classes per categorical (default 32).
        rnn_hidden_dim: belief width; with ``obs_embed_dim``, the first layer is an explicit ``nn.Linear``
            (lazy otherwise).
        obs_embed_dim: embedding width.
        device: parameter device.

    Keyword Args:
        use_rms_norm: RMS-normalised layers (DreamerV3) instead of TorchRL's historical Linear-SiLU-Linear
            (default ``False``); needs both widths.
        num_layers: hidden layers with ``use_rms_norm`` (default 1).
        norm_eps: RMS-norm epsilon (default ``1e-4``).
        unimix: uniform fraction mixed into the samples (default 0).

    Examples:
        >>> posterior = RSSMPosteriorV3(hidden_dim=16, num_categoricals=4, num_classes=4, rnn_hidden_dim=8,
        ...                             obs_embed_dim=12)
        >>> logits, state = posterior(torch.randn(3, 8), torch.randn(3, 12))
        >>> logits.shape, state.shape
        (torch.Size([3, 4, 4]), torch.Size([3, 16]))
    """

    def __init__(
        self,
        hidden_dim: int = 512,
        num_categoricals: int = 32,
        num_classes: int = 32,
        rnn_hidden_dim: int | None = None,
        obs_embed_dim: int | None = None,
        device: torch.device | str | None = None,
        *,
        use_rms_norm: bool = False,
        num_layers: int = 1,
        norm_eps: float = 1e-4,
        unimix: float = 0.0,
    ) -> None:
        super().__init__()
        if not 0 <= unimix < 1:
            raise ValueError(f"unimix must be in [0, 1), got {unimix}")
        self.num_categoricals, self.num_classes, self.unimix = num_categoricals, num_classes, unimix
        explicit = rnn_hidden_dim is not None and obs_embed_dim is not None
        if use_rms_norm and not explicit:
            raise ValueError("use_rms_norm=True needs explicit rnn_hidden_dim and obs_embed_dim")
        width = (rnn_hidden_dim or 0) + (obs_embed_dim or 0)
        first = nn.Linear(width, hidden_dim, device=device) if explicit else nn.LazyLinear(hidden_dim, device=device)
        out = num_categoricals * num_classes
        if use_rms_norm:
            self.obs_rnn_to_post_projector = _mlp_norm(width, hidden_dim, out, num_layers, norm_eps, device, first)
        else:
            self.obs_rnn_to_post_projector = nn.Sequential(first, nn.SiLU(),
                                                           nn.Linear(hidden_dim, out, device=device))

    def forward(self, belief: torch.Tensor, obs_embedding: torch.Tensor, *,
                _uniform: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns the posterior logits ``[..., C, K]`` and a sampled state ``[..., C * K]``."""
        logits = self.logits(belief, obs_embedding)
        return logits, straight_through_categorical(logits, self.unimix, uniform=_uniform).flatten(-2)

    def logits(self, belief: torch.Tensor, obs_embedding: torch.Tensor) -> torch.Tensor:
        """The posterior logits, without sampling."""
        flat = self.obs_rnn_to_post_projector(torch.cat([belief, obs_embedding], dim=-1))
        return flat.unflatten(-1, (self.num_categoricals, self.num_classes))


class RSSMStateEstimatorV3(TensorDictModuleBase):
    """Acting-time filter: advances the belief with the prior's recurrent core and samples the posterior.

    Reset entries zero the previous state, belief and action first. The prior head is never evaluated.

    Args:
        prior: the world model's :class:`RSSMPriorV3`.
        posterior: the world model's :class:`RSSMPosteriorV3`.

    Keyword Args:
        in_keys: previous state, previous belief, previous action, current embedding, reset flag (default
            ``["state", "belief", "previous_action", "encoded_latents", "is_init"]``).
        out_keys: posterior state and belief, written as float32 (default ``["state", "belief"]``).

    Examples:
        >>> from tensordict import TensorDict
        >>> prior = RSSMPriorV3(action_shape=(2,), action_dim=2, hidden_dim=8, rnn_hidden_dim=8,
        ...                     num_categoricals=2, num_classes=4)
        >>> posterior = RSSMPosteriorV3(hidden_dim=8, rnn_hidden_dim=8, obs_embed_dim=6, num_categoricals=2,
        ...                             num_classes=4)
        >>> data = TensorDict({"state": torch.randn(2, 8), "belief": torch.randn(2, 8),
        ...     "previous_action": torch.randn(2, 2), "encoded_latents": torch.randn(2, 6),
        ...     "is_init": torch.tensor([True, False])}, [2])
        >>> RSSMStateEstimatorV3(prior, posterior)(data)["state"].reshape(2, 2, 4).sum(-1)
        tensor([[1., 1.],
                [1., 1.]], grad_fn=<SumBackward1>)
    """

    def __init__(self, prior: RSSMPriorV3, posterior: RSSMPosteriorV3, *, in_keys: list[NestedKey] | None = None,
                 out_keys: list[NestedKey] | None = None) -> None:
        super().__init__()
        self.prior, self.posterior = prior, posterior
        self.in_keys = (["state", "belief", "previous_action", "encoded_latents", "is_init"] if in_keys is None
                        else list(in_keys))
        self.out_keys = ["state", "belief"] if out_keys is None else list(out_keys)
        if len(self.in_keys) != 5 or len(self.out_keys) != 2:
            raise ValueError(f"RSSMStateEstimatorV3 takes 5 in_keys (state, belief, action, embedding, reset) and 2 "
                             f"out_keys (state, belief), got {self.in_keys} and {self.out_keys}")

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = []
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(f"RSSMStateEstimatorV3: missing entry {key!r}; it reads {self.in_keys}")
            values.append(value)
        state, belief, action, embedding, reset = values
        reset = reset.reshape(*tensordict.batch_size, 1)
        state, belief, action = (torch.where(reset, 0, v) for v in (state, belief, action))
        belief = self.prior.update_belief(state, belief, action)
        _, state = self.posterior(belief, embedding)
        tensordict.set(self.out_keys[0], state.float())
        tensordict.set(self.out_keys[1], belief.float())
        return tensordict


def _as_keys(keys) -> list:
    return [unravel_key(k) for k in keys]


class RSSMRolloutV3(TensorDictModuleBase):
    """Runs the prior then the posterior over the last batch dim (time) of a ``[*batch, T]`` TensorDict.

    The posterior state of step ``t`` is the prior's input at ``t + 1``; ``reset_key`` zeroes the state,
    belief and action of the steps it marks. With the standard wiring (the prior reads ``["state", "belief",
    action]`` and writes ``("next", "prior_logits" | "state" | "belief")``, the posterior reads ``("next",
    "belief" | "encoded_latents")`` and writes ``("next", "posterior_logits" | "state")``) the recurrence runs
    on tensors; other wirings run the modules on TensorDicts. Both give the same values.

    Args:
        rssm_prior: a ``TensorDictModule`` around :class:`RSSMPriorV3`.
        rssm_posterior: a ``TensorDictModule`` around :class:`RSSMPosteriorV3`.
        reset_key: reset flags (default ``"is_init"``; ``None`` for none).
        action_key: the action (default: the prior input that is not ``"state"`` or ``"belief"``).

    Examples:
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> prior = TensorDictModule(RSSMPriorV3(action_shape=(2,), hidden_dim=8, rnn_hidden_dim=8,
        ...     num_categoricals=4, num_classes=4, action_dim=2), in_keys=["state", "belief", "action"],
        ...     out_keys=[("next", "prior_logits"), ("next", "state"), ("next", "belief")])
        >>> posterior = TensorDictModule(RSSMPosteriorV3(hidden_dim=8, num_categoricals=4, num_classes=4,
        ...     rnn_hidden_dim=8, obs_embed_dim=6), in_keys=[("next", "belief"), ("next", "encoded_latents")],
        ...     out_keys=[("next", "posterior_logits"), ("next", "state")])
        >>> td = TensorDict({"state": torch.zeros(2, 4, 16), "belief": torch.zeros(2, 4, 8),
        ...     "action": torch.randn(2, 4, 2), "next": {"encoded_latents": torch.randn(2, 4, 6)}}, [2, 4])
        >>> RSSMRolloutV3(prior, posterior)(td)["next", "posterior_logits"].shape
        torch.Size([2, 4, 4, 4])
    """

    def __init__(self, rssm_prior: TensorDictModule, rssm_posterior: TensorDictModule,
                 reset_key: NestedKey | None = "is_init", action_key: NestedKey | None = None) -> None:
        super().__init__()
        seq = TensorDictSequential(rssm_prior, rssm_posterior)
        self.in_keys, self.out_keys = seq.in_keys, seq.out_keys
        self.rssm_prior, self.rssm_posterior = rssm_prior, rssm_posterior
        self.reset_key = unravel_key(reset_key) if reset_key is not None else None
        if action_key is not None:
            self.action_key = unravel_key(action_key)
        else:
            candidates = [k for k in _as_keys(rssm_prior.in_keys) if k not in ("state", "belief")]
            if len(candidates) > 1:
                raise ValueError(f"cannot infer the action key from the prior in_keys {list(rssm_prior.in_keys)}: "
                                 f"{candidates} are all candidates; pass action_key")
            self.action_key = candidates[0] if candidates else None
        self._fast_path = self._standard_wiring()
        self._step_fn: Any = None
        self._loop_fn: Any = None

    @property
    def uses_tensor_path(self) -> bool:
        """Whether the standard wiring lets the recurrence run on tensors (needed by :meth:`compile_rollout`)."""
        return self._fast_path

    @property
    def has_backend(self) -> bool:
        """Whether :meth:`compile_rollout` selected a step or loop backend."""
        return self._step_fn is not None or self._loop_fn is not None

    def _standard_wiring(self) -> bool:
        prior, post = self.rssm_prior, self.rssm_posterior
        return (
            type(getattr(prior, "module", None)) is RSSMPriorV3
            and type(getattr(post, "module", None)) is RSSMPosteriorV3
            and _as_keys(prior.in_keys) == ["state", "belief", self.action_key]
            and _as_keys(prior.out_keys) == [("next", "prior_logits"), ("next", "state"), ("next", "belief")]
            and _as_keys(post.in_keys) == [("next", "belief"), ("next", "encoded_latents")]
            and _as_keys(post.out_keys) == [("next", "posterior_logits"), ("next", "state")]
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._fast_path:
            return self._forward_tensors(tensordict)
        return self._forward_tensordicts(tensordict)

    def _reset_like(self, reset: torch.Tensor, ndim: int) -> torch.Tensor:
        while reset.ndim > ndim and reset.shape[-1] == 1:
            reset = reset.squeeze(-1)
        while reset.ndim < ndim:
            reset = reset.unsqueeze(-1)
        return reset

    def _forward_tensordicts(self, tensordict: TensorDictBase) -> TensorDictBase:
        steps = tensordict.exclude(*self.out_keys).unbind(-1)
        keep = list(steps[0].keys(include_nested=True, leaves_only=True)) + list(self.out_keys)
        outputs = []
        current = steps[0]
        for t in range(len(steps)):
            reset = current.get(self.reset_key, None) if self.reset_key is not None else None
            if reset is not None:
                state = current.get("state")
                mask = self._reset_like(reset, state.ndim)
                current.set("state", torch.where(mask, 0, state))
                current.set("belief", torch.where(mask, 0, current.get("belief")))
                action = current.get(self.action_key, None) if self.action_key is not None else None
                if action is not None:
                    current.set(self.action_key, torch.where(self._reset_like(reset, action.ndim), 0, action))
            self.rssm_prior(current)
            self.rssm_posterior(current)
            outputs.append(current.select(*keep, strict=False))
            if t < len(steps) - 1:
                state, belief = current.get(("next", "state")), current.get(("next", "belief"))
                current = steps[t + 1]
                current.set("state", state)
                current.set("belief", belief)
        return torch.stack(outputs, tensordict.ndim - 1)

    def _forward_tensors(self, tensordict: TensorDictBase) -> TensorDictBase:
        assert self.action_key is not None
        action = tensordict.get(self.action_key)
        embedding = tensordict.get(("next", "encoded_latents"))
        state = tensordict.get("state")[..., 0, :].contiguous()
        belief = tensordict.get("belief")[..., 0, :].contiguous()
        reset = tensordict.get(self.reset_key, None) if self.reset_key is not None else None
        if reset is None:
            reset = torch.zeros_like(action[..., :1], dtype=torch.bool)
        reset = self._reset_like(reset, action.ndim)
        loop = self._loop_fn or self._loop
        states, beliefs, actions, prior_logits, post_logits, next_states, next_beliefs = loop(
            state, belief, action, embedding, reset
        )
        out = tensordict.exclude(*self.out_keys)
        out.set("state", states)
        out.set("belief", beliefs)
        out.set(self.action_key, actions)
        out.set(("next", "prior_logits"), prior_logits)
        out.set(("next", "posterior_logits"), post_logits)
        out.set(("next", "state"), next_states)
        out.set(("next", "belief"), next_beliefs)
        return out

    def _step(self, state, belief, action, embedding, reset):
        """The deterministic part of one step (the draws stay outside, so compiling keeps the RNG stream)."""
        state, belief, action = (torch.where(reset, 0, v) for v in (state, belief, action))
        prior_logits, next_belief = self.rssm_prior.module.belief_and_logits(state, belief, action)
        post_logits = self.rssm_posterior.module.logits(next_belief, embedding)
        return state, belief, action, prior_logits, next_belief, post_logits

    def _loop(self, state, belief, action, embedding, reset):
        prior, post = self.rssm_prior.module, self.rssm_posterior.module
        step = self._step_fn or self._step
        time = action.shape[-2]
        # One draw for the whole sequence: [T, (prior, posterior), *batch, C], as TorchRL orders it.
        uniforms = torch.rand(time, 2, *action.shape[:-2], prior.num_categoricals, device=action.device)
        cols: list[list[torch.Tensor]] = [[] for _ in range(7)]
        for t in range(time):
            s_in, b_in, a_in, prior_logits, belief, post_logits = step(
                state, belief, action[..., t, :], embedding[..., t, :], reset[..., t, :]
            )
            # uniforms[t, 0] belongs to the (unused) prior sample: skipped, as TorchRL's loop discards it.
            state = straight_through_categorical(post_logits, post.unimix, uniforms[t, 1]).flatten(-2)
            for col, value in zip(cols, (s_in, b_in, a_in, prior_logits, post_logits, state, belief)):
                col.append(value)
        return tuple(torch.stack(col, -3 if i in (3, 4) else -2) for i, col in enumerate(cols))

    def compile_rollout(self, scope: Literal["step", "scan"] = "step", *, unroll: int = 1, compile: bool = True,
                        **compile_kwargs: Any) -> None:
        """Compiles the recurrence with :func:`torch.compile` (tensor path only).

        ``"step"`` compiles one deterministic step; ``"scan"`` compiles the whole loop over time (tdrl traces
        the unrolled loop rather than a higher-order scan; ``unroll`` is validated for compatibility).
        ``compile=False`` selects the scope without compiling it (for an enclosing compiled region).
        """
        if not self._fast_path:
            raise RuntimeError("compile_rollout() needs the standard DreamerV3 key wiring (the tensor path)")
        if scope not in ("step", "scan"):
            raise ValueError(f"scope must be 'step' or 'scan', got {scope!r}")
        if not isinstance(unroll, int) or isinstance(unroll, bool) or unroll < 1:
            raise ValueError(f"unroll must be a positive integer, got {unroll!r}")
        if scope != "scan" and unroll != 1:
            raise ValueError("unroll only applies when scope='scan'")
        compile_kwargs.setdefault("dynamic", False)
        self._step_fn = self._loop_fn = None
        if scope == "step":
            self._step_fn = torch.compile(self._step, **compile_kwargs) if compile else self._step
        else:
            self._loop_fn = torch.compile(self._loop, **compile_kwargs) if compile else self._loop

    def __getstate__(self) -> dict:
        # A compiled callable does not pickle: the copy runs eagerly.
        state = super().__getstate__()
        state["_step_fn"] = state["_loop_fn"] = None
        return state
