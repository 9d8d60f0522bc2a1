"""Loss utilities: value-estimator enum, distance losses, reductions, context managers and the
target-network updaters (:class:`SoftUpdate`, :class:`HardUpdate`), as in ``torchrl.objectives.utils``."""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, cast

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

if TYPE_CHECKING:  # common imports this module
    from tdrl.objectives.common import LossModule

__all__ = [
    "HardUpdate",
    "KLAdaptiveLR",
    "add_random_module",
    "SoftUpdate",
    "TargetNetUpdater",
    "ValueEstimators",
    "default_value_kwargs",
    "distance_loss",
    "group_optimizers",
    "hold_out_net",
    "hold_out_params",
    "next_state_value",
]

LossFunction = Literal["l2", "l1", "smooth_l1"]

# Module types that draw random numbers in forward: a loss whose networks hold one vmaps its ensembles with
# randomness="different" (LossModule.vmap_randomness). add_random_module extends it.
RANDOM_MODULE_LIST: tuple[type[nn.Module], ...] = (nn.Dropout, nn.AlphaDropout, nn.FeatureAlphaDropout)


def add_random_module(module: type[nn.Module]) -> None:
    """Registers a module class as random, so that losses holding one vmap with ``randomness="different"``.

    Args:
        module: an ``nn.Module`` subclass whose forward draws random numbers (noise layers, custom dropout).

    Examples:
        >>> class Noise(nn.Module):
        ...     def forward(self, x):
        ...         return x + torch.randn_like(x)
        >>> add_random_module(Noise)
        >>> is_random_module(Noise())
        True
    """
    global RANDOM_MODULE_LIST
    if not (isinstance(module, type) and issubclass(module, nn.Module)):
        raise TypeError(f"add_random_module expects an nn.Module subclass, got {module!r}")
    if module not in RANDOM_MODULE_LIST:
        RANDOM_MODULE_LIST = (*RANDOM_MODULE_LIST, module)


def is_random_module(module: nn.Module) -> bool:
    """Whether ``module`` is an instance of a registered random module type (:func:`add_random_module`).

    Examples:
        >>> is_random_module(nn.Dropout(0.1)), is_random_module(nn.Linear(1, 1))
        (True, False)
    """
    return isinstance(module, RANDOM_MODULE_LIST)
Reduction = Literal["mean", "sum", "none"]


class ValueEstimators(Enum):
    """Which value estimator a loss builds with :meth:`LossModule.make_value_estimator`.

    Examples:
        >>> ValueEstimators.TD0.name
        'TD0'
    """

    TD0 = "Bootstrapped TD (1-step return)"
    TD1 = "TD(1) (infinity-step return)"
    TDLambda = "TD(lambda)"
    GAE = "Generalized advantage estimate"
    MAGAE = "Multi-agent generalized advantage estimate"
    VTrace = "V-trace"


_DEFAULT_VALUE_KWARGS: dict[ValueEstimators, dict[str, Any]] = {
    ValueEstimators.TD0: {"gamma": 0.99, "differentiable": True},
    ValueEstimators.TD1: {"gamma": 0.99, "differentiable": True},
    ValueEstimators.TDLambda: {"gamma": 0.99, "lmbda": 0.95, "differentiable": True},
    ValueEstimators.GAE: {"gamma": 0.99, "lmbda": 0.95, "differentiable": True},
    ValueEstimators.MAGAE: {"gamma": 0.99, "lmbda": 0.95, "differentiable": True},
    ValueEstimators.VTrace: {"gamma": 0.99, "differentiable": True},
}


def default_value_kwargs(value_type: ValueEstimators) -> dict[str, Any]:
    """Default hyperparameters of a value estimator type (a fresh dict each call).

    Args:
        value_type: the estimator type.

    Returns:
        ``{"gamma": 0.99, ...}`` as TorchRL sets them.

    Examples:
        >>> default_value_kwargs(ValueEstimators.TDLambda)
        {'gamma': 0.99, 'lmbda': 0.95, 'differentiable': True}
    """
    try:
        return dict(_DEFAULT_VALUE_KWARGS[value_type])
    except KeyError:
        valid = [v.name for v in ValueEstimators]
        raise ValueError(f"Unknown value estimator type {value_type!r}; expected one of {valid}") from None


