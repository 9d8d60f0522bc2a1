"""Value-estimator modules: ``TD0Estimator``, ``TD1Estimator``, ``TDLambdaEstimator``, ``GAE``, ``VTrace``.

Thin wrappers around :mod:`tdrl.objectives.value.functional`: the keys, value-network calls and the
forward template live in :class:`ValueEstimatorBase`; each class only says which estimate it computes.
"""

from __future__ import annotations

import abc
import warnings
from typing import Any

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.nn import TensorDictModuleBase

from tdrl.objectives.value import functional as F
from tdrl.objectives.value._base import ValueEstimatorBase, _held_out, _standardize
from tdrl.objectives.value._value_net import ShiftedLayout

__all__ = [
    "GAE",
    "TD0Estimate",
    "TD0Estimator",
    "TD1Estimate",
    "TD1Estimator",
    "TDLambdaEstimate",
    "TDLambdaEstimator",
    "VTrace",
]


class _ReturnEstimator(ValueEstimatorBase):
    """Estimators whose advantage is ``value_target - value`` (TD(0), TD(1), TD(lambda))."""

    average_rewards: bool = False
    _reward_eps = 1e-5

    def _estimate(self, data, value, next_value, time_dim, layout):
        target = self.value_estimate(data, next_value=next_value, time_dim=time_dim)
        return target - value, target

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        target_params: TensorDictBase | None = None,
        next_value: torch.Tensor | None = None,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """The return estimate of ``tensordict`` (a critic's regression target).

        Args:
            tensordict: the trajectory, with ``("next", reward)`` and ``("next", done)``.
            target_params: parameters of the value network for ``s_{t+1}``.
            next_value: ``V(s_{t+1})``, if already computed (else read or computed).
            time_dim: the time dimension (see :meth:`forward`).
            **kwargs: ignored (TorchRL compatibility).

        Returns:
            the value target, shaped like the reward.
        """
        reward, done, terminated = self._signals(tensordict)
        gamma = self._gamma(tensordict, reward)
        if self.average_rewards:
            reward = self._standardize_rewards(tensordict, reward, self._reward_eps)
        if next_value is None:
            next_value = self._next_value(tensordict, target_params, kwargs)
        return self._returns(
            gamma, next_value, reward, done, terminated, self._get_time_dim(time_dim, tensordict)
        )

    @abc.abstractmethod
    def _returns(self, gamma, next_value, reward, done, terminated, time_dim) -> torch.Tensor:
        """The return estimate of the concrete estimator."""


