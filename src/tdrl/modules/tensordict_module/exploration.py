"""Exploration modules appended to a policy: epsilon-greedy, additive Gaussian and Ornstein-Uhlenbeck noise.

They act only when exploration is on: under ``set_exploration_type(ExplorationType.RANDOM)`` or when no
exploration type is set (TorchRL's rule); ``DETERMINISTIC``/``MODE``/``MEAN`` leave the action untouched.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, TensorDictSequential, interaction_type
from tensordict.utils import NestedKey, expand_as_right, expand_right
from torch import nn

from tdrl.data import Composite, TensorSpec
from tdrl.modules.tensordict_module.common import project_into

__all__ = [
    "EGreedyModule",
    "AdditiveGaussianModule",
    "OrnsteinUhlenbeckProcessModule",
    "RandomPolicy",
    "set_exploration_modules_spec_from_env",
    "EGreedyWrapper",
    "AdditiveGaussianWrapper",
    "OrnsteinUhlenbeckProcessWrapper",
]


def exploring() -> bool:
    """Whether exploration noise applies now (``RANDOM`` or no interaction type set).

    Returns:
        ``True`` when exploration modules should perturb the action.

    Examples:
        >>> from tensordict.nn import InteractionType, set_interaction_type
        >>> with set_interaction_type(InteractionType.DETERMINISTIC):
        ...     exploring()
        False
    """
    current = interaction_type()
    return current is None or current is InteractionType.RANDOM


def _as_composite(spec: TensorSpec | None, action_key: NestedKey) -> Composite | None:
    if spec is None or isinstance(spec, Composite):
        return spec
    return Composite({action_key: spec}, shape=spec.shape[:-1])


class _Annealed(TensorDictModuleBase):
    """A linearly annealed noise scale ``value`` from ``init`` to ``end`` over ``annealing_num_steps`` frames."""

    _scale_name: str

    def _register_annealing(self, init: float, end: float, annealing_num_steps: int, device: Any) -> None:
        if end > init:
            raise ValueError(f"{type(self).__name__}: the noise scale must decrease or stay constant, got "
                             f"init={init} < end={end}.")
        name = self._scale_name
        self.register_buffer(f"{name}_init", torch.as_tensor(init, device=device))
        self.register_buffer(f"{name}_end", torch.as_tensor(end, device=device))
        self.register_buffer(name, torch.as_tensor(init, dtype=torch.float32, device=device))
        self.annealing_num_steps = annealing_num_steps

    def step(self, frames: int = 1) -> None:
        """Anneals the noise scale by ``frames`` steps (it stops at its end value).

        Args:
            frames: number of frames collected since the last call.
        """
        if self.annealing_num_steps <= 0:
            raise ValueError(f"{type(self).__name__}.step() needs annealing_num_steps > 0, got "
                             f"{self.annealing_num_steps}.")
        name = self._scale_name
        init, end, value = getattr(self, f"{name}_init"), getattr(self, f"{name}_end"), getattr(self, name)
        decrement = frames * (init - end) / self.annealing_num_steps
        value.copy_(torch.maximum(end, value - decrement))

    def _action_parent(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, NestedKey]:
        key = self.action_key
        if isinstance(key, tuple) and len(key) > 1:
            return tensordict.get(key[:-1]), key[-1]
        return tensordict, key


class EGreedyModule(_Annealed):
    """Epsilon-greedy exploration: with probability ``eps`` per batch element, replace the action by a random one.

    Args:
        spec: the action spec (random actions come from ``spec.rand()``; masks honoured).
        eps_init: initial epsilon. Defaults to ``1.0``.
        eps_end: final epsilon. Defaults to ``0.1``.
        annealing_num_steps: frames over which epsilon decays linearly (see :meth:`step`).

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        action_mask_key: optional boolean mask entry; random actions then respect it.
        device: device of the buffers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Categorical
        >>> mod = EGreedyModule(Categorical(4), eps_init=0.5, eps_end=0.1, annealing_num_steps=4)
        >>> mod.step(2)
        >>> round(mod.eps.item(), 2)
        0.3
        >>> mod(TensorDict(action=torch.zeros(8, dtype=torch.long), batch_size=[8]))["action"].shape
        torch.Size([8])
    """

    _scale_name = "eps"

    def __init__(
        self,
        spec: TensorSpec,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        *,
        action_key: NestedKey | None = "action",
        action_mask_key: NestedKey | None = None,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        if spec is None:
            raise ValueError("EGreedyModule needs the action spec to draw random actions.")
        self.action_key = action_key
        self.action_mask_key = action_mask_key
        self.in_keys = [action_key] + ([action_mask_key] if action_mask_key is not None else [])
        self.out_keys = [action_key]
        self._register_annealing(eps_init, eps_end, annealing_num_steps, device)
        spec = _as_composite(spec, action_key)
        self._spec = spec.to(device) if device is not None else spec

    @property
    def spec(self) -> Composite:
        return self._spec

    def _random_action(self, tensordict: TensorDictBase, action: torch.Tensor) -> torch.Tensor:
        spec = self._spec[self.action_key]
        n = len(spec.shape)
        if n > action.ndim or (n and action.shape[action.ndim - n:] != spec.shape):
            raise ValueError(f"EGreedyModule: action shape {tuple(action.shape)} does not end with the spec "
                             f"shape {tuple(spec.shape)}.")
        lead = action.shape[: action.ndim - n]
        if self.action_mask_key is None:
            # rand(lead) prepends the batch dims: no per-call spec expansion.
            return spec.rand(lead).to(action.device)
        mask = tensordict.get(self.action_mask_key, None)
        if mask is None:
            raise KeyError(f"EGreedyModule: action-mask key {self.action_mask_key!r} not found.")
        spec = spec.expand(action.shape) if spec.shape != action.shape else spec.clone()
        spec.update_mask(mask)
        return spec.rand().to(action.device)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not exploring():
            return tensordict
        parent, key = self._action_parent(tensordict)
        action = parent.get(key)
        if action.device != self.eps.device:
            raise RuntimeError(f"EGreedyModule: action on {action.device} but the module on {self.eps.device}.")
        explore = torch.rand(parent.shape, device=action.device) < self.eps
        action = torch.where(expand_as_right(explore, action), self._random_action(tensordict, action), action)
        parent.set(key, action)
        return tensordict


class AdditiveGaussianModule(_Annealed):
    """Adds ``sigma * N(mean, std)`` noise to the action, then projects it into the action spec.

    Args:
        spec: the action spec (may be set later through :attr:`spec` before the first call).
        sigma_init: initial noise scale. Defaults to ``1.0``.
        sigma_end: final noise scale. Defaults to ``0.1``.
        annealing_num_steps: frames over which sigma decays linearly.
        mean: mean of the Gaussian. Defaults to ``0.0``.
        std: standard deviation of the Gaussian. Defaults to ``1.0``.

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        safe: unused (the noisy action is always projected), kept for TorchRL compatibility.
        device: device of the buffers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Bounded
        >>> mod = AdditiveGaussianModule(Bounded(-1.0, 1.0, (2,)), sigma_init=10.0, sigma_end=1.0)
        >>> td = mod(TensorDict(action=torch.zeros(4, 2), batch_size=[4]))
        >>> bool(td["action"].abs().max() <= 1)
        True
    """

    _scale_name = "sigma"

    def __init__(
        self,
        spec: TensorSpec | None = None,
        sigma_init: float = 1.0,
        sigma_end: float = 0.1,
        annealing_num_steps: int = 1000,
        mean: float = 0.0,
        std: float = 1.0,
        *,
        action_key: NestedKey | None = "action",
        safe: bool = False,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        self.action_key = action_key
        self.in_keys = [action_key]
        self.out_keys = [action_key]
        self._register_annealing(sigma_init, sigma_end, annealing_num_steps, device)
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.get_default_dtype(), device=device))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.get_default_dtype(), device=device))
        self._spec = _as_composite(spec, action_key)
        self.safe = safe

    @property
    def spec(self) -> Composite | None:
        return self._spec

    @spec.setter
    def spec(self, value: TensorSpec) -> None:
        self._spec = _as_composite(value, self.action_key)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not exploring():
            return tensordict
        if self._spec is None:
            raise RuntimeError("AdditiveGaussianModule: spec is not set; pass it at construction or assign "
                               "module.spec before the first call.")
        action = tensordict.get(self.action_key)
        noise = torch.randn(action.shape, dtype=self.mean.dtype, device=action.device) * self.std + self.mean
        action = project_into(self._spec[self.action_key], action + noise * self.sigma)
        tensordict.set(self.action_key, action)
        return tensordict


class OrnsteinUhlenbeckProcessModule(_Annealed):
    """Temporally correlated Ornstein-Uhlenbeck noise (DDPG), reset wherever ``is_init`` is ``True``.

    The noise ``x`` follows ``x += theta (mu - x) dt + sigma_t sqrt(dt) N(0, 1)``, with ``sigma_t`` annealed from
    ``sigma`` to ``sigma_min`` over ``n_steps_annealing`` steps of each trajectory; the action receives
    ``eps * x``. The state travels in the tensordict under ``"_ou_prev_noise"`` and ``"_ou_steps"``.

    Args:
        spec: the action spec.
        eps_init: initial noise weight. Defaults to ``1.0``.
        eps_end: final noise weight. Defaults to ``0.1``.
        annealing_num_steps: frames over which ``eps`` decays (see :meth:`step`).
        theta: mean-reversion rate. Defaults to ``0.15``.
        mu: long-run mean. Defaults to ``0.0``.
        sigma: noise scale. Defaults to ``0.2``.
        dt: time step. Defaults to ``1e-2``.
        x0: initial noise offset. Defaults to ``0``.
        sigma_min: final ``sigma`` (``None``: constant ``sigma``).
        n_steps_annealing: trajectory steps over which ``sigma`` anneals.

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        is_init_key: the entry marking first steps. Defaults to ``"is_init"``.
        safe: project the noisy action into ``spec``. Defaults to ``True``.
        device: device of the buffers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Bounded
        >>> mod = OrnsteinUhlenbeckProcessModule(Bounded(-1.0, 1.0, (2,)))
        >>> td = TensorDict(action=torch.zeros(3, 2), is_init=torch.ones(3, 1, dtype=torch.bool), batch_size=[3])
        >>> mod(td)["_ou_steps"]
        tensor([1, 1, 1])
    """

    _scale_name = "eps"
    noise_key = "_ou_prev_noise"
    steps_key = "_ou_steps"

    def __init__(
        self,
        spec: TensorSpec,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        theta: float = 0.15,
        mu: float = 0.0,
        sigma: float = 0.2,
        dt: float = 1e-2,
        x0: torch.Tensor | float | None = None,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        *,
        action_key: NestedKey = "action",
        is_init_key: NestedKey = "is_init",
        safe: bool = True,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        if spec is None:
            raise ValueError("OrnsteinUhlenbeckProcessModule needs the action spec.")
        self._register_annealing(eps_init, eps_end, annealing_num_steps, device)
        self.theta, self.mu, self.dt = theta, mu, dt
        self.sigma = sigma
        self.sigma_min = sigma if sigma_min is None else sigma_min
        self._sigma_slope = 0.0 if sigma_min is None else -float(sigma - sigma_min) / float(n_steps_annealing)
        self.x0 = 0.0 if x0 is None else torch.as_tensor(x0)
        self.action_key = action_key
        self.is_init_key = is_init_key
        self.in_keys = [action_key]
        self.out_keys = [action_key, self.noise_key, self.steps_key]
        spec = _as_composite(spec, action_key).clone()
        spec[self.noise_key] = None
        spec[self.steps_key] = None
        self._spec = spec
        self.safe = safe

    @property
    def spec(self) -> Composite:
        return self._spec

    def current_sigma(self, n_steps: torch.Tensor) -> torch.Tensor:
        """Noise scale after ``n_steps`` steps of the trajectory.

        Args:
            n_steps: step counters.

        Returns:
            ``max(sigma_min, sigma + slope * n_steps)``.
        """
        return (self._sigma_slope * n_steps + self.sigma).clamp_min(self.sigma_min)

    def _is_init(self, tensordict: TensorDictBase, parent: TensorDictBase) -> torch.Tensor | None:
        is_init = tensordict.get(self.is_init_key, None)
        if is_init is None:
            warnings.warn(f"{type(self).__name__}: no {self.is_init_key!r} entry; the noise is never reset. Add an "
                          "InitTracker transform to the environment.", stacklevel=3)
            return None
        if is_init.ndim > 1 and is_init.shape[-1] == 1:
            is_init = is_init.squeeze(-1)
        if parent.ndim >= is_init.ndim:
            is_init = expand_right(is_init, parent.shape)
        else:
            is_init = is_init.any(tuple(range(parent.ndim, is_init.ndim)))
        if is_init.shape != parent.shape:
            raise ValueError(f"{type(self).__name__}: {self.is_init_key!r} of shape {tuple(is_init.shape)} does not "
                             f"match the action batch shape {tuple(parent.shape)}.")
        return is_init

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not exploring():
            return tensordict
        parent, _ = self._action_parent(tensordict)
        action = tensordict.get(self.action_key)
        is_init = self._is_init(tensordict, parent)
        noise = tensordict.get(self.noise_key, None)
        if noise is None:
            noise = torch.zeros_like(action, dtype=torch.get_default_dtype())
            steps = torch.zeros(parent.shape, dtype=torch.long, device=action.device)
        else:
            steps = tensordict.get(self.steps_key)
        if is_init is not None:
            noise = noise.masked_fill(expand_right(is_init, noise.shape), 0)
            steps = steps.masked_fill(expand_right(is_init, steps.shape), 0)
        prev = noise + self.x0
        sigma = self.current_sigma(expand_as_right(steps, prev))
        new = prev + self.theta * (self.mu - prev) * self.dt + sigma * math.sqrt(self.dt) * torch.randn_like(prev)
        action = action + self.eps * new
        if self.safe:
            leaf = self._spec[self.action_key]
            action = project_into(leaf, action) if leaf is not None else action
        tensordict.set(self.noise_key, new - self.x0)
        tensordict.set(self.steps_key, steps + 1)
        tensordict.set(self.action_key, action)
        return tensordict


class RandomPolicy:
    """A policy writing ``action_spec.rand()`` (the whole composite, or at ``action_key``).

    Args:
        action_spec: the action spec; ``None`` to let a collector set it from the env later.
        action_key: where a leaf spec's sample is written. Defaults to ``"action"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Categorical
        >>> RandomPolicy(Categorical(3))(TensorDict())["action"].shape
        torch.Size([])
    """

    def __init__(self, action_spec: TensorSpec | None = None, action_key: NestedKey = "action") -> None:
        self.action_spec = action_spec.clone() if action_spec is not None else None
        self.action_key = action_key

    def set_action_spec_from_env(self, env: Any) -> None:
        """Takes ``env.full_action_spec`` if no spec was given.

        Args:
            env: the environment.
        """
        if self.action_spec is None:
            self.action_spec = env.full_action_spec.clone()

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        if self.action_spec is None:
            raise RuntimeError("RandomPolicy.action_spec is not set; pass it to the constructor or to a collector.")
        if isinstance(self.action_spec, Composite):
            return td.update(self.action_spec.rand())
        return td.set(self.action_key, self.action_spec.rand())


def set_exploration_modules_spec_from_env(policy: nn.Module, env: Any) -> None:
    """Gives every spec-less :class:`AdditiveGaussianModule` in ``policy`` the env's action spec.

    Args:
        policy: the policy module.
        env: the environment (anything with ``action_spec``).

    Examples:
        >>> from types import SimpleNamespace
        >>> from tdrl.data import Bounded
        >>> noise = AdditiveGaussianModule()
        >>> set_exploration_modules_spec_from_env(noise, SimpleNamespace(action_spec=Bounded(-1.0, 1.0, (2,))))
        >>> noise.spec["action"].shape
        torch.Size([2])
    """
    action_spec = getattr(env, "action_spec_unbatched", None)
    if action_spec is None:
        action_spec = env.action_spec
    for module in policy.modules():
        if isinstance(module, AdditiveGaussianModule) and module.spec is None:
            module.spec = action_spec


def _policy_spec(policy: nn.Module, spec: TensorSpec | None, action_key: NestedKey, owner: str) -> TensorSpec:
    if spec is not None:
        return spec
    spec = getattr(policy, "spec", None)
    if isinstance(spec, Composite):
        spec = spec.get(action_key, None)
    if spec is None:
        raise RuntimeError(f"{owner}: no action spec; pass spec=... or wrap a policy whose spec has "
                           f"{action_key!r}.")
    return spec


class _ExplorationWrapper(TensorDictSequential):
    """A policy followed by its exploration module; ``step`` anneals the module's noise."""

    def step(self, frames: int = 1) -> None:
        """Anneals the exploration noise by ``frames`` steps (see the wrapped module's ``step``).

        Args:
            frames: number of frames collected since the last call.
        """
        self.module[-1].step(frames)

    @property
    def exploration_module(self) -> _Annealed:
        """The exploration module applied after the policy."""
        return self.module[-1]

    @property
    def spec(self) -> Composite | None:
        return self.module[-1].spec


