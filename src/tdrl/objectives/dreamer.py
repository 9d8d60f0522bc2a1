"""Dreamer (v1) losses: world model (KL + reconstruction + reward), actor (imagined lambda-returns), value.

Hafner et al., "Dream to Control: Learning Behaviors by Latent Imagination", https://arxiv.org/abs/1912.01603.
Each loss returns ``(losses, data)`` as in TorchRL: the model loss hands on the posterior states it computed,
the actor loss the imagined trajectory (with ``"lambda_target"``) that the value loss regresses on. Loss terms
are shaped ``[1]`` (model loss) or ``[]`` (actor, value), as in TorchRL 0.14.1.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tensordict.utils import NestedKey

from tdrl.envs.model_based.dreamer import DreamerEnv
from tdrl.envs.step_mdp import step_mdp
from tdrl.envs.utils import ExplorationType, set_exploration_type
from tdrl.objectives._finite import CHECK_FINITE
from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import ValueEstimators, distance_loss, hold_out_net

__all__ = ["DreamerActorLoss", "DreamerModelLoss", "DreamerValueLoss"]

_Distance = Literal["l1", "l2", "smooth_l1"]


def _time_discount(gamma: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``[1, gamma, gamma**2, ...]`` along dim -2 (time) of ``like`` (``[*batch, T, 1]``)."""
    discount = torch.as_tensor(gamma, dtype=like.dtype, device=like.device).expand(like.shape).clone()
    discount[..., 0, :] = 1
    return discount.cumprod(dim=-2)


def _check_distance(owner: str, name: str, value: str) -> _Distance:
    if value not in ("l1", "l2", "smooth_l1"):
        raise ValueError(f"{owner}: {name} must be 'l1', 'l2' or 'smooth_l1', got {value!r}")
    return cast(_Distance, value)