def distance_loss(
    v1: Tensor,
    v2: Tensor,
    loss_function: LossFunction,
    strict_shape: bool = True,
) -> Tensor:
    """Elementwise distance between two tensors (no reduction).

    Args:
        v1: first tensor.
        v2: second tensor.
        loss_function: ``"l2"`` (squared error), ``"l1"`` or ``"smooth_l1"`` (Huber, beta 1).
        strict_shape: if ``True`` (default), ``v1`` and ``v2`` must have the same shape; otherwise they
            are broadcast.

    Returns:
        the elementwise loss.

    Examples:
        >>> distance_loss(torch.zeros(2), torch.tensor([1.0, 3.0]), "smooth_l1")
        tensor([0.5000, 2.5000])
    """
    if strict_shape and v1.shape != v2.shape:
        raise ValueError(
            f"distance_loss: shapes {tuple(v1.shape)} and {tuple(v2.shape)} differ (pass strict_shape=False to broadcast)"
        )
    if loss_function == "l2":
        return F.mse_loss(v1, v2, reduction="none")
    if loss_function == "l1":
        return F.l1_loss(v1, v2, reduction="none")
    if loss_function == "smooth_l1":
        return F.smooth_l1_loss(v1, v2, reduction="none")
    raise ValueError(f"Unknown loss_function {loss_function!r}; expected 'l2', 'l1' or 'smooth_l1'")


def check_loss_function(loss_function: str) -> LossFunction:
    """Validates a ``loss_function`` / ``loss_critic_type`` argument at construction time.

    Examples:
        >>> check_loss_function("l2")
        'l2'
    """
    if loss_function not in ("l2", "l1", "smooth_l1"):
        raise ValueError(f"Unknown loss function {loss_function!r}; expected 'l2', 'l1' or 'smooth_l1'")
    return cast(LossFunction, loss_function)


def check_reduction(reduction: str | None) -> str:
    """Validates a ``reduction`` argument (``None`` means ``"mean"``).

    Examples:
        >>> check_reduction(None)
        'mean'
    """
    if reduction is None:
        return "mean"
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"Unknown reduction {reduction!r}; expected 'mean', 'sum' or 'none'")
    return reduction


def reduce(tensor: Tensor, reduction: str, weights: Tensor | None = None) -> Tensor:
    """Reduces a loss tensor; with ``weights`` the mean is ``sum(w * x) / sum(w)``.

    Examples:
        >>> reduce(torch.tensor([1.0, 3.0]), "mean")
        tensor(2.)
    """
    if weights is not None:
        # Priority weights come as [B] or [B, 1]; broadcast them over the loss's trailing dims.
        while weights.ndim > tensor.ndim and weights.shape[-1] == 1:
            weights = weights.squeeze(-1)
        weights = weights.reshape(weights.shape + (1,) * (tensor.ndim - weights.ndim)).expand_as(tensor)
        if reduction == "mean":
            return (tensor * weights).sum() / weights.sum()
        tensor = tensor * weights
    if reduction == "mean":
        return tensor.mean()
    if reduction == "sum":
        return tensor.sum()
    return tensor


