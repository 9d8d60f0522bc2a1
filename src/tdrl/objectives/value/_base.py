"""``ValueEstimatorBase``: keys, value-network calls and the forward template of the estimator modules.

A subclass implements :meth:`ValueEstimatorBase._estimate` (advantage and value target from the values
and the ``("next", ...)`` signals) and :meth:`ValueEstimatorBase.value_estimate`; the base class reads and
writes the tensordict, calls the value network (two streams or one shifted stream), handles
``differentiable``, ``skip_existing``, ``steps_to_next_obs`` and the shifted-layout validity mask.
"""

from __future__ import annotations

import abc
import contextlib
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase, composite_lp_aggregate, set_skip_existing
from tensordict.utils import NestedKey, unravel_key

from tdrl.objectives._finite import CHECK_FINITE, assert_finite
from tdrl.objectives.utils import hold_out_net
from tdrl.objectives.value._value_net import ShiftedLayout, call_split, shifted_layout, two_stream_inputs
from tdrl.objectives.value.utils import standardize

__all__ = ["ValueEstimatorBase"]


_Estimator = TypeVar("_Estimator", bound="ValueEstimatorBase")


def _default_log_prob_key() -> str:
    return "sample_log_prob" if composite_lp_aggregate(nowarn=True) else "action_log_prob"


