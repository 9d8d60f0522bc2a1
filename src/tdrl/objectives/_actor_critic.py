"""Machinery shared by the on-policy losses (A2C, PPO, REINFORCE): log-probs, entropy, critic loss.

When the actor and the critic start with the *same* module objects (a shared trunk, as in TorchRL's
benchmarks) and both run with their own parameters, the trunk runs once per forward and both heads read
its output: values and gradients are identical to running it twice.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, cast

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.nn import (
    CompositeDistribution,
    ProbabilisticTensorDictSequential,
    TensorDictModuleBase,
    TensorDictSequential,
    composite_lp_aggregate,
)
from tensordict.utils import NestedKey
from torch import Tensor
from torch import distributions as d

from tdrl.objectives._repeat import is_pure
from tdrl.objectives.common import LossModule, ParamSet
from tdrl.objectives.utils import LossFunction, distance_loss

__all__ = [
    "ActorCriticLossBase",
    "default_log_prob_key",
    "entropy_of",
    "head_entropies",
    "log_prob_of",
    "rsample_log_prob",
]

_ANALYTIC_ENTROPY: dict[type, bool] = {}


def default_log_prob_key() -> str:
    """``"sample_log_prob"`` when tensordict aggregates composite log-probs, else ``"action_log_prob"``.

    Examples:
        >>> default_log_prob_key() in ("sample_log_prob", "action_log_prob")
        True
    """
    return "sample_log_prob" if composite_lp_aggregate(nowarn=True) else "action_log_prob"


def _sum_leaves(value: Tensor | TensorDictBase, batch_ndim: int) -> Tensor:
    if not is_tensor_collection(value):
        return value
    total: Any = None
    for leaf in cast(TensorDictBase, value).values(True, True):
        while leaf.ndim > batch_ndim:
            leaf = leaf.sum(-1)
        total = leaf if total is None else total + leaf
    return total


def entropy_of(dist: d.Distribution, samples_mc: int, batch_ndim: int) -> Tensor:
    """Entropy of ``dist``: analytic when the distribution has it, else a reparameterised MC estimate.

    Examples:
        >>> entropy_of(d.Normal(torch.zeros(2), torch.ones(2)), 1, 1).shape
        torch.Size([2])
    """
    if isinstance(dist, CompositeDistribution):
        total: Any = None
        for e in head_entropies(dist, samples_mc, batch_ndim).values():
            e = _sum_leaves(e.flatten(batch_ndim, -1).sum(-1) if e.ndim > batch_ndim else e, batch_ndim)
            total = e if total is None else total + e
        return total
    analytic = _ANALYTIC_ENTROPY.get(type(dist))
    if analytic is None:
        try:
            dist.entropy()
            analytic = True
        except NotImplementedError:
            analytic = False
        _ANALYTIC_ENTROPY[type(dist)] = analytic
    if analytic:
        return dist.entropy()
    if dist.has_rsample:
        _, log_prob = rsample_log_prob(dist, (samples_mc,))
    else:
        log_prob = dist.log_prob(dist.sample((samples_mc,)))
    return -log_prob.mean(0)


def head_entropies(dist: CompositeDistribution, samples_mc: int, batch_ndim: int) -> dict[NestedKey, Tensor]:
    """Entropy of each head of a composite distribution, keyed like TorchRL's per-head entropies:
    ``"<head>_entropy"`` (``(*prefix, "<leaf>_entropy")`` for a nested head); feature dims are kept."""
    out: dict[NestedKey, Tensor] = {}
    for name, sub in dist.dists.items():
        key = f"{name}_entropy" if isinstance(name, str) else (*name[:-1], f"{name[-1]}_entropy")
        out[key] = entropy_of(sub, samples_mc, batch_ndim)
    return out


def rsample_log_prob(dist: d.Distribution, sample_shape: tuple[int, ...] = ()) -> tuple[Tensor, Tensor]:
    """A reparameterised sample and its log-probability (scored on the exact pre-image when the
    distribution offers ``rsample_and_log_prob``, as tanh-squashed ones do).

    Examples:
        >>> a, lp = rsample_log_prob(d.Normal(torch.zeros(2), torch.ones(2)))
        >>> a.shape, lp.shape
        (torch.Size([2]), torch.Size([2]))
    """
    fused = getattr(dist, "rsample_and_log_prob", None)
    if fused is not None:
        return fused(torch.Size(sample_shape))
    sample = dist.rsample(torch.Size(sample_shape))
    return sample, dist.log_prob(sample)


def log_prob_of(dist: d.Distribution, tensordict: TensorDictBase, action_key: NestedKey | list, batch_ndim: int) -> Tensor:
    """Log-probability of the stored action(s) under ``dist`` (summed over the heads of a composite).

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict(action=torch.zeros(3), batch_size=[3])
        >>> log_prob_of(d.Normal(torch.zeros(3), torch.ones(3)), td, "action", 1).shape
        torch.Size([3])
    """
    if isinstance(dist, CompositeDistribution):
        keys = [action_key] if not isinstance(action_key, list) else action_key
        return _sum_leaves(dist.log_prob(tensordict.select(*keys)), batch_ndim)
    action = tensordict.get(action_key, None)
    if action is None:
        raise KeyError(f"missing action entry {action_key!r}; the input holds {sorted(map(str, tensordict.keys(True, True)))}")
    return dist.log_prob(action)


def _shared_prefix(actor: TensorDictModuleBase, critic: TensorDictModuleBase):
    """``(prefix, actor_tail, critic_tail)`` when both start with the same module objects, else ``None``."""
    if not isinstance(actor, ProbabilisticTensorDictSequential) or not isinstance(critic, TensorDictSequential):
        return None
    a, c = list(actor.module), list(critic.module)
    k = 0
    while k < min(len(a) - 1, len(c) - 1) and a[k] is c[k]:
        k += 1
    if k == 0:
        return None
    return TensorDictSequential(*a[:k]), ProbabilisticTensorDictSequential(*cast(list[TensorDictModuleBase], a[k:])), TensorDictSequential(*c[k:])


class ActorCriticKeys(Protocol):
    """The keys every actor-critic loss declares (A2C, PPO and REINFORCE each in its own ``_AcceptedKeys``)."""

    advantage: NestedKey
    value_target: NestedKey
    value: NestedKey
    sample_log_prob: NestedKey | list[NestedKey] | None
    action: NestedKey | list[NestedKey]
    reward: NestedKey
    done: NestedKey
    terminated: NestedKey


_ACKeysT = TypeVar("_ACKeysT", bound=ActorCriticKeys)


class ActorCriticLossBase(LossModule[_ACKeysT]):
    """Base of A2C / PPO / REINFORCE: converts the networks and runs actor and critic on one batch."""

    actor_network: ProbabilisticTensorDictSequential
    critic_network: TensorDictModuleBase | None

    _functional = True

    @property
    def functional(self) -> bool:
        """The ``functional`` constructor flag (TorchRL's attribute; tdrl computes the same either way)."""
        return self._functional

    def _setup_networks(
        self,
        actor_network: TensorDictModuleBase,
        critic_network: TensorDictModuleBase | None,
        *,
        separate_losses: bool,
        delay_actor: bool = False,
        delay_value: bool = False,
    ) -> None:
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{type(self).__name__}: actor_network must be a probabilistic module with get_dist() "
                f"(e.g. ProbabilisticActor), got {type(actor_network).__name__}"
            )
        self.separate_losses = separate_losses
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        if critic_network is not None:
            shared = list(actor_network.parameters()) if separate_losses else None
            self.convert_to_functional(
                critic_network, "critic_network", compare_against=shared, create_target_params=delay_value
            )
        else:
            self.__dict__["critic_network"] = None
        self._prefix = None
        if critic_network is not None and not separate_losses:
            split = _shared_prefix(actor_network, critic_network)
            stateful = self._stateful["actor_network"] and self._stateful["critic_network"]
            # One trunk output for both heads only when a second call would give the same (no dropout, no
            # batch-norm statistics).
            if split is not None and stateful and is_pure(split[0]):
                self.__dict__["_prefix"] = split
        log_prob_keys = getattr(actor_network, "log_prob_keys", None)
        sample_keys = getattr(actor_network, "dist_sample_keys", None)
        if log_prob_keys and sample_keys:
            if len(log_prob_keys) > 1:
                self.set_keys(sample_log_prob=list(log_prob_keys), action=list(sample_keys))
            else:
                self.set_keys(sample_log_prob=log_prob_keys[0], action=sample_keys[0])
        if critic_network is not None:
            # Built now rather than on first use: torch.compile(loss) may trace the very first call, and
            # creating a module inside a traced forward breaks fullgraph compilation.
            try:
                self.make_value_estimator(self.default_value_estimator)
            except KeyError:
                # The critic writes another value key (a multi-agent ("agents", "state_value")) that the caller
                # names with set_keys next, as in TorchRL, where the estimator is built on first use: so is it here.
                self._value_estimator = None

    def _init_keys_default(self) -> None:
        if self._tensor_keys.sample_log_prob is None:
            self._tensor_keys.sample_log_prob = default_log_prob_key()

    def _value_estimator_hp(self, value_type) -> dict:
        hp = {"value_network": self.critic_network}
        if value_type.name == "VTrace":
            hp["actor_network"] = self.actor_network
        return hp

    def _collect_in_keys(self) -> list[NestedKey]:
        k = self._tensor_keys
        keys: list[NestedKey] = list(self.actor_network.in_keys)
        keys += [("next", *((x,) if isinstance(x, str) else x)) for x in self.actor_network.in_keys]
        if self.critic_network is not None:
            keys += list(self.critic_network.in_keys)
        keys += k.action if isinstance(k.action, list) else [k.action]
        log_prob = k.sample_log_prob  # never None after the keys' __post_init__
        keys += log_prob if isinstance(log_prob, list) else [] if log_prob is None else [log_prob]
        keys += [("next", k.reward), ("next", k.done), ("next", k.terminated)]
        return keys

    def _advantage(self, tensordict: TensorDictBase) -> Tensor:
        """The input's advantage, computed by the value estimator when missing (written into ``tensordict``)."""
        adv = tensordict.get(self._tensor_keys.advantage, None)
        if adv is None:
            key = self._tensor_keys.advantage
            if self.critic_network is None:
                raise KeyError(
                    f"{type(self).__name__}: no {key!r} entry and no critic to compute it: run a value estimator "
                    f"first (GAE(gamma=..., lmbda=..., value_network=critic)(td)) or build the loss with a critic"
                )
            try:
                with torch.no_grad():
                    self.value_estimator(tensordict)
            except KeyError as err:
                raise KeyError(
                    f"{type(self).__name__}: no {key!r} entry, so the loss computes it with its value estimator, "
                    f"which failed: {err.args[0]}. Pass a full trajectory, or run a value estimator first "
                    f"(loss.value_estimator(td)) or GAE"
                ) from err
            adv = self._get(tensordict, key)
        return adv

    def _log_prob(self, dist: d.Distribution, td: TensorDictBase, batch_ndim: int) -> Tensor:
        """Summed log-probability of the stored action(s); a missing action names the expected keys."""
        key = self._tensor_keys.action
        if not isinstance(key, list) and not isinstance(dist, CompositeDistribution):
            action = self._get(td, key)
            if action.requires_grad:
                raise RuntimeError(f"the stored action {key!r} requires grad; detach it before the loss")
            return dist.log_prob(action)
        for k in key if isinstance(key, list) else [key]:
            self._get(td, k)
        return _sum_leaves(log_prob_of(dist, td, key, batch_ndim), batch_ndim)

    def _actor_dist(self, td: TensorDictBase, which: ParamSet = "params") -> d.Distribution:
        """Distribution of the actor on ``td`` (a shallow copy the caller owns; the trunk output stays in it)."""
        if self._prefix is not None and which == "params":
            prefix, actor_tail, _ = self._prefix
            prefix(td)
            return actor_tail.get_dist(td)
        with self._swap("actor_network", which):
            return self.actor_network.get_dist(td)

    def _state_value(self, td: TensorDictBase) -> Tensor:
        """Critic output on ``td`` (reuses the shared trunk output written by :meth:`_actor_dist`)."""
        if self._prefix is not None:
            return self._get(self._prefix[2](td), self._tensor_keys.value)
        critic = self.critic_network
        assert critic is not None, "the losses call the critic only when they have one"
        with self._swap("critic_network", "params"):
            out = critic(td)
        return self._get(out, self._tensor_keys.value)

    def _critic_loss(
        self, td: TensorDictBase, clip_value: Tensor | None, loss_type: LossFunction
    ) -> tuple[Tensor, Tensor | None, Tensor]:
        """``(loss, value_clip_fraction or None, state_value)`` of the critic."""
        target = self._get(td, self._tensor_keys.value_target)
        old_value = self._get(td, self._tensor_keys.value) if clip_value is not None else None
        if self.separate_losses:
            td = td.detach()
        value = self._state_value(td)
        loss = distance_loss(target, value, loss_type)
        clip_fraction = None
        if clip_value is not None:
            assert old_value is not None
            delta = value - old_value
            clipped = delta.clamp(-clip_value, clip_value)
            with torch.no_grad():
                clip_fraction = (delta != clipped).to(value.dtype).mean()
            loss = torch.maximum(loss, distance_loss(target, old_value + clipped, loss_type))
        return loss, clip_fraction, value