class EGreedyWrapper(_ExplorationWrapper):
    """TorchRL's older epsilon-greedy wrapper: ``policy`` followed by an :class:`EGreedyModule`.

    TorchRL 0.14.1 keeps the class only to raise a ``RuntimeError``; here it works (docs/differences.md).

    Args:
        policy: the greedy policy writing ``action_key``.

    Keyword Args:
        eps_init: initial epsilon. Defaults to ``1.0``.
        eps_end: final epsilon. Defaults to ``0.1``.
        annealing_num_steps: frames over which epsilon decays linearly.
        action_key: the action entry. Defaults to ``"action"``.
        action_mask_key: optional boolean action mask entry.
        spec: the action spec; defaults to ``policy.spec``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Categorical
        >>> policy = TensorDictModule(lambda obs: obs.argmax(-1), ["observation"], ["action"])
        >>> explore = EGreedyWrapper(policy, eps_init=0.5, annealing_num_steps=10, spec=Categorical(3))
        >>> explore(TensorDict(observation=torch.randn(4, 3), batch_size=[4]))["action"].shape
        torch.Size([4])
        >>> explore.step(10)
        >>> round(explore.eps.item(), 2)
        0.1
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        *,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        action_key: NestedKey | None = "action",
        action_mask_key: NestedKey | None = None,
        spec: TensorSpec | None = None,
    ) -> None:
        spec = _policy_spec(policy, spec, action_key, "EGreedyWrapper")
        module = EGreedyModule(spec, eps_init, eps_end, annealing_num_steps, action_key=action_key,
                               action_mask_key=action_mask_key)
        super().__init__(policy, module)

    @property
    def eps(self) -> torch.Tensor:
        """The current epsilon."""
        return self.module[-1].eps


class AdditiveGaussianWrapper(_ExplorationWrapper):
    """TorchRL's older additive-Gaussian wrapper: ``policy`` followed by an :class:`AdditiveGaussianModule`.

    TorchRL 0.14.1 keeps the class only to raise a ``RuntimeError``; here it works (docs/differences.md).

    Args:
        policy: the deterministic policy writing ``action_key``.

    Keyword Args:
        sigma_init: initial noise scale. Defaults to ``1.0``.
        sigma_end: final noise scale. Defaults to ``0.1``.
        annealing_num_steps: frames over which sigma decays linearly.
        mean: noise mean. Defaults to ``0.0``.
        std: noise standard deviation. Defaults to ``1.0``.
        action_key: the action entry. Defaults to ``"action"``.
        spec: the action spec; defaults to ``policy.spec``.
        safe: project the noisy action into the spec. Defaults to ``True``.
        device: device of the noise buffers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Bounded
        >>> policy = TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action"])
        >>> explore = AdditiveGaussianWrapper(policy, spec=Bounded(-1.0, 1.0, (2,)))
        >>> action = explore(TensorDict(observation=torch.randn(4, 3), batch_size=[4]))["action"]
        >>> bool(action.abs().max() <= 1)
        True
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        *,
        sigma_init: float = 1.0,
        sigma_end: float = 0.1,
        annealing_num_steps: int = 1000,
        mean: float = 0.0,
        std: float = 1.0,
        action_key: NestedKey | None = "action",
        spec: TensorSpec | None = None,
        safe: bool | None = True,
        device: torch.device | None = None,
    ) -> None:
        spec = _policy_spec(policy, spec, action_key, "AdditiveGaussianWrapper")
        module = AdditiveGaussianModule(spec, sigma_init, sigma_end, annealing_num_steps, mean, std,
                                        action_key=action_key, safe=bool(safe), device=device)
        super().__init__(policy, module)

    @property
    def sigma(self) -> torch.Tensor:
        """The current noise scale."""
        return self.module[-1].sigma