class ValueEstimatorBase(TensorDictModuleBase):
    """Base class of the value-estimator modules (:class:`GAE`, :class:`TD0Estimator`, ...).

    The forward pass reads a ``[*B, T]`` trajectory tensordict, evaluates the value network on ``s_t``
    and ``s_{t+1}`` (unless the values are already there and no network is given), and writes the
    advantage and value-target entries (``"advantage"``, ``"value_target"``), plus ``"state_value"``
    and ``("next", "state_value")``. Key names are changed with :meth:`set_keys`.

    Keyword Args:
        value_network: a :class:`tensordict.nn.TensorDictModule` writing the value key, or ``None`` to
            read ``value``/``("next", value)`` from the input.
        shifted: evaluate the network once over ``[s_0, ..., s_{T-1}, s'_{T-1}]`` (plus the next state
            after internal truncations, within ``shifted_budget`` extra slots) instead of on the root
            and ``"next"`` entries separately.
        differentiable: let gradients flow through the estimate (otherwise it runs under no-grad).
        skip_existing: passed to :func:`tensordict.nn.set_skip_existing` around the forward pass.
        advantage_key: removed; raises (use :meth:`set_keys`).
        value_target_key: removed; raises (use :meth:`set_keys`).
        value_key: removed; raises (use :meth:`set_keys`).
        device: device of the buffers (``gamma``, ``lmbda``...).
        deactivate_vmap: accepted for compatibility; no ``vmap`` is used (one batched call instead).
        value_chunk_size: evaluate the network in chunks of this many elements of ``value_chunk_dim``.
        num_chunks: or in this many chunks. ``num_chunk`` is an alias.
        num_chunk: alias of ``num_chunks``.
        value_chunk_dim: the dimension along which to chunk.
        shifted_budget: extra slots of the shifted sequence (``>= 1``).
        group_key: integer entry (e.g. a task id) within whose groups standardization is done.
        check_finite: check the reward and values for NaN/inf before estimating, and the advantage after,
            raising a ``ValueError`` that names the entry and the index of its first bad value (it syncs
            with the device: off by default; the ``tdrl.objectives.check_finite()`` context also enables it).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.objectives.value import GAE
        >>> est: ValueEstimatorBase = GAE(gamma=0.99, lmbda=0.95, value_network=None)
        >>> data = TensorDict({"state_value": torch.zeros(4, 1), "next": {"state_value": torch.zeros(4, 1),
        ...     "reward": torch.ones(4, 1), "done": torch.zeros(4, 1, dtype=torch.bool),
        ...     "terminated": torch.zeros(4, 1, dtype=torch.bool)}}, [4])
        >>> sorted(k for k in est(data).keys() if k != "next")
        ['advantage', 'state_value', 'value_target']
    """

    @dataclass
    class _AcceptedKeys:
        """Tensordict keys read and written by the estimator, overridable with ``set_keys``.

        Attributes:
            advantage: where the advantage is written. Defaults to ``"advantage"``.
            value_target: where the value target is written. Defaults to ``"value_target"``.
            value: the state value (read or written by the value network). Defaults to ``"state_value"``.
            reward: the reward, under ``"next"``. Defaults to ``"reward"``.
            done: the done flag, under ``"next"``. Defaults to ``"done"``.
            terminated: the terminated flag, under ``"next"``. Defaults to ``"terminated"``.
            steps_to_next_obs: number of steps to the next observation (multi-step returns).
            sample_log_prob: log-probability of the sampled action (V-trace).
        """

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        value: NestedKey = "state_value"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        steps_to_next_obs: NestedKey = "steps_to_next_obs"
        sample_log_prob: NestedKey = field(default_factory=lambda: _default_log_prob_key())

        def __post_init__(self) -> None:
            if self.sample_log_prob is None:
                self.sample_log_prob = _default_log_prob_key()

    default_keys = _AcceptedKeys
    time_dim: int | None = None
    # Typed here: nn.Module's __getattr__ types registered buffers and attributes as Tensor | Module.
    value_network: TensorDictModuleBase | None
    gamma: torch.Tensor

    def __init__(
        self,
        *,
        value_network: TensorDictModuleBase | None,
        shifted: bool = False,
        differentiable: bool = False,
        skip_existing: bool | None = None,
        advantage_key: NestedKey | None = None,
        value_target_key: NestedKey | None = None,
        value_key: NestedKey | None = None,
        device: torch.device | None = None,
        deactivate_vmap: bool = False,
        value_chunk_size: int | None = None,
        num_chunks: int | None = None,
        num_chunk: int | None = None,
        value_chunk_dim: int = 0,
        shifted_budget: int = 1,
        group_key: NestedKey | None = None,
        check_finite: bool = False,
    ) -> None:
        super().__init__()
        for name, key in (
            ("advantage_key", advantage_key),
            ("value_target_key", value_target_key),
            ("value_key", value_key),
        ):
            if key is not None:
                short = name.removesuffix("_key")
                raise RuntimeError(
                    f"Setting {name!r} via the constructor is no longer supported; "
                    f"use .set_keys({short}={key!r}) instead."
                )
        if not isinstance(shifted, bool):
            raise ValueError(f"shifted must be a boolean, got {shifted!r}")
        if isinstance(shifted_budget, bool) or not isinstance(shifted_budget, int) or shifted_budget < 1:
            raise ValueError(f"shifted_budget must be an integer >= 1, got {shifted_budget!r}")
        self._device = torch.device(device) if device is not None else torch.get_default_device()
        self.__dict__["value_network"] = value_network  # not a submodule: the loss owns it
        self.shifted = shifted
        self.shifted_budget = shifted_budget
        self.differentiable = differentiable
        self.skip_existing = skip_existing
        self.deactivate_vmap = deactivate_vmap
        self.value_chunk_size = _positive_int(value_chunk_size, "value_chunk_size")
        self.num_chunks = _resolve_num_chunks(num_chunks, num_chunk)
        if self.value_chunk_size is not None and self.num_chunks is not None:
            raise ValueError("value_chunk_size and num_chunks cannot both be set")
        if isinstance(value_chunk_dim, bool) or not isinstance(value_chunk_dim, int):
            raise TypeError(f"value_chunk_dim must be an integer, got {type(value_chunk_dim).__name__}")
        self.value_chunk_dim = value_chunk_dim
        self.group_key = group_key
        self.check_finite = check_finite
        self._tensor_keys: ValueEstimatorBase._AcceptedKeys | None = None
        self.dep_keys: dict[str, NestedKey] = {}

    @classmethod
    def for_loss(cls: type[_Estimator], loss_module: torch.nn.Module, **hyperparams: Any) -> _Estimator:
        """Builds an estimator for ``loss_module``: its ``critic_network`` (else ``value_network``) unless given.

        Args:
            loss_module: the loss the estimator serves.
            **hyperparams: constructor arguments (``gamma``, ``lmbda``, ...).

        Returns:
            the estimator.
        """
        if "value_network" not in hyperparams:
            net = getattr(loss_module, "critic_network", None)
            hyperparams["value_network"] = (
                net if net is not None else getattr(loss_module, "value_network", None)
            )
        return cls(**hyperparams)

    @property
    def vmap_randomness(self) -> str:
        """TorchRL compatibility: the estimators do not use ``vmap``; the stored value is only reported."""
        return getattr(self, "_vmap_randomness", None) or "error"

    def set_vmap_randomness(self, value: str) -> None:
        """TorchRL compatibility (see :attr:`vmap_randomness`)."""
        self._vmap_randomness = value

    def _buffer(self, name: str, value: float | torch.Tensor) -> None:
        value = value if isinstance(value, torch.Tensor) else torch.tensor(value)
        self.register_buffer(name, value.to(self._device))

    # ------------------------------------------------------------------ keys
    @property
    def tensor_keys(self) -> _AcceptedKeys:
        """The keys in use (a ``_AcceptedKeys`` instance)."""
        keys = self._tensor_keys
        if keys is None:
            self.set_keys()
            keys = cast(ValueEstimatorBase._AcceptedKeys, self._tensor_keys)
        return keys

    def set_keys(self, **kwargs: NestedKey) -> None:
        """Sets tensordict key names, e.g. ``set_keys(advantage="adv", value="v")``.

        Raises:
            KeyError: for a name that is not one of the accepted keys (listed in the message), or a
                ``value`` key that the value network does not write.
            ValueError: for a ``None`` or non-key value.
        """
        accepted = [f for f in self._AcceptedKeys.__dataclass_fields__]
        for name, key in kwargs.items():
            if name not in accepted:
                raise KeyError(
                    f"{name!r} is not an accepted tensordict key of {type(self).__name__}; accepted: {accepted}"
                )
            if key is None:
                raise ValueError(f"tensordict key {name!r} cannot be None")
            if isinstance(key, list):
                kwargs[name] = [unravel_key(k) for k in key]
            elif isinstance(key, (str, tuple)):
                kwargs[name] = unravel_key(key)
            else:
                raise ValueError(f"key {name!r} must be a str or a tuple of str, got {type(key).__name__}")
        value_key = kwargs.get("value")
        out_keys = getattr(self.value_network, "out_keys", None)
        if value_key is not None and out_keys is not None and value_key not in out_keys:
            raise KeyError(
                f"value key {value_key!r} is not written by the value network (out_keys={out_keys})"
            )
        conf = asdict(self.default_keys()) if self._tensor_keys is None else asdict(self._tensor_keys)
        if self._tensor_keys is None:
            conf.update(self.dep_keys)
        conf.update(kwargs)
        self._tensor_keys = self._AcceptedKeys(**conf)

    @property
    def advantage_key(self) -> NestedKey:
        return self.tensor_keys.advantage

    @property
    def value_target_key(self) -> NestedKey:
        return self.tensor_keys.value_target

    @property
    def value_key(self) -> NestedKey:
        return self.tensor_keys.value

    @property
    def reward_key(self) -> NestedKey:
        return self.tensor_keys.reward

    @property
    def done_key(self) -> NestedKey:
        return self.tensor_keys.done

    @property
    def terminated_key(self) -> NestedKey:
        return self.tensor_keys.terminated

    @property
    def steps_to_next_obs_key(self) -> NestedKey:
        return self.tensor_keys.steps_to_next_obs

    @property
    def sample_log_prob_key(self) -> NestedKey:
        return self.tensor_keys.sample_log_prob

    @property  # type: ignore[misc]  # TensorDictModuleBase declares it an attribute; estimators derive it from their keys
    def in_keys(self) -> list[NestedKey]:
        keys = self.tensor_keys
        net_keys = list(getattr(self.value_network, "in_keys", []) or [])
        in_keys = [*net_keys, ("next", keys.reward), ("next", keys.done), ("next", keys.terminated)]
        in_keys += [("next", *((k,) if isinstance(k, str) else k)) for k in net_keys]
        if self.group_key is not None and self.group_key not in in_keys:
            in_keys.append(self.group_key)
        return in_keys

    @property  # type: ignore[misc]  # TensorDictModuleBase declares it an attribute; estimators derive it from their keys
    def out_keys(self) -> list[NestedKey]:
        return [self.tensor_keys.advantage, self.tensor_keys.value_target]

    @property
    def is_functional(self) -> bool:
        return False

    @property
    def is_stateless(self) -> bool:
        return False

    # --------------------------------------------------------------- forward
    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        time_dim: int | None = None,
    ) -> TensorDictBase:
        """Writes the advantage and value target of a ``[*B, T]`` trajectory tensordict.

        Args:
            tensordict: holds the value-network inputs at the root and under ``"next"``,
                ``("next", reward)``, ``("next", done)`` and optionally ``("next", terminated)``.
            params: functional parameters of the value network for ``s_t``.
            target_params: parameters for ``s_{t+1}`` (defaults to ``params``).
            time_dim: the time dimension (default: the estimator's ``time_dim``, else the dimension
                named ``"time"``, else the last one).

        Returns:
            ``tensordict``, updated in place.
        """
        if tensordict.batch_dims < 1:
            raise RuntimeError(
                f"{type(self).__name__} expects a tensordict with a time dimension, got batch_size "
                f"{tuple(tensordict.batch_size)}"
            )
        skip = (
            set_skip_existing(self.skip_existing)
            if self.skip_existing is not None
            else contextlib.nullcontext()
        )
        self._check_inputs(tensordict)
        with skip, torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
            time_dim = self._get_time_dim(time_dim, tensordict)
            value, next_value, layout = self._values(tensordict, params, target_params, time_dim)
            keys = self.tensor_keys
            checking = self.check_finite or CHECK_FINITE[0]
            if checking:
                assert_finite(type(self).__qualname__, keys.value, value)
                assert_finite(type(self).__qualname__, ("next", keys.value), next_value)
            data = self._prepare_shifted(tensordict, layout)
            advantage, value_target = self._estimate(data, value, next_value, time_dim, layout)
            if checking:
                assert_finite(type(self).__qualname__, keys.advantage, advantage, "output")
            tensordict.set(keys.advantage, advantage)
            tensordict.set(keys.value_target, value_target)
            self._mask_shifted_output(tensordict, layout)
        return tensordict

    @abc.abstractmethod
    def _estimate(
        self,
        data: TensorDictBase,
        value: torch.Tensor,
        next_value: torch.Tensor,
        time_dim: int,
        layout: ShiftedLayout | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(advantage, value_target)`` from the values and the signals of ``data``."""

    @abc.abstractmethod
    def value_estimate(
        self,
        tensordict: TensorDictBase,
        target_params: TensorDictBase | None = None,
        next_value: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """The value target (return estimate) of ``tensordict``, usually a critic's regression target."""

    # ------------------------------------------------------------- helpers
    def _get_time_dim(self, time_dim: int | None, data: TensorDictBase) -> int:
        if time_dim is None:
            time_dim = self.time_dim
        if time_dim is None and data._has_names():
            names = list(data.names)
            if "time" in names:
                time_dim = names.index("time")
        if time_dim is None:
            time_dim = data.ndim - 1
        if not -data.ndim <= time_dim < data.ndim:
            raise ValueError(f"time_dim={time_dim} is out of range for batch_size {tuple(data.batch_size)}")
        return time_dim % data.ndim

    def _check_inputs(self, data: TensorDictBase) -> None:
        """Names the first missing entry (a few key lookups per call, not per element)."""
        keys = self.tensor_keys
        needed: list[NestedKey] = [("next", keys.reward), ("next", keys.done)]
        net = self.value_network
        if net is not None:
            net_keys = [k for k in net.in_keys if unravel_key(k) != unravel_key(keys.value)]
            needed += [*net_keys, *(("next", *((k,) if isinstance(k, str) else k)) for k in net_keys)]
        for key in needed:
            if data.get(key, None) is None:
                got = sorted(map(str, data.keys(True, True)))
                raise KeyError(
                    f"{type(self).__name__}: missing input entry {key!r}; the estimator reads {needed} from a "
                    f"[*batch, time] trajectory (a Collector batch or env.rollout() output writes them). "
                    f"The input holds {got}"
                )

    def _signals(self, data: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        keys = self.tensor_keys
        reward = data.get(("next", keys.reward))
        if self.check_finite or CHECK_FINITE[0]:
            assert_finite(type(self).__qualname__, ("next", keys.reward), reward)
        done = data.get(("next", keys.done))
        return reward, done, data.get(("next", keys.terminated), None)

    def _gamma(self, data: TensorDictBase, reward: torch.Tensor) -> torch.Tensor:
        gamma = self.gamma.to(reward.device)
        steps = data.get(self.tensor_keys.steps_to_next_obs, None)
        return gamma if steps is None else gamma ** steps.view_as(reward)

    def _standardize_rewards(self, data: TensorDictBase, reward: torch.Tensor, eps: float) -> torch.Tensor:
        """``average_rewards``: standardized rewards, written back (later readers see the same ones)."""
        reward = _standardize(reward, self._group_ids(data), None, eps)
        data.set(("next", self.tensor_keys.reward), reward)
        return reward

    def _group_ids(self, data: TensorDictBase) -> torch.Tensor | None:
        if self.group_key is None:
            return None
        groups = data.get(self.group_key, None)
        if groups is None:
            raise KeyError(f"group_key {self.group_key!r} is missing from the tensordict")
        return groups

    def _values(
        self,
        data: TensorDictBase,
        params: TensorDictBase | None,
        target_params: TensorDictBase | None,
        time_dim: int,
    ) -> tuple[torch.Tensor, torch.Tensor, ShiftedLayout | None]:
        """``V(s_t)``, ``V(s_{t+1})`` (detached) and the shifted layout, written to the tensordict."""
        keys = self.tensor_keys
        net = self.value_network
        if net is None:
            value = data.get(keys.value, None)
            next_value = data.get(("next", keys.value), None)
            for key, found in ((keys.value, value), (("next", keys.value), next_value)):
                if found is None:
                    raise KeyError(
                        f"{type(self).__name__}: no value network and no {key!r} entry in the input"
                    )
            return value, next_value, None
        if params is not None:
            params = params.detach()
            target_params = params if target_params is None else target_params
        layout = None
        with _held_out(net, params):
            if self.shifted:
                if target_params is not None and target_params is not params:
                    raise ValueError(
                        "shifted=True evaluates s_t and s_{t+1} in one call: target_params cannot differ"
                    )
                value, next_value, layout = self._shifted_values(data, params, time_dim)
            else:
                value, next_value = self._two_stream_values(data, params, target_params)
        data.set(keys.value, value)
        data.set(("next", keys.value), next_value)
        return value, next_value.detach(), layout

    def _net(self) -> TensorDictModuleBase:
        net = self.value_network
        if net is None:
            raise RuntimeError(f"{type(self).__name__} has no value network to call (value_network=None).")
        return net

    def _call(self, data: TensorDictBase, params: TensorDictBase | None) -> torch.Tensor:
        net, key = self._net(), self.tensor_keys.value
        if params is None:
            return call_split(net, data, key, chunk_size=self.value_chunk_size, num_chunks=self.num_chunks,
                              chunk_dim=self.value_chunk_dim)
        with params.to_module(net):
            return call_split(net, data, key, chunk_size=self.value_chunk_size, num_chunks=self.num_chunks,
                              chunk_dim=self.value_chunk_dim)

    def _two_stream_values(
        self, data: TensorDictBase, params: TensorDictBase | None, target_params: TensorDictBase | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        root, nxt = two_stream_inputs(data, list(self._net().in_keys), self.tensor_keys.value)
        if params is not None or set(root.keys(True, True)) != set(nxt.keys(True, True)):
            return self._call(root, params), self._call(nxt, target_params)
        # one batched call over [root, next] (the network is batch-agnostic), instead of vmap
        values = self._call(cast(TensorDictBase, torch.stack([root, nxt], 0)), None)
        return values[0], values[1]

    def _shifted_values(
        self, data: TensorDictBase, params: TensorDictBase | None, time_dim: int
    ) -> tuple[torch.Tensor, torch.Tensor, ShiftedLayout]:
        keys = self.tensor_keys
        layout = shifted_layout(
            data, keys.done, keys.terminated, time_dim=time_dim, budget=self.shifted_budget
        )
        root, nxt = two_stream_inputs(data, list(self._net().in_keys), keys.value)
        batch = list(data.batch_size)
        batch[time_dim] = layout.length
        entries = {key: layout.scatter(root.get(key), nxt.get(key, None)) for key in root.keys(True, True)}
        seq = TensorDict(entries, batch_size=batch, device=root.device)
        value, next_value = layout.gather(self._call(seq, params))
        reward = data.get(("next", keys.reward))
        if value.numel() == reward.numel():
            value, next_value = value.view_as(reward), next_value.view_as(reward)
        return value, next_value, layout

    def _prepare_shifted(self, data: TensorDictBase, layout: ShiftedLayout | None) -> TensorDictBase:
        """With dropped samples, the last kept step of each row ends its trajectory (and bootstraps)."""
        if layout is None or not self.shifted:
            return data
        keys = self.tensor_keys
        done = data.get(("next", keys.done))
        terminated = data.get(("next", keys.terminated), done)
        last = _expand(layout.last_valid, done)
        data = data.copy()
        data.set(("next", keys.done), done | last)
        data.set(("next", keys.terminated), terminated & ~last)
        return data

    def _mask_shifted_output(self, data: TensorDictBase, layout: ShiftedLayout | None) -> None:
        if layout is None:
            return
        data.set("shifted_valid", layout.valid)
        for key in (self.tensor_keys.advantage, self.tensor_keys.value_target):
            out = data.get(key)
            data.set(key, out * _expand(layout.valid, out).to(out.dtype))

    def _next_value(
        self, data: TensorDictBase, target_params: TensorDictBase | None, kwargs: dict[str, Any]
    ) -> torch.Tensor:
        """``V(s_{t+1})`` alone (for :meth:`value_estimate` without values in the input)."""
        keys = self.tensor_keys
        if self.value_network is None:
            return data.get(("next", keys.value))
        _, nxt = two_stream_inputs(data, list(self._net().in_keys), keys.value)
        with _held_out(self._net(), target_params):
            return self._call(nxt, target_params)


def _held_out(net: torch.nn.Module, params: TensorDictBase | None) -> contextlib.AbstractContextManager:
    """Keeps gradients out of ``net``'s own parameters; a no-op without grad mode (compile-friendly)."""
    if params is not None or not torch.is_grad_enabled() or not isinstance(net, torch.nn.Module):
        return contextlib.nullcontext()
    return hold_out_net(net)


def _expand(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    while mask.ndim < like.ndim:
        mask = mask.unsqueeze(-1)
    return mask.expand_as(like)


def _standardize(
    x: torch.Tensor,
    groups: torch.Tensor | None,
    mask: torch.Tensor | None,
    eps: float,
    dims: list[int] | None = None,
) -> torch.Tensor:
    """TorchRL's standardization: unbiased std without mask, masked population std, or per group.

    ``dims`` restricts the statistics to those dimensions (the others are standardized independently).
    """
    if groups is not None:
        return standardize(x, groups=groups, mask=None if mask is None else _expand(mask, x), eps=eps)
    dims = list(range(x.ndim)) if dims is None else dims
    if mask is None:
        return (x - x.mean(dims, keepdim=True)) / x.std(dims, keepdim=True).clamp_min(eps)
    weight = _expand(mask, x).to(x.dtype)
    count = weight.sum(dims, keepdim=True).clamp_min(1)
    loc = (x * weight).sum(dims, keepdim=True) / count
    scale = (((x - loc).square() * weight).sum(dims, keepdim=True) / count).sqrt().clamp_min(eps)
    return (x - loc) / scale


def _positive_int(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer or None, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _resolve_num_chunks(num_chunks: int | None, num_chunk: int | None) -> int | None:
    num_chunks = _positive_int(num_chunks, "num_chunks")
    num_chunk = _positive_int(num_chunk, "num_chunk")
    if num_chunk is None:
        return num_chunks
    if num_chunks is not None and num_chunks != num_chunk:
        raise ValueError("num_chunks and num_chunk cannot both be set to different values")
    return num_chunk
