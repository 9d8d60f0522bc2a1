"""``LossModule``: the base class of every loss (functional parameters, target parameters, keys).

A network handed to a loss is *converted*: its parameters are gathered in a ``TensorDictParams`` named
``<name>_params`` (the same ``Parameter`` objects, so optimizers built from the loss or from the network
see the same tensors), and, when the loss needs a delayed copy, ``target_<name>_params`` holds detached
buffer copies that only the updaters in :mod:`tdrl.objectives.utils` move. Ensembles
(``expand_dim=N``) hold stacked, independently initialised copies run with ``torch.vmap``.

Speed notes: a network whose ``<name>_params`` are its own parameters is called directly (no parameter
swap); other parameter sets are swapped in by direct slot assignment in eager mode and through
``TensorDictBase.to_module`` under ``torch.compile``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import (
    InteractionType,
    TensorDictModuleBase,
    TensorDictParams,
    TensorDictSequential,
    set_interaction_type,
)
from tensordict.utils import Buffer, NestedKey
from torch import Tensor, nn

from tdrl._utils import TDRLWarning
from tdrl.objectives._finite import CHECK_FINITE, assert_finite
from tdrl.objectives._functional import Slots, as_key, copy_module, reinit_copy
from tdrl.objectives._lazy import has_lazy, materialize_lazy_targets
from tdrl.objectives._repeat import pure_split
from tdrl.objectives._value_estimation import ValueEstimation
from tdrl.objectives.utils import (
    ValueEstimators,
    add_random_module,
    check_reduction,
    is_random_module,
    reduce,
)

__all__ = ["LossModule", "add_random_module", "check_finite"]

_AUTO_MASK_KEYS: tuple[NestedKey, ...] = (("collector", "mask"), "shifted_valid")
_CHECK_FINITE = CHECK_FINITE  # shared with the value estimators


@contextlib.contextmanager
def check_finite(enabled: bool = True) -> Iterator[None]:
    """Within the block, every loss and value estimator checks its float inputs and outputs for NaN/inf
    (eager only); the error names the entry and the index of its first bad value.

    The check syncs with the device, so it is opt-in; ``loss.check_finite = True`` enables it for one loss.

    Examples:
        >>> with check_finite():
        ...     pass
    """
    prev = _CHECK_FINITE[0]
    _CHECK_FINITE[0] = enabled
    try:
        yield
    finally:
        _CHECK_FINITE[0] = prev


def _leaves(td: TensorDictBase, keys: Sequence[tuple[str, ...]]) -> list[Tensor]:
    """The leaves of ``td`` at ``keys``; reads a hook-less ``TensorDictParams`` through its inner
    TensorDict (the same tensor objects, without the per-read hook wrappers)."""
    if isinstance(td, TensorDictParams) and not td._get_post_hook:
        td = td._param_td
    return [td.get(k) for k in keys]


def _how_to_produce(key: NestedKey) -> str:
    """Where an entry a loss reads usually comes from (appended to a missing-entry error)."""
    leaf = key if isinstance(key, str) else key[-1]
    if leaf in ("sample_log_prob", "action_log_prob") or str(leaf).endswith("_log_prob"):
        return (" (the log-probability of the collected action: collect with a ProbabilisticActor built with "
                "return_log_prob=True)")
    if leaf in ("advantage", "value_target"):
        return " (run a value estimator first: loss.value_estimator(td), or GAE(...)(td))"
    if not isinstance(key, str) and key[0] == "next":
        return " (a step's outcome: collect with a Collector or env.rollout(), which write the 'next' entries)"
    return ""


# The type of a loss's key set: each loss binds it to its own ``_AcceptedKeys``
# (``class DQNLoss(LossModule["DQNLoss._AcceptedKeys"])``), so the type checker checks
# ``self._tensor_keys.<key>`` against that loss's keys (a typo is an error, issue 15).
KeysT = TypeVar("KeysT")
# Which parameters a network runs with: its trainable ones, its target copy, or detached trainable ones.
ParamSet = Literal["params", "target", "detached"]


class _ActionKey(Protocol):
    """Keys of a loss whose networks split before the action (the default of ``_split_key``)."""

    action: NestedKey


class _PriorityWeightKey(Protocol):
    """Keys of a loss that reads prioritized-replay weights (``_priority_weights``)."""

    priority_weight: NestedKey


class LossModule(ValueEstimation, TensorDictModuleBase, Generic[KeysT]):
    """Base class of RL losses: reads a TensorDict, returns a TensorDict of ``loss_*`` scalars.

    Subclasses declare their keys in a nested ``_AcceptedKeys`` dataclass (overridable with
    :meth:`set_keys`) and name it as the type argument, ``class MyLoss(LossModule["MyLoss._AcceptedKeys"])``
    (a plain ``LossModule`` subclass works too, its keys are then unchecked); they convert their
    networks with :meth:`convert_to_functional` and implement ``forward``.

    Attributes:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        check_finite: if ``True``, inputs and outputs are checked for NaN/inf (eager only).
        loss_mask_key: ``"auto"`` (``("collector", "mask")`` / ``"shifted_valid"`` entries mask the
            reductions when present), a key, or ``None``.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.objectives import DQNLoss
        >>> net = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action_value"])
        >>> loss = DQNLoss(net, action_space="one-hot")
        >>> sorted(loss.value_network_params.keys(True, True))
        [('module', 'bias'), ('module', 'weight')]
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys read and written by the loss."""

    default_value_estimator: ValueEstimators | None = None
    SUPPORTED_VALUE_ESTIMATORS: tuple[ValueEstimators, ...] = ()
    _value_estimator_keys: tuple[str, ...] = ("advantage", "value_target", "value", "reward", "done", "terminated")
    _vmap_randomness: str | None = None
    _vmap_randomness_from_user = False
    _state_dict_aliases: dict[str, str] = {}
    # (deterministic part, distribution module) of a probabilistic actor, set by losses that sample it often.
    _actor_split: tuple | None = None
    reduction: str = "mean"
    use_prioritized_weights: str | bool = False
    default_keys = _AcceptedKeys
    deterministic_sampling_mode: InteractionType = InteractionType.DETERMINISTIC
    _tensor_keys: KeysT

    def __init__(self) -> None:
        super().__init__()
        # ``self._AcceptedKeys`` is the subclass's own key class, the one it binds ``KeysT`` to.
        self._tensor_keys = self._AcceptedKeys()  # type: ignore[assignment]
        self._value_estimator = None
        self.value_type = self.default_value_estimator
        self._value_hp: dict[str, Any] = {}
        self._has_update_associated: dict[str, bool] = {}
        self._slots: dict[str, Slots] = {}
        self._stateful: dict[str, bool] = {}
        self._expanded: dict[str, int] = {}
        # Networks with lazy layers whose target copies wait for the first call (objectives/_lazy.py).
        self._lazy_targets: set[str] = set()
        self._keys_cache: dict[str, list[tuple[str, ...]]] = {}
        # network name -> (prefix, suffix) split before the action key, or None (see _ensemble_heads.py).
        self._splits: dict[str, tuple[TensorDictSequential, TensorDictSequential] | None] = {}
        self._in_keys: list[NestedKey] | None = None
        self.check_finite = False
        self._loss_mask_key: NestedKey | Literal["auto"] | None = "auto"
        # state_dict entries that are views of another network's parameters (shared, expanded).
        self._derived_keys: set[str] = set()

    # ------------------------------------------------------------------ keys
    @property
    def tensor_keys(self) -> KeysT:
        """The keys in use (an instance of the loss's ``_AcceptedKeys``)."""
        return self._tensor_keys

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # TorchRL exposes the key dataclass as ``default_keys`` on every loss class.
        cls.default_keys = cls._AcceptedKeys

    def set_keys(self, **kwargs: NestedKey | list[NestedKey] | None) -> LossModule:
        """Renames the keys the loss reads/writes; ``None`` restores a default.

        Raises:
            ValueError: for a name that is not one of the loss's keys (the message lists them).
        """
        fields = [f.name for f in dataclasses.fields(self._AcceptedKeys)]
        defaults = self._AcceptedKeys()
        for name, value in kwargs.items():
            if name not in fields:
                raise ValueError(f"{name!r} is not a key of {type(self).__name__}; accepted keys: {fields}")
            setattr(self._tensor_keys, name, getattr(defaults, name) if value is None else value)
        self._in_keys = None
        self._forward_value_estimator_keys()
        for net in self._splits:
            self._register_split(net)
        self._on_keys_changed()
        return self

    def _register_split(self, name: str) -> None:
        """Caches the split of network ``name`` before the action key (built here, never inside a traced
        call; refreshed by ``set_keys``). Losses without an action key split before ``_split_key(name)``."""
        self._splits[name] = pure_split(self.__dict__[name], self._split_key(name))

    def _split_key(self, name: str) -> NestedKey | None:
        return cast(_ActionKey, self._tensor_keys).action

    def _set_deprecated_ctor_keys(self, **kwargs: NestedKey | None) -> None:
        """Refuses keys passed to a constructor (``advantage_key=...``), as TorchRL 0.14.1 does."""
        for name, value in kwargs.items():
            if value is not None:
                raise RuntimeError(
                    f"{type(self).__name__}: setting {name + '_key'!r} via the constructor is deprecated; "
                    f"use loss.set_keys({name}={value!r}) instead."
                )

    @staticmethod
    def _check_no_extra_kwargs(owner: str, kwargs: dict[str, Any]) -> None:
        """Constructor ``**kwargs`` (kept for TorchRL's signature) must be empty; the removed ``*_coef``
        spellings get TorchRL's message."""
        for old in ("critic_coef", "entropy_coef"):
            if old in kwargs:
                raise TypeError(f"{owner}: {old!r} has been removed in torchrl v0.11. Please use {old + 'f'!r} instead.")
        if kwargs:
            raise TypeError(f"{owner} got unexpected keyword argument(s) {sorted(kwargs)}")

    def _on_keys_changed(self) -> None:
        """Hook for losses that cache key-derived state."""

    def _forward_value_estimator_keys(self) -> None:
        est = self._value_estimator
        if est is None or not hasattr(est, "set_keys"):
            return
        keys = {}
        for name in self._value_estimator_keys:
            if hasattr(self._tensor_keys, name):
                keys[name] = getattr(self._tensor_keys, name)
        est.set_keys(**keys)

    def _collect_in_keys(self) -> list[NestedKey]:
        return []

    @property
    def in_keys(self) -> list[NestedKey]:
        """Every input entry the loss reads."""
        if self._in_keys is None:
            seen: list[NestedKey] = []
            for k in self._collect_in_keys():
                k = k if isinstance(k, str) else tuple(k)
                if k not in seen:
                    seen.append(k)
            self._in_keys = seen
        return self._in_keys

    @in_keys.setter  # type: ignore[override]  # TorchRL's LossModule takes a list of keys here
    def in_keys(self, value: list[NestedKey]) -> None:
        self._in_keys = list(value)

    @property  # type: ignore[misc]  # read-only: derived from the loss's options, as in TorchRL
    def out_keys(self) -> list[str]:
        """The entries of the output TensorDict."""
        return list(self._out_keys())

    def _out_keys(self) -> list[str]:
        return []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._lazy_targets and args and isinstance(args[0], TensorDictBase):
            materialize_lazy_targets(self, args[0])
        if args or not kwargs or "tensordict" in kwargs:
            return super().__call__(*args, **kwargs)
        return self._call_with_keywords(kwargs)

    def _call_with_keywords(self, kwargs: dict[str, Any]) -> tuple[Tensor, ...] | Tensor:
        """TorchRL's keyword call: ``loss(observation=..., action=..., next_reward=...)`` without a TensorDict.

        Each input key is named by its parts joined with ``"_"`` (``("next", "reward")`` -> ``next_reward``);
        the outputs come back as a tuple in :attr:`out_keys` order (a single tensor for one output).
        """
        names = {"_".join(map(str, k)) if isinstance(k, tuple) else str(k): k for k in self.in_keys}
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {unknown}; a keyword call "
                            f"takes the input keys joined with '_': {sorted(names)}.")
        tensordict = TensorDict({names[name]: value for name, value in kwargs.items()}, batch_size=[])
        tensordict.auto_batch_size_()
        out = super().__call__(tensordict)
        values = tuple(out.get(key) for key in self.out_keys)
        return values[0] if len(values) == 1 else values

    def _missing(self, key: NestedKey, tensordict: TensorDictBase) -> KeyError:
        got = sorted(map(str, tensordict.keys(True, True)))
        return KeyError(
            f"{type(self).__name__}: missing input entry {key!r}{_how_to_produce(key)}. The loss expects "
            f"{self.in_keys}; the input holds {got}. Rename keys with loss.set_keys(...)."
        )

    def _get(self, tensordict: TensorDictBase, key: NestedKey) -> Tensor:
        value = tensordict.get(key, None)
        if value is None:
            raise self._missing(key, tensordict)
        return value

    def _next(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The ``"next"`` sub-tensordict (a clear error naming it when absent)."""
        return cast(TensorDictBase, self._get(tensordict, "next"))

    # ------------------------------------------------------------ parameters
    @property
    def functional(self) -> bool:
        """Whether the networks are converted to functional parameters (always ``True`` here)."""
        return True

    def convert_to_functional(
        self,
        module: nn.Module,
        module_name: str,
        expand_dim: int | None = None,
        create_target_params: bool = False,
        compare_against: Sequence[Tensor] | None = None,
    ) -> None:
        """Registers ``module`` under ``module_name`` with its parameters in ``<module_name>_params``.

        Args:
            module: the network.
            module_name: attribute name of the network.
            expand_dim: if given, ``N`` stacked parameter copies (an ensemble, run with vmap). Parameters
                in ``compare_against`` become detached expansions of the shared tensor; the others are
                re-initialised independently for each copy.
            create_target_params: create ``target_<module_name>_params`` (detached buffer copies).
            compare_against: parameters owned by another network: shared parameters are stored detached
                in this network's parameter set, so the loss of this network does not train them.
        """
        params = TensorDict.from_module(module, as_module=True)
        keys = [as_key(k) for k in params.keys(True, True)]
        shared = {id(p) for p in compare_against} if compare_against is not None else set()
        lazy = has_lazy(params)
        if lazy and expand_dim:
            raise ValueError(
                f"{type(self).__name__}: {module_name} has uninitialized (lazy) parameters and is expanded into "
                f"{expand_dim} copies; run the network once on a batch before building the loss"
            )
        if expand_dim:
            params_src = params
            params = self._expand_params(module, params, keys, expand_dim, shared)
            self._expanded[module_name] = expand_dim
            self._derived_keys.update(
                f"{prefix}{module_name}_params.{'.'.join(k)}"
                for k in keys
                if id(params_src.get(k)) in shared
                for prefix in ("", "target_")
            )
        elif shared:
            for key in keys:
                p = params.get(key)
                if id(p) in shared:
                    params.set(key, p.data)
        self.__dict__[module_name] = module
        setattr(self, module_name + "_params", params)
        self._slots[module_name] = Slots(module, keys)
        values = [params.get(k) for k in keys]
        current = [store[name] for store, name in self._slots[module_name].entries]
        self._stateful[module_name] = not expand_dim and all(a is b for a, b in zip(values, current))
        if create_target_params:
            self._set_target(module_name, params)
            if lazy:
                self._lazy_targets.add(module_name)
        self._has_update_associated[module_name] = not create_target_params
        if not self._vmap_randomness_from_user:
            # Decided here, at construction: the property then only reads an attribute when traced.
            self._vmap_randomness = None
            self._vmap_randomness = self.vmap_randomness

    def _set_target(self, module_name: str, params: TensorDictBase) -> None:
        target = params.apply(lambda x: Buffer(x.data.clone()), filter_empty=False)
        setattr(self, "target_" + module_name + "_params", TensorDictParams(target, no_convert=True))

    @staticmethod
    def _expand_params(
        module: nn.Module, params: TensorDictBase, keys: list[tuple[str, ...]], n: int, shared: set[int]
    ) -> TensorDictParams:
        copies = [TensorDict.from_module(reinit_copy(module)) for _ in range(n)]
        out = {}
        for key in keys:
            p = params.get(key)
            if id(p) in shared:
                out[key] = p.data.expand(n, *p.shape)
            elif isinstance(p, nn.Parameter):
                out[key] = nn.Parameter(torch.stack([c.get(key).data for c in copies]).to(p.dtype))
            else:
                out[key] = p.data.expand(n, *p.shape).clone()
        td = TensorDict({}, batch_size=[n])
        for key, v in out.items():
            td.set(key, v)
        return TensorDictParams(td, no_convert=True)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("target_") and item.endswith("_params"):
            modules = self.__dict__["_modules"]
            if item not in modules:
                source = modules.get(item[len("target_") :])
                if source is not None:
                    return source.data
        return super().__getattr__(item)

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, nn.Parameter]]:
        """Trainable parameters (target parameters are buffers and never listed)."""
        for name, p in super().named_parameters(prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate):
            if not name.startswith("target_"):
                yield name, p

    def __deepcopy__(self, memo: dict[int, Any]) -> LossModule:
        """A deep copy whose networks run on the copy's own parameter sets.

        A plain copy duplicates a stateful network's parameters twice (in the network and in
        ``<name>_params``): the copied network would then train tensors that the copied loss does not own.
        """
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = copy.deepcopy(value, memo)
        self._retie_shared(new)
        for name, stateful in new._stateful.items():
            if stateful:
                getattr(new, name + "_params").to_module(new.__dict__[name])
        return new

    def _retie_shared(self, new: LossModule) -> None:
        """Restores in ``new`` (a deep copy) the sharing between parameter sets: ``TensorDictParams`` copies
        its leaves on its own, so a trunk shared by actor and critic (one tensor in both sets) would become
        two tensors, and an ensemble's expansion of a shared tensor would stop following it."""
        copies: dict[int, Tensor] = {}
        by_storage: dict[int, Tensor] = {}
        derived: list[tuple[TensorDictParams, tuple[str, ...], Tensor]] = []
        for mod_name, params in self.named_children():
            if not isinstance(params, TensorDictParams):
                continue
            dst = cast(TensorDictParams, new._modules[mod_name])
            src_td = cast(TensorDictBase, params._param_td)
            dst_td = cast(TensorDictBase, dst._param_td)
            for key in params.keys(True, True):
                key = as_key(key)
                orig = src_td.get(key)
                if f"{mod_name}.{'.'.join(key)}" in self._derived_keys:
                    derived.append((dst, key, orig))
                elif id(orig) in copies:
                    dst_td.set(key, copies[id(orig)])
                else:
                    copies[id(orig)] = dst_td.get(key)
                    by_storage.setdefault(orig.untyped_storage().data_ptr(), copies[id(orig)])
        for dst, key, orig in derived:
            source = by_storage.get(orig.untyped_storage().data_ptr())
            if source is not None and source.shape == orig.shape[1:]:
                cast(TensorDictBase, dst._param_td).set(key, source.data.expand(orig.shape))
        for params in new.children():
            if isinstance(params, TensorDictParams):
                params._reset_params()

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Loads a state_dict; entries that expand another network's shared parameters are re-derived.

        Names listed in ``_state_dict_aliases`` (TorchRL's names for the same buffers) are accepted too, and
        a state_dict without value-estimator entries (saved before the estimator was built) keeps the
        current estimator's hyperparameters.
        """
        if self._state_dict_aliases:
            state_dict = {self._state_dict_aliases.get(k, k): v for k, v in state_dict.items()}
        est = self._value_estimator
        if isinstance(est, nn.Module) and not any(k.startswith("_value_estimator.") for k in state_dict):
            # A state_dict saved before the estimator existed (TorchRL builds it on first use): keep ours.
            state_dict = dict(state_dict)
            state_dict.update({f"_value_estimator.{k}": v for k, v in est.state_dict().items()})
        derived = self._derived_keys
        if derived:
            state_dict = {k: v for k, v in state_dict.items() if k not in derived}
            for name, params in self.named_children():
                if not isinstance(params, TensorDictParams):
                    continue
                for key in list(params.keys(True, True)):
                    full = f"{name}.{'.'.join(as_key(key))}"
                    if full in derived:
                        state_dict[full] = params.get(key)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def get_stateful_net(self, network_name: str, copy: bool | None = None) -> nn.Module:
        """A network carrying the loss's current parameters (a deep copy unless ``copy=False``)."""
        net = self.__dict__[network_name]
        net = copy_module(net) if copy is None or copy else net
        getattr(self, network_name + "_params").to_module(net)
        return net

    def from_stateful_net(self, network_name: str, stateful_net: nn.Module) -> None:
        """Loads the parameters of ``stateful_net`` (same structure) into ``<network_name>_params``."""
        params = TensorDict.from_module(stateful_net, as_module=True)
        mine = getattr(self, network_name + "_params")
        a, b = set(params.keys(True, True)), set(mine.keys(True, True))
        if a != b:
            raise RuntimeError(
                f"from_stateful_net: parameter names differ; only in the loss: {sorted(map(str, b - a))}, "
                f"only in the module: {sorted(map(str, a - b))}"
            )
        mine.data.update_(params.data)

    # ---------------------------------------------------------- network calls
    def _params_list(self, name: str, which: Literal["params", "target", "detached"]) -> list[Tensor]:
        td = getattr(self, name + "_params") if which != "target" else getattr(self, "target_" + name + "_params")
        values = _leaves(td, self._keys_of(name))
        if which == "detached":
            values = [v.detach() for v in values]
        return values

    def _keys_of(self, name: str) -> list[tuple[str, ...]]:
        # A plain attribute, not __dict__.setdefault: older Dynamo versions (torch 2.11) cannot trace that.
        cache = self._keys_cache
        keys = cache.get(name)
        if keys is None:
            keys = cache[name] = [as_key(k) for k in getattr(self, name + "_params").keys(True, True)]
        return keys

    def _swap(self, name: str, which: Literal["params", "target", "detached"]) -> contextlib.AbstractContextManager:
        """Context in which network ``name`` runs with the given parameter set."""
        if which == "target" and "target_" + name + "_params" not in self._modules:
            which = "detached"
        if self._stateful[name] and (which == "params" or (which == "detached" and not torch.is_grad_enabled())):
            return contextlib.nullcontext()
        if torch.compiler.is_compiling():
            td = getattr(self, name + "_params") if which != "target" else getattr(self, "target_" + name + "_params")
            if which == "detached":
                td = td.detach()
            return td.to_module(self.__dict__[name], preserve_module_state=False)
        return self._slots[name].swap(self._params_list(name, which))

    def _actor_dist(self, td: TensorDictBase, which: Literal["params", "target", "detached"] = "params"):
        """``actor_network.get_dist(td)`` with the given parameter set; with a registered split
        (``_actor_split``) the deterministic part and the distribution module are called directly, without
        the sequence's search for its last probabilistic module on every call."""
        split = self._actor_split
        with self._swap("actor_network", which):
            try:
                if split is None:
                    return self.actor_network.get_dist(td)
                return split[1].get_dist(split[0](td))
            except KeyError as err:
                raise self._network_inputs_missing("actor_network", self.actor_network, td) or err from err

    def _call(self, name: str, tensordict: TensorDictBase, which: Literal["params", "target", "detached"] = "params"):
        module = self.__dict__[name]
        with self._swap(name, which):
            try:
                return module(tensordict)
            except KeyError as err:
                raise self._network_inputs_missing(name, module, tensordict) or err from err

    def _network_inputs_missing(self, name: str, module: Any, tensordict: TensorDictBase) -> KeyError | None:
        """A clear error when ``module`` failed for want of inputs (tensordict's own message lacks context)."""
        missing = [k for k in getattr(module, "in_keys", []) if tensordict.get(k, None) is None]
        if not missing:
            return None
        got = sorted(map(str, tensordict.keys(True, True)))
        return KeyError(
            f"{type(self).__name__}: {name} reads {list(module.in_keys)} but {missing} are missing from the "
            f"tensordict it was called on, which holds {got}. When that tensordict is a step's 'next' entries, "
            f"they are {[('next', *((k,) if isinstance(k, str) else k)) for k in missing]}, which a Collector or "
            "env.rollout() writes."
        )

    def _run_actor(self, name: str, tensordict: TensorDictBase, which: ParamSet = "params") -> TensorDictBase:
        """Runs a policy with exploration off (``deterministic_sampling_mode``), as TorchRL's losses do."""
        with set_interaction_type(self.deterministic_sampling_mode):
            return self._call(name, tensordict, which)

    def _vmap_call(
        self,
        name: str,
        tensordict: TensorDictBase,
        out_key: NestedKey,
        which: Literal["params", "target", "detached"] = "params",
        *,
        td_dim: int | None = None,
        params: TensorDictBase | None = None,
        owned: bool = False,
        call: Callable[[TensorDictBase], TensorDictBase] | None = None,
    ) -> Tensor:
        """Runs the ensemble ``name`` over its stacked parameters; returns ``out_key`` shaped ``[N, *batch, ...]``.

        ``params`` overrides the parameter set (stacked along dim 0); ``td_dim=0`` gives each member its
        own slice of ``tensordict``. ``owned=True`` says the caller discards ``tensordict`` afterwards, so the
        last member may write into it instead of a copy (eager only). ``call`` replaces the network's own
        forward by a function of the input that runs parts of the network (its parameters swapped in).
        """
        module = self.__dict__[name]
        forward = module if call is None else call
        if params is not None:
            td_params = params
        elif which == "target":
            td_params = getattr(self, "target_" + name + "_params")
        else:
            td_params = getattr(self, name + "_params")
        detach = which == "detached" and params is None
        compiling = torch.compiler.is_compiling()
        slots = self._slots[name]
        keys = self._keys_of(name)
        if not compiling:
            # Eager: a loop over the members beats vmap's batching overhead for small networks (the
            # members' outputs and gradients are identical); compiled code keeps the vmap form.
            # Per-tensor ``detach``/``unbind`` avoid building a detached TensorDict and indexing each
            # parameter once per member.
            stacked = _leaves(td_params, keys)
            if (detach or which == "target") and params is None:
                members = self._grad_free_members(name, which, stacked, detach)
            else:
                members = list(zip(*[v.unbind(0) for v in stacked]))
            outs = []
            last = len(members) - 1
            for i, member in enumerate(members):
                # Each member sees the input as given: a fresh shallow copy, except for an indexed slice
                # (already a new TensorDict) and, for an owned input, the last member.
                if td_dim is not None and type(tensordict) is TensorDict:
                    data = tensordict[i]
                elif td_dim is not None:
                    data = tensordict[i].copy()
                elif owned and i == last:
                    data = tensordict
                else:
                    data = tensordict.copy()
                with slots.swap(member):
                    outs.append(forward(data).get(out_key))
            return torch.stack(outs, 0)
        if detach:
            td_params = td_params.detach()

        def run(p: TensorDictBase, data: TensorDictBase) -> Tensor:
            if compiling:
                with p.to_module(module, preserve_module_state=False):
                    return forward(data).get(out_key)
            with slots.swap([p.get(k) for k in keys]):
                return forward(data).get(out_key)

        return torch.vmap(run, (0, td_dim), randomness=self.vmap_randomness)(td_params, tensordict)

    def _grad_free_members(
        self, name: str, which: ParamSet, stacked: list[Tensor], detach: bool
    ) -> list[tuple[Tensor, ...]]:
        """Per-member views of stacked parameters that carry no autograd history (detached, or target
        parameters without ``requires_grad``), cached while the parameters keep their identity and storage
        (in-place updates such as soft target updates show through the views)."""
        cache = self.__dict__.setdefault("_members_cache", {})
        ptrs = [v.data_ptr() for v in stacked]
        hit = cache.get((name, which))
        if hit is not None and hit[0] == ptrs and all(a is b for a, b in zip(hit[1], stacked)):
            return hit[2]
        if not detach:
            if any(v.requires_grad for v in stacked):
                return list(zip(*[v.unbind(0) for v in stacked]))
        src = [v.detach() for v in stacked] if detach else stacked
        members = list(zip(*[v.unbind(0) for v in src]))
        if not torch.is_inference_mode_enabled():
            cache[(name, which)] = (ptrs, list(stacked), members)
        return members

    @property
    def vmap_randomness(self) -> str:
        """``torch.vmap`` randomness for ensembles: ``"different"`` if a network holds dropout (or a
        module type registered with :func:`add_random_module`), else ``"error"``."""
        if self._vmap_randomness is None:
            random = False
            for v in list(self.__dict__.values()):
                if isinstance(v, nn.Module) and any(is_random_module(m) for m in v.modules()):
                    random = True
            self._vmap_randomness = "different" if random else "error"
        return self._vmap_randomness

    def set_vmap_randomness(self, value: Literal["error", "same", "different"]) -> None:
        """Sets the randomness mode of vmapped ensembles."""
        if value not in ("error", "same", "different"):
            raise ValueError(f"vmap randomness must be 'error', 'same' or 'different', got {value!r}")
        self._vmap_randomness = value
        self._vmap_randomness_from_user = True

    # ------------------------------------------------------------- reductions
    @property
    def loss_mask_key(self) -> NestedKey | Literal["auto"] | None:
        """Entry masking invalid positions out of the reductions (``"auto"``, a key or ``None``)."""
        return self._loss_mask_key

    @loss_mask_key.setter
    def loss_mask_key(self, value: NestedKey | Literal["auto"] | None) -> None:
        self._loss_mask_key = value

    def _mask(self, tensordict: TensorDictBase) -> Tensor | None:
        key = self._loss_mask_key
        if key is None:
            return None
        keys = _AUTO_MASK_KEYS if key == "auto" else (key,)
        mask = None
        for k in keys:
            m = tensordict.get(k, None)
            if m is not None:
                mask = m if mask is None else mask & m
        return mask

    def _priority_weights(self, tensordict: TensorDictBase) -> Tensor | None:
        """The prioritized-replay weights (``"priority_weight"``) when ``use_prioritized_weights`` is ``True`` or
        ``"auto"`` and the batch has them, else ``None``."""
        if self.use_prioritized_weights in (True, "auto"):
            return tensordict.get(cast(_PriorityWeightKey, self._tensor_keys).priority_weight, None)
        return None

    def _reduce(self, loss: Tensor, mask: Tensor | None = None, weights: Tensor | None = None) -> Tensor:
        if mask is not None:
            while mask.ndim > loss.ndim and mask.shape[-1] == 1:
                mask = mask.squeeze(-1)
            mask = mask.reshape(mask.shape + (1,) * (loss.ndim - mask.ndim)).expand_as(loss)
            loss = torch.where(mask, loss, torch.zeros((), dtype=loss.dtype, device=loss.device))
            if self.reduction == "mean" and weights is None:
                return loss.sum() / mask.sum().clamp_min(1)
            if weights is not None:
                weights = weights * mask.to(weights.dtype) if weights.shape == mask.shape else weights
        return reduce(loss, self.reduction, weights)

    def _set_reduction(self, reduction: str | None) -> None:
        self.reduction = check_reduction(reduction)

    def _set_scalar_output_mode(self, mode: str | None, scalars: str) -> None:
        """How scalar diagnostics (``scalars``) are reported with ``reduction="none"``: left out
        (``"exclude"``; ``None`` warns, then excludes) or stored as non-tensor entries (``"non_tensor"``),
        since a scalar cannot share the per-sample shape of the losses."""
        if mode not in (None, "exclude", "non_tensor"):
            raise ValueError(f"scalar_output_mode must be None, 'exclude' or 'non_tensor', got {mode!r}")
        if self.reduction == "none" and mode is None:
            warnings.warn(
                f"{type(self).__name__} with reduction='none' leaves the scalar values ({scalars}) out of its "
                "output. Pass scalar_output_mode='exclude' to silence this warning, or "
                "scalar_output_mode='non_tensor' to report them as non-tensor entries.",
                TDRLWarning,
                stacklevel=3,
            )
            mode = "exclude"
        self.scalar_output_mode = mode

    # ------------------------------------------------------------------ misc
    def _finalize(
        self, tensordict: TensorDictBase, out: dict[str, Tensor], non_tensor: dict[str, Tensor] | None = None
    ) -> TensorDict:
        result = TensorDict(out, batch_size=[])
        if non_tensor:
            for key, value in non_tensor.items():
                result.set_non_tensor(key, value)
        if self.check_finite or _CHECK_FINITE[0]:
            if torch.compiler.is_compiling():
                raise RuntimeError("check_finite is an eager-mode check; disable it under torch.compile")
            self._assert_finite("input", tensordict)
            self._assert_finite("output", result)
        return result

    def _assert_finite(self, what: str, td: TensorDictBase) -> None:
        for key, value in td.items(True, True):
            assert_finite(str(type(self).__name__), key, cast(Tensor, value), what)

    def reset(self) -> None:
        """Resets adaptive state (nothing for most losses)."""

    def reset_parameters_recursive(self) -> None:  # type: ignore[override]  # TorchRL's LossModule takes no argument
        """Re-initialises every network (online and target parameters)."""
        for name in list(self._slots):
            module = self.__dict__[name]
            for which in ("params", "target"):
                if which == "target" and "target_" + name + "_params" not in self._modules:
                    continue
                with self._swap(name, which), torch.no_grad():
                    for sub in module.modules():
                        if hasattr(sub, "reset_parameters"):
                            sub.reset_parameters()

    def _optional_buffer(self, name: str, value: float | None, device: torch.device | None = None) -> None:
        """Registers ``value`` as the float buffer ``name`` (it then follows ``.to()``), or sets ``name`` to ``None``."""
        if value is None:
            setattr(self, name, None)
        else:
            self.register_buffer(name, torch.tensor(float(value), device=device or self._default_device()))

    def _default_device(self) -> torch.device:
        for p in self.parameters():
            return p.device
        return torch.device("cpu")

