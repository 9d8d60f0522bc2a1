"""DreamerV3's imagination losses: the actor (return-normalised REINFORCE or pathwise gradient, entropy bonus)
and the critic (symlog or two-hot regression on lambda-returns, slow-critic regularisation, replay returns).

Hafner et al., "Mastering Diverse Domains through World Models" (2023), https://arxiv.org/abs/2301.04104.
Public from :mod:`tdrl.objectives.dreamer_v3`.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Literal, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictModuleBase
from tensordict.utils import NestedKey, unravel_key
from torch import distributions as D

from tdrl.envs.model_based.dreamer import DreamerEnv
from tdrl.envs.step_mdp import step_mdp
from tdrl.envs.utils import ExplorationType, set_exploration_type
from tdrl.modules.distributions.utils import has_analytic_entropy
from tdrl.modules.functional import symlog
from tdrl.modules.models.two_hot import DEFAULT_NUM_BINS, default_bins, two_hot_cross_entropy, two_hot_decode
from tdrl.modules.value_norm import PercentileValueNorm
from tdrl.objectives._finite import CHECK_FINITE
from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import ValueEstimators, hold_out_net
from tdrl.objectives.value.functional import td_lambda_return_estimate, vec_td_lambda_return_estimate

__all__ = ["DreamerV3ActorLoss", "DreamerV3ValueLoss"]


def _match_trailing_dim(source: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Aligns a log-prob / entropy with the ``[..., 1]`` returns: sums a per-dim one, adds a missing dim."""
    if source.ndim == reference.ndim:
        return source
    if source.ndim == reference.ndim - 1:
        return source.unsqueeze(-1)
    if source.ndim == reference.ndim + 1:
        return source.sum(-1, keepdim=True)
    raise ValueError(f"cannot align a tensor of shape {tuple(source.shape)} with returns of shape "
                     f"{tuple(reference.shape)}")


def _sampled_entropy(dist: D.Distribution) -> torch.Tensor:
    """``-log p(x)`` of one reparameterised draw (for distributions without a closed-form entropy)."""
    joint = getattr(dist, "rsample_and_log_prob", None)
    if joint is not None:
        return -joint()[1]
    return -dist.log_prob(dist.rsample())