class TD0Estimator(_ReturnEstimator):
    """One-step TD (TD(0)) return and advantage: ``r_t + gamma * (1 - terminated_t) * V(s_{t+1})``.

    Keyword Args:
        gamma: discount.
        value_network: the value module (``None``: read ``state_value`` entries from the input).
        average_rewards: standardize the rewards (written back) before computing the returns.
        **kwargs: the arguments of :class:`ValueEstimatorBase` (``shifted``, ``differentiable``,
            ``skip_existing``, ``device``, ``shifted_budget``, ``group_key``, value-network chunking, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> net = TensorDictModule(torch.nn.Linear(3, 1), ["obs"], ["state_value"])
        >>> est = TD0Estimator(gamma=0.9, value_network=net)
        >>> data = TensorDict({"obs": torch.randn(2, 5, 3), "next": {"obs": torch.randn(2, 5, 3),
        ...     "reward": torch.randn(2, 5, 1), "done": torch.zeros(2, 5, 1, dtype=torch.bool)}}, [2, 5])
        >>> est(data)["advantage"].shape
        torch.Size([2, 5, 1])
    """

    def __init__(
        self,
        *,
        gamma: float | torch.Tensor,
        value_network: TensorDictModuleBase | None,
        average_rewards: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(value_network=value_network, **kwargs)
        self._buffer("gamma", gamma)
        self.average_rewards = average_rewards

    def _returns(self, gamma, next_value, reward, done, terminated, time_dim):
        return F.td0_return_estimate(gamma, next_value, reward, done if terminated is None else terminated)


class TD1Estimator(_ReturnEstimator):
    """TD(1) (discounted Monte-Carlo, bootstrapped at truncations) return and advantage.

    Keyword Args:
        gamma: discount.
        value_network: the value module (``None``: read ``state_value`` entries from the input).
        average_rewards: standardize the rewards (written back) before computing the returns.
        time_dim: the time dimension of the inputs (default: named ``"time"`` dim, else the last).
        **kwargs: the arguments of :class:`ValueEstimatorBase` (``shifted``, ``differentiable``,
            ``skip_existing``, ``device``, ``shifted_budget``, ``group_key``, value-network chunking, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> est = TD1Estimator(gamma=0.5, value_network=None)
        >>> data = TensorDict({"state_value": torch.zeros(1, 3, 1), "next": {"state_value": torch.zeros(1, 3, 1),
        ...     "reward": torch.ones(1, 3, 1), "done": torch.zeros(1, 3, 1, dtype=torch.bool)}}, [1, 3])
        >>> est(data)["value_target"].flatten()
        tensor([1.7500, 1.5000, 1.0000])
    """

    def __init__(
        self,
        *,
        gamma: float | torch.Tensor,
        value_network: TensorDictModuleBase | None,
        average_rewards: bool = False,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(value_network=value_network, **kwargs)
        self._buffer("gamma", gamma)
        self.average_rewards = average_rewards
        self.time_dim = time_dim

    def _returns(self, gamma, next_value, reward, done, terminated, time_dim):
        return F.vec_td1_return_estimate(gamma, next_value, reward, done, terminated, time_dim=time_dim)


class TDLambdaEstimator(_ReturnEstimator):
    """TD(lambda) return and advantage.

    Keyword Args:
        gamma: discount.
        lmbda: lambda in ``[0, 1]``.
        value_network: the value module (``None``: read ``state_value`` entries from the input).
        average_rewards: standardize the rewards (written back) before computing the returns.
        vectorized: use the parallel scan (default) or the step-by-step loop; same values.
        time_dim: the time dimension of the inputs (default: named ``"time"`` dim, else the last).
        **kwargs: the arguments of :class:`ValueEstimatorBase` (``shifted``, ``differentiable``,
            ``skip_existing``, ``device``, ``shifted_budget``, ``group_key``, value-network chunking, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> est = TDLambdaEstimator(gamma=0.5, lmbda=0.5, value_network=None)
        >>> data = TensorDict({"state_value": torch.zeros(1, 2, 1), "next": {"state_value": torch.ones(1, 2, 1),
        ...     "reward": torch.ones(1, 2, 1), "done": torch.zeros(1, 2, 1, dtype=torch.bool)}}, [1, 2])
        >>> est(data)["value_target"].flatten()
        tensor([1.6250, 1.5000])
    """

    lmbda: torch.Tensor  # a registered buffer (nn.Module types it Tensor | Module)

    _reward_eps = 1e-4

    def __init__(
        self,
        *,
        gamma: float | torch.Tensor,
        lmbda: float | torch.Tensor,
        value_network: TensorDictModuleBase | None,
        average_rewards: bool = False,
        vectorized: bool = True,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(value_network=value_network, **kwargs)
        self._buffer("gamma", gamma)
        self._buffer("lmbda", lmbda)
        self.average_rewards = average_rewards
        self.vectorized = vectorized
        self.time_dim = time_dim

    def _returns(self, gamma, next_value, reward, done, terminated, time_dim):
        fn = F.vec_td_lambda_return_estimate if self.vectorized else F.td_lambda_return_estimate
        lmbda = self.lmbda.to(reward.device)
        return fn(gamma, lmbda, next_value, reward, done, terminated, time_dim=time_dim)


class GAE(ValueEstimatorBase):
    """Generalized advantage estimate module (https://arxiv.org/abs/1506.02438).

    Keyword Args:
        gamma: discount.
        lmbda: GAE lambda in ``[0, 1]``.
        value_network: the value module (``None``: read ``state_value`` entries from the input).
        average_gae: standardize the advantages (value targets are left as computed).
        vectorized: use the parallel scan (default, ``None`` means ``True``) or the step-by-step loop.
        time_dim: the time dimension of the inputs (default: named ``"time"`` dim, else the last).
        auto_reset_env: rewards of truncated steps (``("next", "truncated")``) get ``gamma * V(s_t)``
            added and the trajectory is cut without bootstrapping (for auto-resetting envs whose next
            observation is the reset one).
        **kwargs: the arguments of :class:`ValueEstimatorBase` (``shifted``, ``differentiable``,
            ``skip_existing``, ``device``, ``shifted_budget``, ``group_key``, value-network chunking, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> net = TensorDictModule(torch.nn.Linear(3, 1), ["obs"], ["state_value"])
        >>> gae = GAE(gamma=0.99, lmbda=0.95, value_network=net)
        >>> data = TensorDict({"obs": torch.randn(4, 10, 3), "next": {"obs": torch.randn(4, 10, 3),
        ...     "reward": torch.randn(4, 10, 1), "done": torch.zeros(4, 10, 1, dtype=torch.bool)}}, [4, 10])
        >>> sorted(k for k in gae(data).keys() if k != "next")
        ['advantage', 'obs', 'state_value', 'value_target']
    """

    lmbda: torch.Tensor  # a registered buffer (nn.Module types it Tensor | Module)

    def __init__(
        self,
        *,
        gamma: float | torch.Tensor,
        lmbda: float | torch.Tensor,
        value_network: TensorDictModuleBase | None,
        average_gae: bool = False,
        vectorized: bool | None = None,
        time_dim: int | None = None,
        auto_reset_env: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(value_network=value_network, **kwargs)
        self._buffer("gamma", gamma)
        self._buffer("lmbda", lmbda)
        self.average_gae = average_gae
        self.vectorized = vectorized
        self.time_dim = time_dim
        self.auto_reset_env = auto_reset_env

    def _gae(self, data, value, next_value, time_dim):
        reward, done, terminated = self._signals(data)
        if terminated is None:
            terminated = done
        reward, done, terminated = self._prepare_signals(reward, done, terminated, value)
        gamma = self._gamma(data, reward)
        if self.auto_reset_env:
            truncated = self._prepare_signals(data.get(("next", "truncated")), done, done, value)[0]
            reward = reward + gamma * value * truncated
            terminated = done
        fn = (
            F.generalized_advantage_estimate
            if self.vectorized is False
            else F.vec_generalized_advantage_estimate
        )
        lmbda = self.lmbda.to(reward.device)
        return fn(gamma, lmbda, value, next_value, reward, done, terminated, time_dim=time_dim)

    def _prepare_signals(
        self, reward: torch.Tensor, done: torch.Tensor, terminated: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Hook to reshape the reward and flags to the value's shape (identity here)."""
        return reward, done, terminated

    def _normalize_advantage(
        self, advantage: torch.Tensor, valid: torch.Tensor | None, groups: torch.Tensor | None
    ) -> torch.Tensor:
        """``average_gae``: one mean and standard deviation (per group) over the whole advantage."""
        return _standardize(advantage, groups, valid, 1e-4)

    def _estimate(self, data, value, next_value, time_dim, layout: ShiftedLayout | None):
        advantage, value_target = self._gae(data, value, next_value, time_dim)
        if self.average_gae:
            valid = None if layout is None else layout.valid
            advantage = self._normalize_advantage(advantage, valid, self._group_ids(data))
        return advantage, value_target

    def value_estimate(  # type: ignore[override]  # TorchRL's GAE takes params before target_params
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """The GAE value target (``advantage + V(s_t)``) of ``tensordict``, values computed as in forward.

        Args:
            tensordict: the trajectory.
            params: functional parameters of the value network.
            target_params: parameters for ``s_{t+1}``.
            time_dim: the time dimension.
            **kwargs: ignored (TorchRL compatibility).

        Returns:
            the value target.
        """
        if tensordict.batch_dims < 1:
            raise RuntimeError(
                f"GAE expects a tensordict with a time dimension, got {tuple(tensordict.batch_size)}"
            )
        time_dim = self._get_time_dim(time_dim, tensordict)
        value, next_value, layout = self._values(tensordict, params, target_params, time_dim)
        return self._gae(self._prepare_shifted(tensordict, layout), value, next_value, time_dim)[1]


class VTrace(ValueEstimatorBase):
    """V-trace off-policy advantages and value targets (https://arxiv.org/abs/1802.01561).

    The behaviour log-probabilities are read from ``sample_log_prob``; the current ones come from
    ``actor_network`` (its distribution's ``log_prob`` of the taken action).

    Keyword Args:
        gamma: discount (a scalar).
        actor_network: the current policy (a probabilistic tensordict module with ``get_dist``).
        value_network: the value module (``None``: read ``state_value`` entries from the input).
        rho_thresh: clipping of the importance weights in the TD errors.
        c_thresh: clipping of the importance weights in the trace.
        average_adv: standardize the advantages.
        time_dim: the time dimension of the inputs.
        **kwargs: the arguments of :class:`ValueEstimatorBase` (``shifted``, ``differentiable``,
            ``skip_existing``, ``device``, ``shifted_budget``, ``group_key``, value-network chunking, ...).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.modules import OneHotCategorical, ProbabilisticActor
        >>> actor = ProbabilisticActor(TensorDictModule(torch.nn.Linear(3, 2), ["obs"], ["logits"]),
        ...                            in_keys=["logits"], distribution_class=OneHotCategorical)
        >>> value = TensorDictModule(torch.nn.Linear(3, 1), ["obs"], ["state_value"])
        >>> vtrace = VTrace(gamma=0.99, actor_network=actor, value_network=value)
        >>> T = 4
        >>> data = TensorDict({"obs": torch.randn(T, 3), "action": torch.eye(2)[torch.tensor([0, 1, 1, 0])],
        ...     "action_log_prob": torch.full((T, 1), -0.69), "next": {"obs": torch.randn(T, 3),
        ...     "reward": torch.ones(T, 1), "done": torch.zeros(T, 1, dtype=torch.bool),
        ...     "terminated": torch.zeros(T, 1, dtype=torch.bool)}}, [T])
        >>> out = vtrace(data)
        >>> out["advantage"].shape, out["value_target"].shape
        (torch.Size([4, 1]), torch.Size([4, 1]))
    """

    rho_thresh: torch.Tensor  # registered buffers (nn.Module types them Tensor | Module)
    c_thresh: torch.Tensor

    def __init__(
        self,
        *,
        gamma: float | torch.Tensor,
        actor_network: TensorDictModuleBase,
        value_network: TensorDictModuleBase | None,
        rho_thresh: float | torch.Tensor = 1.0,
        c_thresh: float | torch.Tensor = 1.0,
        average_adv: bool = False,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(value_network=value_network, **kwargs)
        if isinstance(gamma, torch.Tensor) and gamma.numel() != 1:
            raise ValueError(f"VTrace: gamma must be a scalar, got a tensor of shape {tuple(gamma.shape)}")
        self._buffer("gamma", gamma)
        self._buffer("rho_thresh", rho_thresh)
        self._buffer("c_thresh", c_thresh)
        self.average_adv = average_adv
        self.actor_network = actor_network
        self.time_dim = time_dim

    @property  # type: ignore[misc]  # TensorDictModuleBase declares it an attribute
    def in_keys(self) -> list:
        return [*super().in_keys, self.tensor_keys.sample_log_prob]

    @classmethod
    def for_loss(cls, loss_module: torch.nn.Module, **hyperparams: Any) -> VTrace:
        """Builds the estimator from a loss's critic and actor (``hyperparams`` override them)."""
        hyperparams.setdefault("actor_network", loss_module.actor_network)
        return super().for_loss(loss_module, **hyperparams)

    def _log_probs(self, data: TensorDictBase, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lp = data.get(self.tensor_keys.sample_log_prob, None)
        if lp is None:
            raise KeyError(
                f"VTrace needs the behaviour log-probabilities at {self.tensor_keys.sample_log_prob!r} (rename with "
                f"set_keys(sample_log_prob=...)); the data has {sorted(map(str, data.keys()))}"
            )
        if is_tensor_collection(lp):
            lp = lp.sum(dim="feature", reduce=True)
        actor: Any = self.actor_network  # a probabilistic module or sequence: get_dist is on both
        with _held_out(actor, None):
            dist = actor.get_dist(data.select(*actor.in_keys, strict=False))
            action_keys = getattr(actor, "dist_sample_keys", None) or ["action"]
            log_pi = dist.log_prob(data.get(action_keys[0]))
        if log_pi.numel() != like.numel():  # per-dimension log-probs: sum over the action dims
            log_pi = log_pi.reshape(*data.batch_size, -1).sum(-1)
        return log_pi.reshape(like.shape), lp.reshape(like.shape)

    def _estimate(self, data, value, next_value, time_dim, layout: ShiftedLayout | None):
        reward, done, terminated = self._signals(data)
        log_pi, log_mu = self._log_probs(data, value)
        advantage, value_target = F.vtrace_advantage_estimate(
            self._gamma(data, reward), log_pi, log_mu, value, next_value, reward, done, terminated,
            rho_thresh=self.rho_thresh, c_thresh=self.c_thresh, time_dim=time_dim,
        )  # fmt: skip
        if self.average_adv:
            advantage = _standardize(advantage, self._group_ids(data), None, 1e-5)
        return advantage, value_target

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        target_params: TensorDictBase | None = None,
        next_value: torch.Tensor | None = None,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """The V-trace value target ``vs`` of ``tensordict`` (runs the full forward computation).

        Args:
            tensordict: the trajectory.
            target_params: unused (TorchRL compatibility).
            next_value: unused; values are computed or read as in :meth:`forward`.
            time_dim: the time dimension.
            **kwargs: ignored.

        Returns:
            the value target.
        """
        return self.forward(tensordict.copy(), time_dim=time_dim).get(self.tensor_keys.value_target)


_ALIAS_DOC = """Deprecated alias of :class:`{new}` (TorchRL's old name); building one warns.

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     estimator = {name}({args})
        >>> isinstance(estimator, {new}), "please use {new}" in str(caught[0].message)
        (True, True)
    """


def _deprecated_alias(new_cls: type, name: str, args: str) -> type:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"class {name} is deprecated, please use {new_cls.__name__} instead.", stacklevel=2)
        new_cls.__init__(self, *args, **kwargs)  # type: ignore[misc]  # the alias's own base class

    return type(
        name,
        (new_cls,),
        {"__init__": __init__, "__doc__": _ALIAS_DOC.format(new=new_cls.__name__, name=name, args=args)},
    )


TD0Estimate = _deprecated_alias(TD0Estimator, "TD0Estimate", "gamma=0.9, value_network=None")
TD1Estimate = _deprecated_alias(TD1Estimator, "TD1Estimate", "gamma=0.9, value_network=None")
TDLambdaEstimate = _deprecated_alias(TDLambdaEstimator, "TDLambdaEstimate", "gamma=0.9, lmbda=0.95, value_network=None")