class _context_manager(abc.ABC):
    """A context manager usable as a decorator."""

    @abc.abstractmethod
    def __enter__(self) -> Any: ...

    @abc.abstractmethod
    def __exit__(self, exc_type, exc_val, exc_tb) -> None: ...

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorate_context(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_context


class hold_out_net(_context_manager):
    """Keeps a network's parameters out of the autograd graph inside the block.

    Args:
        network: the module to freeze.

    Examples:
        >>> net = nn.Linear(2, 1)
        >>> with hold_out_net(net):
        ...     y = net(torch.ones(2))
        >>> y.requires_grad
        False
    """

    def __init__(self, network: nn.Module) -> None:
        self.network = network
        self.mode = next((p.requires_grad for p in network.parameters()), True)

    def __enter__(self) -> None:
        if self.mode:
            self.network.requires_grad_(False)

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        if self.mode:
            self.network.requires_grad_(True)


class hold_out_params(_context_manager):
    """Yields detached copies of a list (or TensorDict) of parameters.

    Args:
        params: parameters, or a TensorDict of parameters.

    Examples:
        >>> p = nn.Parameter(torch.ones(2))
        >>> with hold_out_params([p]) as held:
        ...     held[0].requires_grad
        False
    """

    def __init__(self, params: Iterable[Tensor] | TensorDictBase) -> None:
        if isinstance(params, TensorDictBase):
            self.params = params.detach()
        else:
            self.params = tuple(p.detach() for p in params)

    def __enter__(self) -> tuple[Tensor, ...] | TensorDictBase:
        return self.params

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        return None


@torch.no_grad()
def next_state_value(
    tensordict: TensorDictBase,
    operator: TensorDictModule | None = None,
    next_val_key: str = "state_action_value",
    gamma: float = 0.99,
    pred_next_val: Tensor | None = None,
    **kwargs,
) -> Tensor:
    """Gradient-free bootstrapped target ``r + gamma**n * (1 - done) * V(s')``.

    Reads ``("next", "reward")`` and ``("next", "done")`` (and ``"steps_to_next_obs"`` for n-step data);
    the next value comes from ``pred_next_val`` or from running ``operator`` on the ``"next"`` entries.

    Args:
        tensordict: the transition batch.
        operator: module writing ``next_val_key`` when called on the next-step data.
        next_val_key: the key the operator writes.
        gamma: discount.
        pred_next_val: precomputed next values (then ``operator`` is not needed).
        **kwargs: passed to the operator.

    Returns:
        the targets, shaped like the batch.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({("next", "reward"): torch.ones(2, 1),
        ...                  ("next", "done"): torch.tensor([[False], [True]])}, [2])
        >>> next_state_value(td, gamma=0.5, pred_next_val=torch.full((2, 1), 2.0))
        tensor([2., 1.])
    """
    steps = tensordict.get("steps_to_next_obs", None)
    steps = 1 if steps is None else steps.squeeze(-1)
    rewards = tensordict.get(("next", "reward")).squeeze(-1).float()
    done = tensordict.get(("next", "done")).squeeze(-1)
    if pred_next_val is None:
        if operator is None:
            raise ValueError("next_state_value: pass `operator` or `pred_next_val`")
        nxt = tensordict.get("next").select(*operator.in_keys, strict=False).clone(False)
        operator(nxt, **kwargs)
        pred_next_val = nxt.get(next_val_key)
    pred = pred_next_val.squeeze(-1)
    return rewards + (gamma**steps) * (1 - done.float()) * pred


def group_optimizers(*optimizers: torch.optim.Optimizer | None) -> torch.optim.Optimizer:
    """Merges optimizers of the same class into one holding all their parameter groups.

    Examples:
        >>> a = torch.optim.Adam([nn.Parameter(torch.ones(1))])
        >>> b = torch.optim.Adam([nn.Parameter(torch.ones(1))], lr=0.1)
        >>> len(group_optimizers(a, b).param_groups)
        2
    """
    cls = None
    groups: list[dict] = []
    for opt in optimizers:
        if opt is None:
            continue
        if cls is None:
            cls = type(opt)
        elif cls is not type(opt):
            raise ValueError(f"Cannot group optimizers of different types ({cls.__name__} and {type(opt).__name__})")
        groups.extend(opt.param_groups)
    if cls is None:
        raise ValueError("group_optimizers: no optimizer given")
    return cls(groups)  # type: ignore[call-arg]  # every Optimizer subclass has defaults for its hyper-parameters


class TargetNetUpdater(abc.ABC):
    """Base class of the target-network updaters.

    Pairs every ``target_<net>_params`` buffer of ``loss_module`` with its ``<net>_params`` source and
    keeps the pairs whose source is trainable and distinct from the target (parameters shared with
    another network through ``compare_against`` are not updated, as in TorchRL).

    Args:
        loss_module: a loss with target parameters.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss, SoftUpdate
        >>> net = TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"])
        >>> loss = DQNLoss(net, action_space="one-hot")
        >>> updater = SoftUpdate(loss, tau=0.01)
        >>> updater.step()
    """

    def __init__(self, loss_module: LossModule) -> None:
        # Duck-typed (LossModule lives in common.py, which imports this module).
        if not isinstance(loss_module, nn.Module) or not hasattr(loss_module, "_has_update_associated"):
            raise TypeError(f"loss_module must be a LossModule, got {type(loss_module).__name__}")
        names = [n for n, _ in loss_module.named_children() if n.startswith("target_") and n.endswith("_params")]
        if not names:
            raise RuntimeError(
                f"{type(loss_module).__name__} has no target parameters; build it with delay_*=True "
                "(e.g. delay_value=True) to use a target-network updater"
            )
        self.loss_module = loss_module
        self._target_names = names
        self._source_names = [n[len("target_") :] for n in names]
        self.initialized = False
        for name in self._source_names:
            loss_module._has_update_associated[name[: -len("_params")]] = True
        self.init_()

    def _pairs(self) -> tuple[list[Tensor], list[Tensor]]:
        sources: list[Tensor] = []
        targets: list[Tensor] = []
        for s_name, t_name in zip(self._source_names, self._target_names):
            src_td = cast(TensorDictBase, getattr(self.loss_module, s_name))
            tgt_td = cast(TensorDictBase, self.loss_module._modules[t_name])
            for key in src_td.keys(True, True):
                src = src_td.get(key)
                tgt = tgt_td.get(key)
                if is_lazy(src):  # copied once the loss's first call has materialized it (LossModule)
                    continue
                if tgt.requires_grad:
                    raise RuntimeError(f"target parameter {t_name}.{key} is part of a graph (requires_grad=True)")
                if src.requires_grad and tgt.data_ptr() != src.data_ptr():
                    sources.append(src.data)
                    targets.append(tgt.data)
        return sources, targets

    def init_(self) -> None:
        """Copies the current parameters into the targets (called by the constructor; with lazy layers, again
        at the first :meth:`step`, once the loss's first call has made the parameters)."""
        self._lazy = bool(getattr(self.loss_module, "_lazy_targets", ())) or any(
            is_lazy(p) for name in self._source_names for p in getattr(self.loss_module, name).values(True, True)
        )
        sources, targets = self._pairs()
        if self._lazy:
            self._sources, self._targets = [], []
            self.initialized = True
            return
        if not sources:
            raise RuntimeError(
                "Target and source parameters are identical for every entry: the loss has no distinct target "
                "network (did you set delay_value / delay_qvalue / delay_actor to True?)"
            )
        torch._foreach_copy_(targets, sources)
        self._sources, self._targets = sources, targets
        self.initialized = True

    def step(self) -> None:
        """Moves the targets (call once per optimizer step)."""
        if not self.initialized:
            raise RuntimeError(f"{type(self).__name__} must be initialized with init_() before step()")
        if self._lazy:
            self.init_()  # the loss has been called since: its targets now exist
            if self._lazy:
                raise RuntimeError(
                    f"{type(self).__name__}.step(): the loss still has uninitialized (lazy) parameters; "
                    "call the loss on a batch before the first step"
                )
        self._step(self._sources, self._targets)

    @abc.abstractmethod
    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        """Moves ``targets`` towards ``sources`` in place."""

    def state_dict(self) -> dict[str, Any]:
        """Update progress (the target values themselves live in the loss module's state_dict)."""
        state: dict[str, Any] = {"initialized": self.initialized}
        if hasattr(self, "counter"):
            state["counter"] = self.counter
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the progress saved by :meth:`state_dict`."""
        self.initialized = state_dict.get("initialized", self.initialized)
        if "counter" in state_dict and hasattr(self, "counter"):
            self.counter = int(state_dict["counter"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(targets={self._target_names})"


class SoftUpdate(TargetNetUpdater):
    r"""Polyak averaging: ``target = eps * target + (1 - eps) * param`` at every :meth:`step`.

    Lillicrap et al., "Continuous control with deep reinforcement learning", https://arxiv.org/abs/1509.02971.

    Args:
        loss_module: a loss with target parameters.
        eps: decay of the target (exclusive with ``tau``).
        tau: Polyak coefficient, ``1 - eps`` (exclusive with ``eps``).

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss
        >>> loss = DQNLoss(TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"]),
        ...                action_space="one-hot")
        >>> SoftUpdate(loss, eps=0.99).eps
        0.99
    """

    def __init__(self, loss_module: LossModule, *, eps: float | None = None, tau: float | None = None) -> None:
        if (eps is None) == (tau is None):
            raise ValueError("SoftUpdate: pass exactly one of eps or tau")
        if eps is None:
            eps = 1.0 - cast(float, tau)
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"SoftUpdate: eps must be in [0, 1], got {eps}")
        self.eps = eps
        super().__init__(loss_module)

    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        torch._foreach_lerp_(targets, sources, 1.0 - self.eps)


class HardUpdate(TargetNetUpdater):
    """Copies the parameters into the targets every ``value_network_update_interval + 1`` steps (TorchRL's timing).

    van Hasselt et al., "Deep Reinforcement Learning with Double Q-learning", https://arxiv.org/abs/1509.06461.

    Args:
        loss_module: a loss with target parameters.
        value_network_update_interval: number of :meth:`step` calls between copies; the counter counts
            0..interval and copies when it reaches ``interval``.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss
        >>> loss = DQNLoss(TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action_value"]),
        ...                action_space="one-hot")
        >>> HardUpdate(loss, value_network_update_interval=10).counter
        0
    """

    def __init__(self, loss_module: LossModule, *, value_network_update_interval: float = 1000) -> None:
        self.value_network_update_interval = value_network_update_interval
        self.counter = 0
        super().__init__(loss_module)

    def _step(self, sources: list[Tensor], targets: list[Tensor]) -> None:
        if self.counter == self.value_network_update_interval:
            torch._foreach_copy_(targets, sources)
            self.counter = 0
        else:
            self.counter += 1


class KLAdaptiveLR:
    """Scales an optimizer's learning rate to keep the policy's KL divergence per update near ``target_kl``.

    After each update, :meth:`step` divides every group's learning rate by ``factor`` when the measured KL
    exceeds ``2 * target_kl``, multiplies it by ``factor`` when the KL is positive and below
    ``target_kl / 2`` (a KL of exactly zero, a policy that did not move, changes nothing), and clamps it to
    ``[min_lr, max_lr]``. This is the schedule of rsl_rl's PPO (Rudin et al., "Learning to Walk in Minutes
    Using Massively Parallel Deep Reinforcement Learning", 2021, https://arxiv.org/abs/2109.11978); the
    ``kl_approx`` entry of :class:`~tdrl.objectives.ClipPPOLoss`'s output can be passed as is.

    Args:
        optimizer: the optimizer whose ``param_groups`` are rescaled in place.
        target_kl: the desired mean KL per update (finite, positive).

    Keyword Args:
        factor: the multiplicative step (finite, > 1).
        min_lr: lower bound of the learning rate.
        max_lr: upper bound of the learning rate.

    Examples:
        >>> opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1e-3)
        >>> sched = KLAdaptiveLR(opt, target_kl=0.01, factor=2.0)
        >>> sched.step(kl=0.05)
        >>> sched.get_last_lr()
        [0.0005]
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        target_kl: float,
        *,
        factor: float = 1.5,
        min_lr: float = 1e-5,
        max_lr: float = 1e-2,
    ) -> None:
        if not (math.isfinite(target_kl) and target_kl > 0):
            raise ValueError(f"KLAdaptiveLR: target_kl must be finite and positive, got {target_kl}")
        if not (math.isfinite(factor) and factor > 1.0):
            raise ValueError(f"KLAdaptiveLR: factor must be finite and greater than 1, got {factor}")
        if not (0 < min_lr <= max_lr and math.isfinite(max_lr)):
            raise ValueError(f"KLAdaptiveLR: expected 0 < min_lr <= max_lr < inf, got min_lr={min_lr}, max_lr={max_lr}")
        self.optimizer = optimizer
        self.target_kl, self.factor = float(target_kl), float(factor)
        self.min_lr, self.max_lr = float(min_lr), float(max_lr)
        self.last_kl: float | None = None

    def step(self, kl: float | Tensor) -> None:
        """Rescales the learning rates from the mean KL of the last update (a float or a 0-d tensor)."""
        value = float(kl)
        if not math.isfinite(value):
            raise ValueError(f"KLAdaptiveLR.step: the KL divergence must be finite, got {value}")
        scale = 1.0
        if value > 2.0 * self.target_kl:
            scale = 1.0 / self.factor
        elif 0.0 < value < 0.5 * self.target_kl:
            scale = self.factor
        for group in self.optimizer.param_groups:
            group["lr"] = min(self.max_lr, max(self.min_lr, group["lr"] * scale))
        self.last_kl = value

    def get_last_lr(self) -> list[float]:
        """The current learning rate of each parameter group."""
        return [float(group["lr"]) for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's settings and last KL (the optimizer is saved separately)."""
        return {"target_kl": self.target_kl, "factor": self.factor, "min_lr": self.min_lr, "max_lr": self.max_lr,
                "last_kl": self.last_kl}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a :meth:`state_dict`."""
        self.target_kl, self.factor = float(state_dict["target_kl"]), float(state_dict["factor"])
        self.min_lr, self.max_lr = float(state_dict["min_lr"]), float(state_dict["max_lr"])
        self.last_kl = state_dict.get("last_kl")