class OrnsteinUhlenbeckProcessWrapper(_ExplorationWrapper):
    """TorchRL's older OU-noise wrapper: ``policy`` followed by an :class:`OrnsteinUhlenbeckProcessModule`.

    TorchRL 0.14.1 keeps the class only to raise a ``RuntimeError``; here it works (docs/differences.md).
    The noise restarts where ``is_init_key`` is set (add an ``InitTracker`` transform to the env).

    Args:
        policy: the deterministic policy writing ``action_key``.

    Keyword Args:
        eps_init, eps_end, annealing_num_steps: linear annealing of the noise weight.
        theta, mu, sigma, dt, x0, sigma_min, n_steps_annealing: the OU process (see
            :class:`OrnsteinUhlenbeckProcessModule`).
        action_key: the action entry. Defaults to ``"action"``.
        is_init_key: the reset indicator entry. Defaults to ``"is_init"``.
        spec: the action spec; defaults to ``policy.spec``.
        safe: project the noisy action into the spec. Defaults to ``True``.
        key: older name of ``action_key`` (used when given).
        device: device of the buffers.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Bounded
        >>> policy = TensorDictModule(torch.nn.Linear(3, 2), ["observation"], ["action"])
        >>> explore = OrnsteinUhlenbeckProcessWrapper(policy, spec=Bounded(-1.0, 1.0, (2,)))
        >>> td = TensorDict(observation=torch.randn(4, 3), is_init=torch.ones(4, 1, dtype=torch.bool), batch_size=[4])
        >>> explore(td)["action"].shape
        torch.Size([4, 2])
    """

    def __init__(
        self,
        policy: TensorDictModuleBase,
        *,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        theta: float = 0.15,
        mu: float = 0.0,
        sigma: float = 0.2,
        dt: float = 1e-2,
        x0: torch.Tensor | float | None = None,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        action_key: NestedKey | None = "action",
        is_init_key: NestedKey | None = "is_init",
        spec: TensorSpec | None = None,
        safe: bool = True,
        key: NestedKey | None = None,
        device: torch.device | None = None,
    ) -> None:
        action_key = key if key is not None else action_key
        spec = _policy_spec(policy, spec, action_key, "OrnsteinUhlenbeckProcessWrapper")
        module = OrnsteinUhlenbeckProcessModule(
            spec, eps_init, eps_end, annealing_num_steps, theta, mu, sigma, dt, x0, sigma_min,
            n_steps_annealing, action_key=action_key, is_init_key=is_init_key, safe=safe, device=device)
        super().__init__(policy, module)

    @property
    def eps(self) -> torch.Tensor:
        """The current noise weight."""
        return self.module[-1].eps