class DreamerV3ActorLoss(LossModule["DreamerV3ActorLoss._AcceptedKeys"]):
    """DreamerV3's actor loss on trajectories imagined from posterior states.

    The actor is rolled out ``imagination_horizon`` steps in ``model_based_env`` (held out); the held-out
    ``value_model`` values the next states and the value estimator (or, with a ``continuation_model``, the
    continuation-weighted lambda-return recursion) gives ``"lambda_target"``. With ``return_normalization``
    the objective is divided by ``max(min_scale, EMA(P95 - P05))`` of the returns (``self.retnorm``). The loss
    is ``-mean(w * log pi(a) * sg(R - v) / S)`` (``use_reinforce``) or ``-mean(w * R / S)`` (pathwise), minus
    ``entropy_bonus * mean(w * H[pi])``; ``w`` is the cumulative discount (``discount_loss``).

    Args:
        actor_model: the policy (probabilistic, with ``get_dist``).
        value_model: the value network (not trained by this loss).
        model_based_env: the :class:`~tdrl.envs.model_based.DreamerEnv`.

    Keyword Args:
        continuation_model: writes ``continuation`` probabilities of imagined states (default ``None``).
        imagination_horizon: imagined steps (default 15).
        discount_loss: weight steps by the cumulative discount (default ``True``).
        entropy_bonus: entropy weight ``eta`` (default ``3e-4``).
        use_reinforce: score-function gradient (default ``False``: pathwise).
        return_normalization: divide by the return span (default ``True``).
        return_normalization_rate: EMA rate (default 0.01).
        return_normalization_quantiles: the two quantiles (default ``(0.05, 0.95)``).
        return_normalization_min_scale: the smallest divisor (default 1).
        gamma, lmbda: removed; must be ``None`` (use ``make_value_estimator(gamma=..., lmbda=...)``).

    Examples:
        >>> DreamerV3ActorLoss.default_value_estimator.name, DreamerV3ActorLoss.default_keys().discount_weight
        ('TDLambda', 'discount_weight')
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerV3ActorLoss`."""

        state: NestedKey = "state"
        belief: NestedKey = "belief"
        reward: NestedKey = "reward"
        value: NestedKey = "state_value"
        action: NestedKey = "action"
        action_log_prob: NestedKey = "action_log_prob"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        continuation: NestedKey = "continuation"
        discount_weight: NestedKey = "discount_weight"

    default_value_estimator = ValueEstimators.TDLambda
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value",)

    def __init__(
        self,
        actor_model: TensorDictModule,
        value_model: TensorDictModule,
        model_based_env: DreamerEnv,
        *,
        continuation_model: TensorDictModuleBase | None = None,
        imagination_horizon: int = 15,
        discount_loss: bool = True,
        entropy_bonus: float = 3e-4,
        use_reinforce: bool = False,
        return_normalization: bool = True,
        return_normalization_rate: float = 0.01,
        return_normalization_quantiles: tuple[float, float] = (0.05, 0.95),
        return_normalization_min_scale: float = 1.0,
        gamma: float | None = None,
        lmbda: float | None = None,
    ) -> None:
        if gamma is not None or lmbda is not None:
            raise TypeError("gamma and lmbda are no longer loss arguments; use loss.make_value_estimator(gamma=..., "
                            "lmbda=...)")
        super().__init__()
        self.actor_model = actor_model
        # Held, not owned: their parameters belong to the world model / value loss.
        self.__dict__["value_model"] = value_model
        self.__dict__["continuation_model"] = continuation_model
        self.model_based_env = model_based_env
        self.imagination_horizon, self.discount_loss = imagination_horizon, discount_loss
        self.entropy_bonus, self.use_reinforce = entropy_bonus, use_reinforce
        self.return_normalization = return_normalization
        self.retnorm = PercentileValueNorm(quantiles=return_normalization_quantiles, rate=return_normalization_rate,
                                           min_scale=return_normalization_min_scale, device=self._default_device())

    value_model: TensorDictModule
    retnorm: PercentileValueNorm

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.state, self._tensor_keys.belief]

    def _out_keys(self) -> list[str]:
        return ["loss_actor", "actor_entropy", "return_low", "return_high", "return_scale", "continuation_mean"]

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict[str, Any]:
        # This loss computes the next values; the estimator only combines them.
        hp: dict[str, Any] = {"value_network": None}
        if value_type is ValueEstimators.TDLambda:
            hp["vectorized"] = True
        return hp

    def _imagine(self, start: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        with hold_out_net(self.model_based_env), set_exploration_type(ExplorationType.RANDOM):
            start = self.model_based_env.reset(start.copy())
            fake = self.model_based_env.rollout(max_steps=self.imagination_horizon, policy=self.actor_model,
                                                auto_reset=False, tensordict=start, break_when_any_done=False)
            next_td = step_mdp(fake, keep_other=True)
            with hold_out_net(self.value_model):
                next_td = self.value_model(next_td)
        return fake, next_td

    def _continuations(self, fake: TensorDictBase, next_td: TensorDictBase):
        model = self.__dict__.get("continuation_model")
        if model is None:
            return None, None
        key = self._tensor_keys.continuation
        # step_mdp shifts by one step: only the first imagined state needs its own forward pass.
        first = fake[..., :1].select(*model.in_keys, strict=False)
        later = next_td.select(*model.in_keys, strict=False)
        with hold_out_net(model):
            model(first)
            model(later)
        cont = later.get(key)
        root = torch.cat([first.get(key), cont[..., :-1, :]], dim=-2)
        fake.set(key, root)
        fake.set(("next", key), cont)
        return cont, root

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self._tensor_keys
        for key in (keys.state, keys.belief):
            self._get(tensordict, key)
        start = tensordict.select(keys.state, keys.belief).data
        if self.check_finite or CHECK_FINITE[0]:
            # Before imagining: a NaN start state would otherwise fail inside the policy's sampler.
            self._assert_finite("input", start)
        fake, next_td = self._imagine(start)
        reward = fake.get(("next", keys.reward))
        cont, root = self._continuations(fake, next_td)
        lambda_target = self.lambda_target(reward, next_td.get(keys.value), cont)
        fake.set("lambda_target", lambda_target)
        if self.discount_loss:
            gamma = torch.as_tensor(self.value_estimator.gamma).to(lambda_target)
            c = root if root is not None else torch.ones_like(lambda_target)
            discount = torch.cat([c[..., :1, :], gamma * c[..., 1:, :]], dim=-2).cumprod(dim=-2)
        else:
            discount = torch.ones_like(lambda_target)
        discount = discount.detach()
        fake.set(keys.discount_weight, discount)
        dist = None
        if self.use_reinforce or self.entropy_bonus > 0:
            dist = self.actor_model.get_dist(fake.select(*self.actor_model.in_keys, strict=False).detach())
        scale = self._return_scale(lambda_target)
        if self.use_reinforce:
            assert dist is not None
            # Score a stopped action: the rollout's action is reparameterised, its log-prob has a pathwise part.
            log_prob = _match_trailing_dim(dist.log_prob(fake.get(keys.action).detach()), lambda_target)
            with hold_out_net(self.value_model):
                baseline_td = self.value_model(fake.select(*self.value_model.in_keys, strict=False))
            advantage = (lambda_target - baseline_td.get(keys.value)).detach() / scale
            actor_loss = -(discount * log_prob * advantage).mean()
        else:
            actor_loss = -(discount * lambda_target / scale).mean()
        if dist is not None and self.entropy_bonus > 0:
            entropy = dist.entropy() if has_analytic_entropy(dist) else _sampled_entropy(dist)
            entropy = (discount * _match_trailing_dim(entropy, discount)).mean()
            actor_loss = actor_loss - self.entropy_bonus * entropy
        else:
            entropy = actor_loss.new_zeros(())
        out = {
            "loss_actor": actor_loss,
            "actor_entropy": entropy.detach(),
            "return_low": self.return_low.detach().clone(),
            "return_high": self.return_high.detach().clone(),
            "return_scale": scale.detach().clone(),
            "continuation_mean": cont.mean().detach() if cont is not None else torch.ones((), device=actor_loss.device),
        }
        return self._finalize(tensordict, out), fake.data

    def _return_scale(self, returns: torch.Tensor) -> torch.Tensor:
        if not self.return_normalization:
            return torch.ones((), dtype=returns.dtype, device=returns.device)
        if self.training:
            self.retnorm.update(returns)
        return self.retnorm.scale().squeeze(-1)

    @property
    def return_normalization_rate(self) -> float:
        """EMA rate of the return statistics."""
        return self.retnorm.rate

    @property
    def return_normalization_quantiles(self) -> tuple[float, float]:
        """The tracked return quantiles."""
        return self.retnorm.quantiles

    @property
    def return_normalization_min_scale(self) -> float:
        """The smallest return divisor."""
        return self.retnorm.min_scale

    @property
    def return_low(self) -> torch.Tensor:
        """EMA of the low return quantile (0-dim)."""
        return cast(torch.Tensor, self.retnorm.low).squeeze(-1)

    @property
    def return_high(self) -> torch.Tensor:
        """EMA of the high return quantile (0-dim)."""
        return cast(torch.Tensor, self.retnorm.high).squeeze(-1)

    def lambda_target(self, reward: torch.Tensor, value: torch.Tensor,
                      continuation: torch.Tensor | None = None) -> torch.Tensor:
        """Returns of ``[*batch, T, 1]`` imagined rewards and next values (never done).

        With ``continuation``: ``R_t = r_t + gamma * c_t * ((1 - lmbda) * v_t + lmbda * R_{t+1})``, ``R_T = v_T``;
        otherwise the value estimator's return along the time dim.
        """
        if continuation is not None:
            gamma = torch.as_tensor(self.value_estimator.gamma).to(reward)
            lmbda = torch.as_tensor(getattr(self.value_estimator, "lmbda", 1.0)).to(reward)
            ret = value[..., -1, :]
            out = []
            for r_t, v_t, c_t in zip(reversed(reward.unbind(-2)), reversed(value.unbind(-2)),
                                     reversed(continuation.unbind(-2))):
                ret = r_t + gamma * c_t * ((1 - lmbda) * v_t + lmbda * ret)
                out.append(ret)
            return torch.stack(out[::-1], dim=-2)
        keys = self._tensor_keys
        flags = torch.zeros(reward.shape, dtype=torch.bool, device=reward.device)
        data = TensorDict({("next", keys.reward): reward, ("next", keys.value): value, ("next", keys.done): flags,
                           ("next", keys.terminated): flags.clone()}, reward.shape[:-1])
        return self.value_estimator.value_estimate(data, next_value=value, time_dim=reward.ndim - 2)


@torch.no_grad()
def _replay_value_target(reward: torch.Tensor, done: torch.Tensor, terminated: torch.Tensor,
                         bootstrap: torch.Tensor, horizon: float, lmbda: float) -> torch.Tensor:
    """Lambda-returns of replay states ``0..T-2`` from the rewards and bootstraps of steps ``1..T-1``."""
    reward, done, terminated, bootstrap = (x.squeeze(-1).unsqueeze(-1) for x in (reward, done, terminated, bootstrap))
    # The vectorised estimator pads trajectories to data-dependent lengths, which Dynamo cannot trace.
    estimate = td_lambda_return_estimate if torch.compiler.is_compiling() else vec_td_lambda_return_estimate
    return estimate(gamma=1 - 1 / horizon, lmbda=lmbda, next_state_value=bootstrap[..., 1:, :],
                    reward=reward[..., 1:, :], done=done[..., 1:, :], terminated=terminated[..., 1:, :]).squeeze(-1)


class DreamerV3ValueLoss(LossModule["DreamerV3ValueLoss._AcceptedKeys"]):
    """DreamerV3's critic loss: ``value_model`` on imagined states regressed on their ``"lambda_target"``.

    ``value_loss="symlog_mse"``: ``(symlog(v) - symlog(R))^2``; ``"two_hot"``: two-hot cross entropy of the
    value logits on ``num_value_bins`` symexp bins. Steps are weighted by ``discount_weight`` when present,
    else by ``gamma**t`` (``discount_loss``; ``gamma`` read from ``actor_loss``'s estimator when given).
    ``slow_critic_regularization > 0`` adds the same loss towards a target critic (``target_value_model_params``,
    updated by a :class:`~tdrl.objectives.SoftUpdate`). Outputs ``loss_value`` and ``value_slow_loss``.

    Args:
        value_model: the value network (writes ``state_value``; ``state_value_logits`` for two-hot).
        value_loss: ``"symlog_mse"`` (default) or ``"two_hot"``.
        discount_loss: discount along the horizon (default ``True``).
        gamma: the discount without ``actor_loss`` (default 0.99).
        num_value_bins: two-hot support size (default 255).
        actor_loss: the :class:`DreamerV3ActorLoss` whose estimator's ``gamma`` to use.
        slow_critic_regularization: weight of the target-critic term (default 0).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Examples:
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> value = Mod(torch.nn.Linear(4, 1), ["state"], ["state_value"])
        >>> fake = TensorDict({"state": torch.randn(8, 4), "lambda_target": torch.randn(8, 1)}, [8])
        >>> losses, _ = DreamerV3ValueLoss(value)(fake)
        >>> losses["loss_value"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerV3ValueLoss`."""

        value: NestedKey = "state_value"
        value_logits: NestedKey = "state_value_logits"
        discount_weight: NestedKey = "discount_weight"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        bootstrap: NestedKey = "bootstrap"

    value_model: TensorDictModule

    def __init__(
        self,
        value_model: TensorDictModule,
        value_loss: Literal["symlog_mse", "two_hot"] = "symlog_mse",
        discount_loss: bool = True,
        gamma: float = 0.99,
        num_value_bins: int = DEFAULT_NUM_BINS,
        actor_loss: DreamerV3ActorLoss | None = None,
        slow_critic_regularization: float = 0.0,
        reduction: Literal["none", "mean", "sum"] | None = None,
    ) -> None:
        super().__init__()
        if slow_critic_regularization < 0:
            raise ValueError(f"slow_critic_regularization must be non-negative, got {slow_critic_regularization}")
        if value_loss not in ("symlog_mse", "two_hot"):
            raise ValueError(f"value_loss must be 'symlog_mse' or 'two_hot', got {value_loss!r}")
        self._set_reduction(reduction)
        self.slow_critic_regularization = slow_critic_regularization
        self.convert_to_functional(value_model, "value_model", create_target_params=bool(slow_critic_regularization))
        self.value_loss, self.gamma, self.discount_loss = value_loss, gamma, discount_loss
        # Held, not a submodule: its parameters are not this loss's.
        self.__dict__["_actor_loss"] = actor_loss
        self.register_buffer("value_bins", default_bins(num_value_bins))

    def _collect_in_keys(self) -> list[NestedKey]:
        return [*self.value_model.in_keys, "lambda_target"]

    def _out_keys(self) -> list[str]:
        return ["loss_value", "value_slow_loss"]

    def _resolved_gamma(self) -> float:
        actor_loss = self.__dict__.get("_actor_loss")
        if actor_loss is None:
            return float(self.gamma)
        return float(torch.as_tensor(actor_loss.value_estimator.gamma))

    def sync_gamma_with_actor_loss(self, actor_loss: DreamerV3ActorLoss) -> None:
        """Copies ``gamma`` from ``actor_loss``'s value estimator (prefer passing ``actor_loss=``)."""
        self.gamma = float(torch.as_tensor(actor_loss.value_estimator.gamma))

    def _step_loss(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.value_loss == "two_hot":
            return two_hot_cross_entropy(prediction, target, self.value_bins)
        return (symlog(prediction) - symlog(target)).square()

    def _prediction(self, tensordict: TensorDictBase) -> torch.Tensor:
        keys = self._tensor_keys
        if self.value_loss != "two_hot":
            return self._get(tensordict, keys.value).squeeze(-1)
        pred = tensordict.get(keys.value_logits, None)
        if pred is None:
            pred = self._get(tensordict, keys.value)
            warnings.warn(
                f"DreamerV3ValueLoss: value logits stored under the decoded value key {unravel_key(keys.value)!r} "
                f"are deprecated (removed in TorchRL 0.16); write them to the value_logits key "
                f"{keys.value_logits!r}.",
                DeprecationWarning,
                stacklevel=3,
            )
        if pred.shape[-1] != self.value_bins.shape[0]:
            raise ValueError(f"value_loss='two_hot' expects value logits over {self.value_bins.shape[0]} bins, got "
                             f"a last dim of {pred.shape[-1]}")
        return pred

    def forward(self, fake_data: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self._tensor_keys
        target = self._get(fake_data, "lambda_target").squeeze(-1)
        for key in self.value_model.in_keys:
            self._get(fake_data, key)
        selected = self._call("value_model", fake_data.select(*self.value_model.in_keys, strict=False))
        weight = fake_data.get(keys.discount_weight, None)
        if weight is not None:
            discount = weight.squeeze(-1)
        elif self.discount_loss and target.ndim >= 2:
            discount = torch.full_like(target, self._resolved_gamma())
            discount[..., 0] = 1
            discount = discount.cumprod(dim=-1)
        else:
            discount = torch.ones_like(target)
        pred = self._prediction(selected)
        loss = self._step_loss(pred, target)
        if self.slow_critic_regularization:
            with torch.no_grad():
                slow_td = self._call("value_model", fake_data.select(*self.value_model.in_keys, strict=False),
                                     "target")
            slow = slow_td.get(keys.value)
            if self.value_loss == "two_hot" and slow.shape[-1] == self.value_bins.shape[0]:
                slow = two_hot_decode(slow, self.value_bins).unsqueeze(-1)
            slow_loss = self._step_loss(pred, slow.squeeze(-1))
            loss = loss + self.slow_critic_regularization * slow_loss
        else:
            slow_loss = torch.zeros_like(loss)
        out = {"loss_value": self._reduce(discount * loss),
               "value_slow_loss": self._reduce(discount * slow_loss).detach()}
        return self._finalize(fake_data, out), fake_data.data

    def replay_value_loss(self, tensordict: TensorDictBase, *, horizon: float = 333.0,
                          lmbda: float = 0.95) -> TensorDictBase:
        """The critic loss on a ``[B, T]`` replay sequence: state ``k`` regresses on the lambda-return of the
        rewards from ``k + 1`` bootstrapped with ``bootstrap`` (each state's first imagined return), discount
        ``1 - 1 / horizon``; the last step and episode ends are masked. Gradients reach the input features.

        Returns:
            a TensorDict with the unweighted ``loss_replay_value``.
        """
        keys = self._tensor_keys
        done = self._get(tensordict, ("next", keys.done))
        target = _replay_value_target(
            self._get(tensordict, ("next", keys.reward)), done, self._get(tensordict, ("next", keys.terminated)),
            self._get(tensordict, keys.bootstrap), horizon, lmbda,
        )
        weight = ~done.squeeze(-1)[..., :-1]
        selected = self._call("value_model", tensordict.select(*self.value_model.in_keys, strict=False))
        pred = (self._get(selected, keys.value_logits)[..., :-1, :] if self.value_loss == "two_hot"
                else self._get(selected, keys.value)[..., :-1, 0])
        loss = self._step_loss(pred, target)
        if self.slow_critic_regularization:
            with torch.no_grad():
                slow_td = self._call("value_model", tensordict.select(*self.value_model.in_keys, strict=False),
                                     "target")
            loss = loss + self.slow_critic_regularization * self._step_loss(pred, slow_td.get(keys.value)[..., :-1, 0])
        return TensorDict(loss_replay_value=self._reduce(weight.to(loss.dtype) * loss))
