"""DreamerV3 losses: world model (balanced categorical KL, symlog reconstruction, two-hot reward), actor,
value, and their composition; plus the categorical-KL and two-hot utilities they use.

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
Each loss returns ``(losses, data)`` as in TorchRL 0.14.1 (except :class:`DreamerV3Loss`, which returns one
TensorDict); the world-model terms are shaped ``[1]``.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Literal

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tensordict.utils import NestedKey, unravel_key

from tdrl.modules.functional import symexp, symlog
from tdrl.modules.models.two_hot import (
    DEFAULT_NUM_BINS,
    default_bins,
    two_hot_cross_entropy,
    two_hot_decode,
    two_hot_encode,
    unimix_probs,
)
from tdrl.objectives._dreamer_v3_imagination import DreamerV3ActorLoss, DreamerV3ValueLoss
from tdrl.objectives.common import LossModule

__all__ = [
    "DreamerV3ActorLoss",
    "DreamerV3Loss",
    "DreamerV3ModelLoss",
    "DreamerV3ValueLoss",
    "categorical_kl_balanced",
    "categorical_kl_terms",
    "symexp",
    "symlog",
    "two_hot_cross_entropy",
    "two_hot_decode",
    "two_hot_encode",
]


def categorical_kl_terms(posterior_logits: torch.Tensor, prior_logits: torch.Tensor, free_nats: float = 1.0,
                         unimix: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """DreamerV3's dynamics and representation losses (§3): ``KL(sg(post) || prior)`` and
    ``KL(post || sg(prior))``, each summed over the categoricals, clamped below at ``free_nats``, averaged.

    Args:
        posterior_logits: ``[..., num_categoricals, num_classes]``.
        prior_logits: same shape.
        free_nats: the floor of the summed KL (0 disables it).
        unimix: uniform fraction mixed into both distributions.

    Returns:
        ``(dynamics, representation)`` scalars.

    Examples:
        >>> dyn, rep = categorical_kl_terms(torch.zeros(2, 4, 8), torch.zeros(2, 4, 8), free_nats=0.0)
        >>> dyn, rep
        (tensor(0.), tensor(0.))
    """
    post = unimix_probs(posterior_logits, unimix)
    prior = unimix_probs(prior_logits, unimix)
    log_post, log_prior = post.log(), prior.log()
    dynamics = (post.detach() * (log_post.detach() - log_prior)).sum((-1, -2))
    representation = (post * (log_post - log_prior.detach())).sum((-1, -2))
    if free_nats:
        dynamics, representation = dynamics.clamp_min(free_nats), representation.clamp_min(free_nats)
    return dynamics.mean(), representation.mean()


def categorical_kl_balanced(posterior_logits: torch.Tensor, prior_logits: torch.Tensor, alpha: float = 0.8,
                            free_bits: float = 1.0) -> torch.Tensor:
    """Balanced KL ``alpha * KL(sg(post) || prior) + (1 - alpha) * KL(post || sg(prior))``.

    Each categorical's KL is clamped below at ``free_bits`` before averaging over categoricals and batch
    (the reference clamps the sum instead: :func:`categorical_kl_terms`). Probabilities are clamped at
    ``1e-8`` before the logs.

    Examples:
        >>> categorical_kl_balanced(torch.zeros(4, 8, 16), torch.zeros(4, 8, 16), free_bits=0.0)
        tensor(0.)
    """
    post = torch.softmax(posterior_logits, dim=-1).clamp(min=1e-8)
    prior = torch.softmax(prior_logits, dim=-1).clamp(min=1e-8)
    post_sg, prior_sg = post.detach(), prior.detach()
    to_prior = (post_sg * (post_sg.log() - prior.log())).sum(-1).clamp_min(free_bits).mean()
    to_post = (post * (post.log() - prior_sg.log())).sum(-1).clamp_min(free_bits).mean()
    return alpha * to_prior + (1.0 - alpha) * to_post


def _as_list(keys: NestedKey | list[NestedKey]) -> list[NestedKey]:
    return list(keys) if isinstance(keys, list) else [keys]


class DreamerV3ModelLoss(LossModule["DreamerV3ModelLoss._AcceptedKeys"]):
    """DreamerV3's world-model loss: ``loss_model_kl`` (or ``loss_model_dynamic`` and
    ``loss_model_representation``), ``loss_model_reco``, ``loss_model_reward`` and optionally
    ``loss_model_continue``.

    The true ``("next", reward)`` is moved to ``("next", true_reward)``, then ``world_model`` writes (under
    ``"next"``) the prior and posterior logits, the reconstructions and the reward logits (or a scalar reward).

    * KL: :func:`categorical_kl_balanced` (``kl_mode="balanced"``) or :func:`categorical_kl_terms`
      (``"separate"``, weighted by ``lambda_dynamic`` / ``lambda_representation``).
    * reconstruction: squared (``"l2"``) or absolute error per head (in symlog space where ``reco_symlog``;
      otherwise integer images are divided by 255), summed over the non-batch dims unless
      ``global_average``, averaged, summed over heads.
    * reward: two-hot cross entropy on ``num_reward_bins`` symexp bins, or symlog squared error.
    * continue (``lambda_continue > 0``): binary cross entropy of ``continue_pred`` against
      ``continue_target_scale * (1 - terminated)``.

    Args:
        world_model: the model described above.

    Keyword Args:
        lambda_kl, lambda_reco, lambda_reward, lambda_continue: term weights (1, 1, 1, 0).
        kl_mode: ``"balanced"`` (default) or ``"separate"``.
        lambda_dynamic, lambda_representation: separate-mode weights (1.0, 0.1).
        unimix: uniform mixture of the separate-mode KL (default 0).
        continue_target_scale: factor on non-terminal continue targets, in ``(0, 1]`` (default 1).
        kl_alpha: balance of the balanced KL (default 0.8).
        free_bits: KL floor in nats (default 1).
        reco_loss: ``"l2"`` (default) or ``"l1"``.
        reco_symlog: symlog targets and predictions, one bool for all heads or one per head (default ``True``).
        reward_two_hot: two-hot reward logits (default) or a scalar reward.
        num_reward_bins: two-hot support size (default 255).
        global_average: average over all dims instead of summing the non-batch ones (default ``False``).
        detach_output: return the world-model output detached (default ``True``; ``False`` lets a replay
            value loss train the representation).

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> def model(pixels, reward_in):  # uniform latents, perfect reconstruction, zero reward logits
        ...     logits = torch.zeros(*pixels.shape[:2], 2, 3)
        ...     return logits, logits, pixels, torch.zeros(*pixels.shape[:2], 5)
        >>> wm = Mod(model, [("next", "pixels"), ("next", "true_reward")], [("next", "prior_logits"),
        ...     ("next", "posterior_logits"), ("next", "reco_pixels"), ("next", "reward_logits")])
        >>> loss = DreamerV3ModelLoss(wm, num_reward_bins=5, free_bits=0.0)
        >>> data = TensorDict({("next", "pixels"): torch.rand(2, 3, 1, 4, 4),
        ...     ("next", "reward"): torch.zeros(2, 3, 1)}, [2, 3])
        >>> losses, _ = loss(data)
        >>> losses["loss_model_kl"], losses["loss_model_reco"]
        (tensor([0.]), tensor([0.]))
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerV3ModelLoss` (read under ``"next"``)."""

        reward: NestedKey = "reward"
        reward_logits: NestedKey = "reward_logits"
        true_reward: NestedKey = "true_reward"
        prior_logits: NestedKey = "prior_logits"
        posterior_logits: NestedKey = "posterior_logits"
        pixels: NestedKey | list[NestedKey] = "pixels"
        reco_pixels: NestedKey | list[NestedKey] = "reco_pixels"
        continue_pred: NestedKey = "continue_pred"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    def __init__(
        self,
        world_model: TensorDictModule,
        *,
        lambda_kl: float = 1.0,
        lambda_reco: float = 1.0,
        lambda_reward: float = 1.0,
        lambda_continue: float = 0.0,
        kl_mode: Literal["balanced", "separate"] = "balanced",
        lambda_dynamic: float = 1.0,
        lambda_representation: float = 0.1,
        unimix: float = 0.0,
        continue_target_scale: float = 1.0,
        kl_alpha: float = 0.8,
        free_bits: float = 1.0,
        reco_loss: Literal["l1", "l2"] = "l2",
        reco_symlog: bool | list[bool] = True,
        reward_two_hot: bool = True,
        num_reward_bins: int = DEFAULT_NUM_BINS,
        global_average: bool = False,
        detach_output: bool = True,
    ) -> None:
        super().__init__()
        if kl_mode not in ("balanced", "separate"):
            raise ValueError(f"kl_mode must be 'balanced' or 'separate', got {kl_mode!r}")
        if reco_loss not in ("l1", "l2"):
            raise ValueError(f"reco_loss must be 'l1' or 'l2', got {reco_loss!r}")
        if not 0 < continue_target_scale <= 1:
            raise ValueError(f"continue_target_scale must be in (0, 1], got {continue_target_scale}")
        self.world_model = world_model
        self.lambda_kl, self.lambda_reco, self.lambda_reward = lambda_kl, lambda_reco, lambda_reward
        self.lambda_continue, self.kl_mode = lambda_continue, kl_mode
        self.lambda_dynamic, self.lambda_representation = lambda_dynamic, lambda_representation
        self.unimix, self.continue_target_scale = unimix, continue_target_scale
        self.kl_alpha, self.free_bits, self.reco_loss, self.reco_symlog = kl_alpha, free_bits, reco_loss, reco_symlog
        self.reward_two_hot, self.num_reward_bins = reward_two_hot, num_reward_bins
        self.global_average, self.detach_output = global_average, detach_output
        self.register_buffer("reward_bins", default_bins(num_reward_bins))

    def _collect_in_keys(self) -> list[NestedKey]:
        keys = self._tensor_keys
        return [*self.world_model.in_keys, ("next", keys.reward),
                *(unravel_key(("next", k)) for k in _as_list(keys.pixels))]

    def _out_keys(self) -> list[str]:
        kl = ["loss_model_kl"] if self.kl_mode == "balanced" else ["loss_model_dynamic", "loss_model_representation"]
        return [*kl, "loss_model_reco", "loss_model_reward"] + (["loss_model_continue"] if self.lambda_continue else [])

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self._tensor_keys
        given = tensordict
        renamed = unravel_key(("next", keys.true_reward))  # written below, from ("next", reward)
        for key in (*self.world_model.in_keys, ("next", keys.reward)):
            if unravel_key(key) != renamed:
                self._get(given, key)
        # A new nested structure sharing the tensors: the world model's writes do not reach the caller's data.
        tensordict = tensordict.select(*tensordict.keys(True, True))
        tensordict.rename_key_(("next", keys.reward), ("next", keys.true_reward))
        tensordict = self.world_model(tensordict)
        out: dict[str, torch.Tensor] = {}
        prior = self._get(tensordict, ("next", keys.prior_logits))
        post = self._get(tensordict, ("next", keys.posterior_logits))
        if self.kl_mode == "separate":
            dyn, rep = categorical_kl_terms(post, prior, free_nats=self.free_bits, unimix=self.unimix)
            out["loss_model_dynamic"] = self.lambda_kl * self.lambda_dynamic * dyn.unsqueeze(-1)
            out["loss_model_representation"] = self.lambda_kl * self.lambda_representation * rep.unsqueeze(-1)
        else:
            kl = categorical_kl_balanced(post, prior, alpha=self.kl_alpha, free_bits=self.free_bits)
            out["loss_model_kl"] = self.lambda_kl * kl.unsqueeze(-1)
        out["loss_model_reco"] = self.lambda_reco * self._reconstruction(tensordict)
        out["loss_model_reward"] = self.lambda_reward * self._reward(tensordict)
        if self.lambda_continue > 0:
            cont = self._continue(tensordict)
            if cont is not None:
                out["loss_model_continue"] = self.lambda_continue * cont
        return self._finalize(given, out), tensordict.data if self.detach_output else tensordict

    def _reconstruction(self, tensordict: TensorDictBase) -> torch.Tensor:
        keys = self._tensor_keys
        targets, predictions = _as_list(keys.pixels), _as_list(keys.reco_pixels)
        symlogs = self.reco_symlog if isinstance(self.reco_symlog, list) else [self.reco_symlog] * len(targets)
        if not targets or not len(targets) == len(predictions) == len(symlogs):
            raise ValueError(
                f"pixels ({targets}), reco_pixels ({predictions}) and reco_symlog ({symlogs}) must describe the "
                "same nonzero number of reconstruction heads"
            )
        terms = []
        for target_key, pred_key, use_symlog in zip(targets, predictions, symlogs):
            target = self._get(tensordict, unravel_key(("next", target_key))).contiguous()
            pred = self._get(tensordict, unravel_key(("next", pred_key))).contiguous()
            if use_symlog:
                target, pred = symlog(target), symlog(pred)
            else:
                target = target if target.is_floating_point() else target.float() / 255.0
                pred = pred.float()
            err = (target - pred).pow(2) if self.reco_loss == "l2" else (target - pred).abs()
            if not self.global_average:
                err = err.reshape(*tensordict.batch_size, -1).sum(-1)
            terms.append(err.mean().unsqueeze(-1))
        return torch.stack(terms).sum(0)

    def _reward(self, tensordict: TensorDictBase) -> torch.Tensor:
        keys = self._tensor_keys
        true_reward = self._get(tensordict, ("next", keys.true_reward))
        if not self.reward_two_hot:
            pred = self._get(tensordict, ("next", keys.reward))
            return (symlog(true_reward) - symlog(pred)).pow(2).squeeze(-1).mean().unsqueeze(-1)
        logits = tensordict.get(unravel_key(("next", keys.reward_logits)), None)
        if logits is None:
            legacy = unravel_key(("next", keys.reward))
            logits = self._get(tensordict, legacy)
            warnings.warn(
                f"DreamerV3ModelLoss: reward logits stored under the decoded reward key {legacy!r} are deprecated "
                f"(removed in TorchRL 0.16); write them to the reward_logits key {keys.reward_logits!r}.",
                DeprecationWarning,
                stacklevel=3,
            )
        if logits.shape[-1] != self.num_reward_bins:
            raise ValueError(f"reward_two_hot=True expects reward logits over {self.num_reward_bins} bins, got a "
                             f"last dim of {logits.shape[-1]}")
        return two_hot_cross_entropy(logits, true_reward, self.reward_bins).mean().unsqueeze(-1)

    def _continue(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        keys = self._tensor_keys
        pred = tensordict.get(("next", keys.continue_pred), None)
        terminated = tensordict.get(("next", keys.terminated), None)
        if terminated is None:
            terminated = tensordict.get(("next", keys.done), None)
        if pred is None or terminated is None:
            return None
        target = (~terminated.bool()).float() * self.continue_target_scale
        return torch.nn.functional.binary_cross_entropy_with_logits(pred.squeeze(-1), target.squeeze(-1)).unsqueeze(-1)


class DreamerV3Loss(LossModule["DreamerV3Loss._AcceptedKeys"]):
    """DreamerV3's full objective on a ``[batch, time]`` sample: world model, imagination (actor, value) and
    the replay value term.

    Imagination starts from the detached posterior states; the replay value loss (weight
    ``replay_value_loss_weight``) regresses the critic on the posterior features (which it may train, hence
    ``model_loss.detach_output=False``) towards lambda-returns of the real rewards bootstrapped with the first
    imagined return of each state. The output holds every loss and metric entry plus the detached posterior
    features under ``replay_context``; the objective is the sum of the ``loss_*`` entries.

    Args:
        model_loss: a :class:`DreamerV3ModelLoss`.
        actor_loss: a :class:`DreamerV3ActorLoss` sharing the world model's dynamics and the value network.
        value_loss: a :class:`DreamerV3ValueLoss`.

    Keyword Args:
        replay_value_loss_weight: weight of the replay value term (default 0.3; 0 disables it).
        continuation_horizon: horizon ``H`` of the replay discount ``1 - 1 / H`` (default 333).
        lmbda: lambda of the replay returns (default 0.95).

    Examples:
        >>> DreamerV3Loss.default_keys().replay_context
        'replay_context'
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerV3Loss`."""

        state: NestedKey = "state"
        belief: NestedKey = "belief"
        is_init: NestedKey = "is_init"
        replay_context: NestedKey = "replay_context"

    def __init__(self, model_loss: DreamerV3ModelLoss, actor_loss: DreamerV3ActorLoss, value_loss: DreamerV3ValueLoss,
                 *, replay_value_loss_weight: float = 0.3, continuation_horizon: float = 333.0,
                 lmbda: float = 0.95) -> None:
        super().__init__()
        if replay_value_loss_weight < 0:
            raise ValueError(f"replay_value_loss_weight must be non-negative, got {replay_value_loss_weight}")
        if replay_value_loss_weight and model_loss.detach_output:
            raise ValueError("replay value learning (replay_value_loss_weight > 0) needs "
                             "DreamerV3ModelLoss(detach_output=False)")
        self.model_loss, self.actor_loss, self.value_loss = model_loss, actor_loss, value_loss
        self.replay_value_loss_weight = replay_value_loss_weight
        self.continuation_horizon, self.lmbda = continuation_horizon, lmbda

    def _collect_in_keys(self) -> list[NestedKey]:
        model_keys, value_keys = self.model_loss.tensor_keys, self.value_loss.tensor_keys
        return [
            *self.model_loss.world_model.in_keys,
            self._tensor_keys.is_init,
            *(unravel_key(("next", k)) for k in _as_list(model_keys.pixels)),
            unravel_key(("next", model_keys.reward)),
            *(unravel_key(("next", k)) for k in (value_keys.reward, value_keys.done, value_keys.terminated)),
        ]

    def _out_keys(self) -> list[str]:
        return [*self.model_loss.out_keys, *self.actor_loss.out_keys, *self.value_loss.out_keys,
                "loss_replay_value", "replay_value"]

    def forward(self, sample: TensorDictBase) -> TensorDictBase:
        keys = self._tensor_keys
        model_losses, posterior = self.model_loss(sample)
        state = posterior.get(("next", keys.state))
        belief = posterior.get(("next", keys.belief))
        actor_keys = self.actor_loss.tensor_keys
        start = TensorDict({actor_keys.state: state.detach().reshape(-1, state.shape[-1]),
                            actor_keys.belief: belief.detach().reshape(-1, belief.shape[-1])}, [sample.numel()])
        actor_losses, imagined = self.actor_loss(start)
        value_losses, _ = self.value_loss(imagined.detach())
        if self.replay_value_loss_weight:
            value_keys = self.value_loss.tensor_keys
            replay = posterior.get("next").select(*self.value_loss.value_model.in_keys)
            replay.set(value_keys.bootstrap, imagined.get("lambda_target")[..., 0, 0].reshape(sample.batch_size))
            replay.set("next", sample.get("next").select(value_keys.reward, value_keys.done, value_keys.terminated))
            replay_value = self.value_loss.replay_value_loss(
                replay, horizon=self.continuation_horizon, lmbda=self.lmbda
            )["loss_replay_value"]
        else:
            replay_value = state.new_zeros(())
        result = model_losses.apply(torch.squeeze)
        result.update(actor_losses).update(value_losses)
        result.set("loss_replay_value", self.replay_value_loss_weight * replay_value)
        result.set("replay_value", replay_value.detach())
        result.set(keys.replay_context, posterior.get("next").select(keys.state, keys.belief).detach())
        return result