class DreamerModelLoss(LossModule["DreamerModelLoss._AcceptedKeys"]):
    """World-model loss of Dreamer: ``loss_model_kl``, ``loss_model_reco``, ``loss_model_reward``.

    The world model is ``TensorDictSequential(TensorDictSequential(encoder, rssm_rollout, decoder),
    reward_model)``; it reads a ``[B, T]`` batch and writes, under ``"next"``, the prior and posterior
    parameters, the reconstruction and the predicted reward (the true one is moved to ``true_reward`` first).

    * KL: ``KL(posterior || prior)`` of the diagonal Gaussians, summed over the state (unless
      ``global_average``), clamped below at ``free_nats`` per element (or after averaging with
      ``delayed_clamp``), averaged.
    * reconstruction: ``reco_loss`` between pixels and reconstruction, summed over ``C, H, W`` (unless
      ``global_average``), averaged.
    * reward: ``reward_loss`` between true and predicted reward, averaged.

    Args:
        world_model: the world model described above.

    Keyword Args:
        lambda_kl: weight of the KL term.
        lambda_reco: weight of the reconstruction term.
        lambda_reward: weight of the reward term.
        reco_loss: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        reward_loss: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        free_nats: the KL floor.
        delayed_clamp: clamp the averaged KL instead of each element.
        global_average: average every term over all dims instead of summing the non-batch ones.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod, TensorDictSequential as Seq
        >>> def fake_rssm(obs):  # prior N(0, 1), posterior N(obs, 1) (KL 0.5 per dim), reconstruction = obs
        ...     return torch.zeros_like(obs), torch.ones_like(obs), obs, torch.ones_like(obs), obs
        >>> model = Seq(
        ...     Seq(Mod(fake_rssm, [("next", "pixels")], [("next", "prior_mean"), ("next", "prior_std"),
        ...         ("next", "posterior_mean"), ("next", "posterior_std"), ("next", "reco_pixels")])),
        ...     Mod(lambda m: m.mean((-3, -2, -1)).unsqueeze(-1), [("next", "posterior_mean")],
        ...         [("next", "reward")]))
        >>> loss = DreamerModelLoss(model, free_nats=0)
        >>> data = TensorDict({("next", "pixels"): torch.ones(2, 3, 1, 2, 2),
        ...     ("next", "reward"): torch.ones(2, 3, 1)}, [2, 3])
        >>> losses, _ = loss(data)
        >>> losses["loss_model_kl"], losses["loss_model_reco"], losses["loss_model_reward"]
        (tensor([1.]), tensor([0.]), tensor([0.]))
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerModelLoss` (all read under ``"next"``)."""

        reward: NestedKey = "reward"
        true_reward: NestedKey = "true_reward"
        prior_mean: NestedKey = "prior_mean"
        prior_std: NestedKey = "prior_std"
        posterior_mean: NestedKey = "posterior_mean"
        posterior_std: NestedKey = "posterior_std"
        pixels: NestedKey = "pixels"
        reco_pixels: NestedKey = "reco_pixels"

    def __init__(
        self,
        world_model: TensorDictModule,
        *,
        lambda_kl: float = 1.0,
        lambda_reco: float = 1.0,
        lambda_reward: float = 1.0,
        reco_loss: _Distance | None = None,
        reward_loss: _Distance | None = None,
        free_nats: int = 3,
        delayed_clamp: bool = False,
        global_average: bool = False,
    ) -> None:
        super().__init__()
        self.world_model = world_model
        self.reco_loss: _Distance = _check_distance("DreamerModelLoss", "reco_loss", reco_loss or "l2")
        self.reward_loss: _Distance = _check_distance("DreamerModelLoss", "reward_loss", reward_loss or "l2")
        self.lambda_kl = lambda_kl
        self.lambda_reco = lambda_reco
        self.lambda_reward = lambda_reward
        self.free_nats = free_nats
        self.delayed_clamp = delayed_clamp
        self.global_average = global_average
        # Views on the parts (not registered twice in the state dict).
        parts = cast(Any, world_model)
        self.__dict__["decoder"] = parts[0][-1]
        self.__dict__["reward_model"] = parts[1]

    def _collect_in_keys(self) -> list[NestedKey]:
        keys = self._tensor_keys
        return [*self.world_model.in_keys, ("next", keys.reward), ("next", keys.pixels)]

    def _out_keys(self) -> list[str]:
        return ["loss_model_kl", "loss_model_reco", "loss_model_reward"]

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self._tensor_keys
        given = tensordict
        self._get(given, ("next", keys.pixels))
        self._get(given, ("next", keys.reward))
        tensordict = tensordict.copy()
        tensordict.rename_key_(("next", keys.reward), ("next", keys.true_reward))
        tensordict = self.world_model(tensordict)

        kl = self.kl_loss(
            self._get(tensordict, ("next", keys.prior_mean)),
            self._get(tensordict, ("next", keys.prior_std)),
            self._get(tensordict, ("next", keys.posterior_mean)),
            self._get(tensordict, ("next", keys.posterior_std)),
        ).unsqueeze(-1)

        pixels = self._get(tensordict, ("next", keys.pixels)).contiguous()
        reco = distance_loss(pixels, self._get(tensordict, ("next", keys.reco_pixels)).contiguous(), self.reco_loss)
        if not self.global_average:
            reco = reco.sum((-3, -2, -1))
        reco = reco.mean().unsqueeze(-1)

        reward = distance_loss(
            self._get(tensordict, ("next", keys.true_reward)),
            self._get(tensordict, ("next", keys.reward)),
            self.reward_loss,
        )
        if not self.global_average:
            reward = reward.squeeze(-1)
        reward = reward.mean().unsqueeze(-1)

        losses = self._finalize(given, {
            "loss_model_kl": self.lambda_kl * kl,
            "loss_model_reco": self.lambda_reco * reco,
            "loss_model_reward": self.lambda_reward * reward,
        })
        return losses, tensordict.data

    @staticmethod
    def normal_log_probability(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        """Gaussian log-density without its ``-log(2 pi) / 2`` constant."""
        return -0.5 * ((x.to(mean.dtype) - mean) / std).pow(2) - std.log()

    def kl_loss(
        self, prior_mean: torch.Tensor, prior_std: torch.Tensor, posterior_mean: torch.Tensor,
        posterior_std: torch.Tensor,
    ) -> torch.Tensor:
        """``KL(N(posterior) || N(prior))`` reduced and clamped at ``free_nats`` as the class describes."""
        kl = (
            torch.log(prior_std / posterior_std)
            + (posterior_std**2 + (prior_mean - posterior_mean) ** 2) / (2 * prior_std**2)
            - 0.5
        )
        if not self.global_average:
            kl = kl.sum(-1)
        if self.delayed_clamp:
            return kl.mean().clamp_min(self.free_nats)
        return kl.clamp_min(self.free_nats).mean()


class DreamerActorLoss(LossModule["DreamerActorLoss._AcceptedKeys"]):
    """Actor loss of Dreamer: minus the (discounted) lambda-return of trajectories imagined from the
    posterior states, backpropagated through the world model.

    From each ``("state", belief)`` of the batch the actor is rolled out ``imagination_horizon`` steps in
    ``model_based_env`` (the env's parameters frozen, actions sampled); ``value_model`` (frozen) values the
    next states; the lambda-return (TD(lambda), no termination) is ``"lambda_target"`` of the returned
    trajectory. ``loss_actor = -mean_batch(sum_t discount_t * lambda_target_t)`` with ``discount_t = gamma**t``
    when ``discount_loss``.

    Args:
        actor_model: the policy (``("state", "belief") -> "action"``, probabilistic).
        value_model: the value network (writes ``"state_value"``); held, not trained, by this loss.
        model_based_env: the :class:`~tdrl.envs.model_based.DreamerEnv` imagining the trajectories.

    Keyword Args:
        imagination_horizon: imagined steps.
        discount_loss: discount the returns along the horizon.
        gamma: removed; must be ``None`` (use ``make_value_estimator(gamma=...)``).
        lmbda: removed; must be ``None``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Composite, Unbounded
        >>> from tdrl.envs.model_based import DreamerEnv
        >>> from tdrl.modules import WorldModelWrapper
        >>> env = DreamerEnv(WorldModelWrapper(
        ...     Mod(lambda s, b, a: (s + a, b), ["state", "belief", "action"], ["state", "belief"]),
        ...     Mod(lambda s: s.sum(-1, keepdim=True), ["state"], ["reward"])), prior_shape=(2,), belief_shape=(2,))
        >>> env.observation_spec = Composite(state=Unbounded((2,)), belief=Unbounded((2,)))
        >>> env.state_spec = Composite(state=Unbounded((2,)), belief=Unbounded((2,)))
        >>> env.action_spec = Unbounded((2,))
        >>> env.reward_spec = Unbounded((1,))
        >>> actor = Mod(torch.nn.Linear(2, 2), ["state"], ["action"])
        >>> value = Mod(torch.nn.Linear(2, 1), ["state"], ["state_value"])
        >>> loss = DreamerActorLoss(actor, value, env, imagination_horizon=4)
        >>> losses, fake = loss(TensorDict({"state": torch.randn(3, 2), "belief": torch.randn(3, 2)}, [3]))
        >>> losses["loss_actor"].shape, fake["lambda_target"].shape
        (torch.Size([]), torch.Size([3, 4, 1]))
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerActorLoss`."""

        belief: NestedKey = "belief"
        reward: NestedKey = "reward"
        value: NestedKey = "state_value"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    default_value_estimator = ValueEstimators.TDLambda
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.TD0, ValueEstimators.TD1, ValueEstimators.TDLambda)
    _value_estimator_keys = ("value",)

    def __init__(
        self,
        actor_model: TensorDictModule,
        value_model: TensorDictModule,
        model_based_env: DreamerEnv,
        *,
        imagination_horizon: int = 15,
        discount_loss: bool = True,
        gamma: float | None = None,
        lmbda: float | None = None,
    ) -> None:
        if gamma is not None or lmbda is not None:
            raise TypeError("gamma and lmbda are no longer loss arguments; use loss.make_value_estimator(gamma=..., "
                            "lmbda=...)")
        super().__init__()
        self.actor_model = actor_model
        self.__dict__["value_model"] = value_model
        self.model_based_env = model_based_env
        self.imagination_horizon = imagination_horizon
        self.discount_loss = discount_loss

    def _collect_in_keys(self) -> list[NestedKey]:
        return ["state", self._tensor_keys.belief]

    def _out_keys(self) -> list[str]:
        return ["loss_actor"]

    def _value_estimator_hp(self, value_type: ValueEstimators) -> dict[str, Any]:
        # The next values are computed by this loss; the estimator only combines them.
        hp: dict[str, Any] = {"value_network": None}
        if value_type is ValueEstimators.TDLambda:
            hp["vectorized"] = True
        return hp

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        belief_key = self._tensor_keys.belief
        for key in ("state", belief_key):
            self._get(tensordict, key)
        start = tensordict.select("state", belief_key).data
        if self.check_finite or CHECK_FINITE[0]:
            # Before imagining: a NaN start state would otherwise surface as a NaN imagined reward.
            self._assert_finite("input", start)
        with hold_out_net(self.model_based_env), set_exploration_type(ExplorationType.RANDOM):
            start = self.model_based_env.reset(start.copy())
            fake_data = self.model_based_env.rollout(
                max_steps=self.imagination_horizon, policy=self.actor_model, auto_reset=False, tensordict=start,
            )
            next_td = step_mdp(fake_data, keep_other=True)
            with hold_out_net(self.value_model):
                next_td = self.value_model(next_td)
        reward = fake_data.get(("next", self._tensor_keys.reward))
        lambda_target = self.lambda_target(reward, next_td.get(self._tensor_keys.value))
        fake_data.set("lambda_target", lambda_target)
        if self.discount_loss:
            discount = _time_discount(self.value_estimator.gamma, lambda_target)
            actor_loss = -(lambda_target * discount).sum((-2, -1)).mean()
        else:
            actor_loss = -lambda_target.sum((-2, -1)).mean()
        return self._finalize(tensordict, {"loss_actor": actor_loss}), fake_data.data

    def lambda_target(self, reward: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """The value estimator's return from ``reward`` and next-state ``value`` (``[*batch, T, 1]``), never
        done."""
        keys = self._tensor_keys
        flags = torch.zeros(reward.shape, dtype=torch.bool, device=reward.device)
        data = TensorDict(
            {
                ("next", keys.reward): reward,
                ("next", keys.value): value,
                ("next", keys.done): flags,
                ("next", keys.terminated): flags.clone(),
            },
            reward.shape[:-1],
        )
        return self.value_estimator.value_estimate(data, next_value=value, time_dim=reward.ndim - 2)


class DreamerValueLoss(LossModule["DreamerValueLoss._AcceptedKeys"]):
    """Value loss of Dreamer: ``value_loss`` between ``value_model`` on the imagined states and their
    ``"lambda_target"`` (from :class:`DreamerActorLoss`), summed over time (discounted by ``gamma**t`` when
    ``discount_loss``), averaged over the batch.

    Args:
        value_model: the value network (writes ``"state_value"``).
        value_loss: ``"l2"`` (default), ``"l1"`` or ``"smooth_l1"``.
        discount_loss: discount along the horizon.
        gamma: the discount.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> value = Mod(lambda s: s.sum(-1, keepdim=True), ["state"], ["state_value"])
        >>> fake = TensorDict({"state": torch.zeros(2, 3, 4), "lambda_target": torch.ones(2, 3, 1)}, [2, 3])
        >>> losses, _ = DreamerValueLoss(value, gamma=0.5)(fake)
        >>> losses["loss_value"]  # 1 + 0.5 + 0.25
        tensor(1.7500)
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DreamerValueLoss`."""

        value: NestedKey = "state_value"

    def __init__(
        self,
        value_model: TensorDictModule,
        value_loss: _Distance | None = None,
        discount_loss: bool = True,
        gamma: float = 0.99,
    ) -> None:
        super().__init__()
        self.value_model = value_model
        self.value_loss: _Distance = _check_distance("DreamerValueLoss", "value_loss", value_loss or "l2")
        self.gamma = gamma
        self.discount_loss = discount_loss

    def _collect_in_keys(self) -> list[NestedKey]:
        return [*self.value_model.in_keys, "lambda_target"]

    def _out_keys(self) -> list[str]:
        return ["loss_value"]

    def forward(self, fake_data: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        lambda_target = self._get(fake_data, "lambda_target")
        for key in self.value_model.in_keys:
            self._get(fake_data, key)
        selected = fake_data.select(*self.value_model.in_keys, strict=False)
        self.value_model(selected)
        err = distance_loss(self._get(selected, self._tensor_keys.value), lambda_target, self.value_loss)
        if self.discount_loss:
            err = _time_discount(self.gamma, lambda_target) * err
        value_loss = err.sum((-1, -2)).mean()
        return self._finalize(fake_data, {"loss_value": value_loss}), fake_data
