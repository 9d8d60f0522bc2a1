"""Q-value action selection: ``QValueModule``, ``QValueActor`` and their distributional (C51) variants."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import TensorDictModule, TensorDictModuleBase, dispatch
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data import Composite, MultiCategorical, MultiOneHot, TensorSpec
from tdrl.modules.tensordict_module.action_space import action_leaf, resolve_action_space
from tdrl.modules.tensordict_module.common import SpecMixin
from tdrl.modules.tensordict_module.sequence import SafeSequential

__all__ = [
    "QValueModule",
    "DistributionalQValueModule",
    "QValueActor",
    "DistributionalQValueActor",
    "DistributionalDQNnet",
    "QValueHook",
    "DistributionalQValueHook",
]


def _one_hot_argmax(values: torch.Tensor) -> torch.Tensor:
    # argmax + one_hot: exactly one selected action even when values tie.
    return F.one_hot(values.argmax(-1), values.shape[-1])


def _infer_var_nums(var_nums: Sequence[int] | int | None, spec: TensorSpec | None) -> list[int] | int | None:
    if var_nums is not None or spec is None:
        return var_nums
    leaf = action_leaf(spec) if isinstance(spec, Composite) else spec
    if isinstance(leaf, (MultiOneHot, MultiCategorical)):
        return [int(n) for n in leaf.nvec]
    return None


class QValueModule(SpecMixin, TensorDictModuleBase):
    """Greedy action selection from action values: writes ``action``, ``action_value``, ``chosen_action_value``.

    Action spaces: ``"one_hot"`` (one-hot of the argmax), ``"categorical"`` (argmax index),
    ``"mult_one_hot"``/``"multi_categorical"`` (one choice per sub-space of sizes ``var_nums``, inferred from a
    ``MultiOneHot``/``MultiCategorical`` spec) and ``"binary"`` (each bit set where its value is positive).
    ``chosen_action_value`` is the value of the chosen action, shape ``[..., 1]`` (summed over sub-spaces).

    Args:
        action_space: action-space name (``"one-hot"``, ``"categorical"``...), or ``None`` to infer it from spec.
        action_value_key: key of the action values. Defaults to ``"action_value"``.
        action_mask_key: optional key of a boolean mask; masked actions are never chosen.
        out_keys: ``[action, action_value, chosen_action_value]`` keys.
        var_nums: sub-space sizes for multi action spaces.
        spec: the action spec.
        safe: project the action into ``spec``.
        strict_shape: check the action shape against the spec (``True``), reshape it (``"auto"``) or skip
            (``False``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> mod = QValueModule(action_space="categorical")
        >>> td = mod(TensorDict(action_value=torch.tensor([[1.0, 3.0, 2.0]]), batch_size=[1]))
        >>> td["action"], td["chosen_action_value"]
        (tensor([1]), tensor([[3.]]))
    """

    def __init__(
        self,
        action_space: str | None = None,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        var_nums: Sequence[int] | int | None = None,
        spec: TensorSpec | None = None,
        safe: bool = False,
        strict_shape: bool | Literal["auto"] | None = True,
    ) -> None:
        action_space, spec = resolve_action_space(action_space, spec)
        super().__init__()
        self.action_space = action_space
        self.var_nums = _infer_var_nums(var_nums, spec)
        if action_space in ("mult_one_hot", "multi_categorical") and self.var_nums is None:
            raise ValueError(f"QValueModule: action_space={action_space!r} needs var_nums (or a multi spec).")
        self.strict_shape = strict_shape
        action_value_key = "action_value" if action_value_key is None else action_value_key
        self.action_mask_key = action_mask_key
        self.in_keys = [action_value_key] + ([action_mask_key] if action_mask_key is not None else [])
        if out_keys is None:
            out_keys = ["action", action_value_key, "chosen_action_value"]
        elif unravel_key(action_value_key) not in [unravel_key(k) for k in out_keys]:
            raise RuntimeError(f"QValueModule: out_keys {list(out_keys)} must contain the action-value key "
                               f"{action_value_key!r}.")
        self.out_keys = list(out_keys)
        if spec is not None and not isinstance(spec, Composite):
            spec = Composite({self.out_keys[0]: spec})
        self.register_spec(safe=safe, spec=spec)

    @property
    def action_value_key(self) -> NestedKey:
        return self.in_keys[0]

    def _masked_values(self, tensordict: TensorDictBase) -> torch.Tensor:
        values = tensordict.get(self.action_value_key, None)
        if values is None:
            raise KeyError(f"{type(self).__name__}: action-value key {self.action_value_key!r} not found in the "
                           f"input (keys: {list(tensordict.keys(True, True))}).")
        if self.action_mask_key is not None:
            mask = tensordict.get(self.action_mask_key, None)
            if mask is None:
                raise KeyError(f"{type(self).__name__}: action-mask key {self.action_mask_key!r} not found.")
            values = torch.where(mask, values, torch.finfo(values.dtype).min)
        return values

    def _select(self, values: torch.Tensor) -> torch.Tensor:
        space = self.action_space
        if space == "one_hot":
            return _one_hot_argmax(values)
        if space == "categorical":
            return values.argmax(-1)
        if space == "binary":
            return (values > 0).to(torch.long)
        chunks = values.split(self.var_nums, dim=-1)
        if space == "mult_one_hot":
            return torch.cat([_one_hot_argmax(chunk) for chunk in chunks], -1)
        return torch.stack([chunk.argmax(-1) for chunk in chunks], -1)

    def _chosen_value(self, values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        if self.action_space == "categorical":
            return values.gather(-1, action.unsqueeze(-1))
        if self.action_space == "multi_categorical":
            chunks = values.split(self.var_nums, dim=-1)
            picked = [chunk.gather(-1, action[..., i : i + 1]) for i, chunk in enumerate(chunks)]
            return torch.cat(picked, -1).sum(-1, keepdim=True)
        return (action * values).sum(-1, keepdim=True)

    def _on_spec_change(self) -> None:
        # The action shape expected per sample (spec shape minus the composite's batch dims), or None.
        key = unravel_key(self.out_keys[0])
        leaf = self._spec.get(key, None)
        parent = self._spec[key[:-1]] if isinstance(key, tuple) and leaf is not None else self._spec
        self._sample_shape = None if leaf is None else leaf.shape[len(parent.shape):]

    def _check_shape(self, action: torch.Tensor, batch_shape: torch.Size) -> torch.Tensor:
        if self._sample_shape is None or self.strict_shape is False:
            return action
        target = torch.Size([*batch_shape, *self._sample_shape])
        if action.shape == target:
            return action
        if self.strict_shape == "auto":
            return action.reshape(target)
        raise RuntimeError(f"{type(self).__name__}: action shape {tuple(action.shape)} does not match the spec "
                           f"shape {tuple(target)} for {self.out_keys[0]!r}; set strict_shape='auto' to reshape.")

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = self._masked_values(tensordict)
        action = self._select(values)
        chosen = self._chosen_value(values, action)
        action = self._check_shape(action, values.shape[:-1])
        tensordict.update(dict(zip(self.out_keys, (action, values, chosen))))
        return tensordict


class DistributionalDQNnet(TensorDictModuleBase):
    """Applies ``log_softmax`` over the atom dimension (``-2``) of distributional action values.

    Args:
        in_keys: input keys. Defaults to ``["action_value"]``.
        out_keys: output keys. Defaults to ``["action_value"]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = DistributionalDQNnet()(TensorDict(action_value=torch.zeros(2, 5, 3), batch_size=[2]))
        >>> torch.allclose(td["action_value"].exp().sum(-2), torch.ones(2, 3))
        True
    """

    def __init__(self, *, in_keys: Sequence[NestedKey] | None = None,
                 out_keys: Sequence[NestedKey] | None = None) -> None:
        super().__init__()
        self.in_keys = ["action_value"] if in_keys is None else list(in_keys)
        self.out_keys = ["action_value"] if out_keys is None else list(out_keys)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            tensordict.set(out_key, tensordict.get(in_key).log_softmax(-2))
        return tensordict


class DistributionalQValueModule(QValueModule):
    """Greedy action selection from distributional action values ``[..., n_atoms, n_actions]`` (log-softmax).

    The expected value ``sum(exp(log_p) * support)`` ranks actions; writes ``action`` and ``action_value``.

    Args:
        action_space: action-space name or ``None`` (inferred from ``spec``).
        support: the atom values, shape ``[n_atoms]``.
        action_value_key: key of the log-probabilities. Defaults to ``"action_value"``.
        action_mask_key: optional boolean action mask key.
        out_keys: ``[action, action_value]``.
        var_nums: sub-space sizes for ``"mult_one_hot"``.
        spec: the action spec.
        safe: project the action into ``spec``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> mod = DistributionalQValueModule("categorical", support=torch.tensor([0.0, 1.0]))
        >>> logp = torch.tensor([[[0.9, 0.1], [0.1, 0.9]]]).log()  # action 0 mostly 0, action 1 mostly 1
        >>> mod(TensorDict(action_value=logp, batch_size=[1]))["action"]
        tensor([1])
    """

    def __init__(
        self,
        action_space: str | None,
        support: torch.Tensor,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        var_nums: Sequence[int] | int | None = None,
        spec: TensorSpec | None = None,
        safe: bool = False,
    ) -> None:
        action_value_key = "action_value" if action_value_key is None else action_value_key
        out_keys = ["action", action_value_key] if out_keys is None else out_keys
        super().__init__(action_space=action_space, action_value_key=action_value_key,
                         action_mask_key=action_mask_key, out_keys=out_keys, var_nums=var_nums, spec=spec,
                         safe=safe, strict_shape=False)
        if self.action_space in ("binary", "multi_categorical"):
            raise ValueError(f"DistributionalQValueModule does not support action_space={self.action_space!r}; "
                             "use 'one_hot', 'mult_one_hot' or 'categorical'.")
        self.register_buffer("support", support)

    def _expected(self, log_probs: torch.Tensor) -> torch.Tensor:
        support = self.support.to(log_probs.device)
        if log_probs.shape[-2] != support.shape[-1]:
            raise RuntimeError(f"DistributionalQValueModule: {support.shape[-1]} support atoms but action values "
                               f"of shape {tuple(log_probs.shape)} (atoms expected at dim -2).")
        return (log_probs.exp() * support.unsqueeze(-1)).sum(-2)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        log_probs = tensordict.get(self.action_value_key, None)
        if log_probs is None:
            raise KeyError(f"DistributionalQValueModule: action-value key {self.action_value_key!r} not found.")
        expected = self._expected(log_probs)
        if self.action_mask_key is not None:
            expected = torch.where(tensordict.get(self.action_mask_key), expected, torch.finfo(expected.dtype).min)
        action = self._select(expected)
        tensordict.update(dict(zip(self.out_keys, (action, log_probs))))
        return tensordict


def _wrap_value_net(module: nn.Module, in_keys: Sequence[NestedKey] | None,
                    action_value_key: NestedKey) -> TensorDictModuleBase:
    if isinstance(module, TensorDictModuleBase):
        if action_value_key not in module.out_keys:
            raise KeyError(f"The action-value key {action_value_key!r} is not among the module's out_keys "
                           f"{module.out_keys}.")
        return module
    return TensorDictModule(module, in_keys=["observation"] if in_keys is None else in_keys,
                            out_keys=[action_value_key])


def _qvalue_spec(spec: TensorSpec | None, action_key: NestedKey, extra_keys: Sequence[NestedKey]) -> Composite:
    if spec is None:
        spec = Composite()
    elif isinstance(spec, Composite):
        spec = spec.clone()
    else:
        spec = Composite({action_key: spec}, shape=spec.shape[:-1])
    if unravel_key(action_key) not in [unravel_key(k) for k in spec.keys(True, True)]:
        spec[action_key] = None
    for key in extra_keys:
        spec[key] = None
    return spec


class QValueActor(SafeSequential):
    """A Q-network followed by a :class:`QValueModule`: observation -> greedy action.

    Args:
        module: the Q-network (``nn.Module`` reading ``in_keys``, or a TensorDict module writing
            ``action_value_key``).

    Keyword Args:
        in_keys: network input keys when ``module`` is a plain module. Defaults to ``["observation"]``.
        spec: the action spec.
        safe: project the action into ``spec``.
        action_space: action-space name (``"one-hot"``, ``"categorical"``, ``"mult-one-hot"``, ``"binary"``).
        action_value_key: key of the action values. Defaults to ``"action_value"``.
        action_key: key of the action. Defaults to ``"action"``.
        chosen_action_value_key: defaults to ``"chosen_action_value"``.
        action_mask_key: optional boolean action-mask key.
        strict_shape: see :class:`QValueModule`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> actor = QValueActor(torch.nn.Linear(3, 4), in_keys=["observation"], action_space="one-hot")
        >>> td = actor(TensorDict(observation=torch.zeros(5, 3), batch_size=[5]))
        >>> td["action"].shape, td["action_value"].shape, td["chosen_action_value"].shape
        (torch.Size([5, 4]), torch.Size([5, 4]), torch.Size([5, 1]))
    """

    def __init__(
        self,
        module: nn.Module,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        spec: TensorSpec | None = None,
        safe: bool = False,
        action_space: str | None = None,
        action_value_key: NestedKey | None = None,
        action_key: NestedKey | None = None,
        chosen_action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        strict_shape: bool | Literal["auto"] | None = True,
    ) -> None:
        action_space, spec = resolve_action_space(action_space, spec)
        self.action_space = action_space
        action_value_key = "action_value" if action_value_key is None else action_value_key
        action_key = "action" if action_key is None else action_key
        chosen_key = "chosen_action_value" if chosen_action_value_key is None else chosen_action_value_key
        module = _wrap_value_net(module, in_keys, action_value_key)
        qvalue = QValueModule(
            action_value_key=action_value_key,
            out_keys=[action_key, action_value_key, chosen_key],
            spec=_qvalue_spec(spec, action_key, [action_value_key, chosen_key]),
            safe=safe,
            action_space=action_space,
            action_mask_key=action_mask_key,
            strict_shape=strict_shape,
        )
        super().__init__(module, qvalue)
        self.action_value_key = action_value_key


class DistributionalQValueActor(QValueActor):
    """A distributional Q-network (C51) followed by a :class:`DistributionalQValueModule`.

    Unless ``make_log_softmax=False``, a :class:`DistributionalDQNnet` applies ``log_softmax`` over the atoms.

    Args:
        module: the network writing ``[..., n_atoms, n_actions]`` values.
        support: the atom values.
        in_keys: network input keys. Defaults to ``["observation"]``.
        spec: the action spec.
        safe: project the action into ``spec``.
        var_nums: sub-space sizes for ``"mult_one_hot"``.
        action_space: action-space name.
        action_value_key: defaults to ``"action_value"``.
        action_mask_key: optional boolean action-mask key.
        make_log_softmax: add the log-softmax module. Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> net = torch.nn.Sequential(torch.nn.Linear(3, 5 * 4), torch.nn.Unflatten(-1, (5, 4)))
        >>> actor = DistributionalQValueActor(net, support=torch.linspace(-1, 1, 5), action_space="one-hot")
        >>> actor(TensorDict(observation=torch.zeros(2, 3), batch_size=[2]))["action"].shape
        torch.Size([2, 4])
    """

    def __init__(
        self,
        module: nn.Module,
        support: torch.Tensor,
        in_keys: Sequence[NestedKey] | None = None,
        spec: TensorSpec | None = None,
        safe: bool = False,
        var_nums: int | None = None,
        action_space: str | None = None,
        action_value_key: str = "action_value",
        action_mask_key: NestedKey | None = None,
        make_log_softmax: bool = True,
    ) -> None:
        action_space, spec = resolve_action_space(action_space, spec)
        self.action_space = action_space
        self.action_value_key = action_value_key
        module = _wrap_value_net(module, in_keys, action_value_key)
        qvalue = DistributionalQValueModule(
            action_space=action_space,
            support=support,
            action_value_key=action_value_key,
            action_mask_key=action_mask_key,
            out_keys=["action", action_value_key],
            var_nums=var_nums,
            spec=_qvalue_spec(spec, "action", [action_value_key]),
            safe=safe,
        )
        self.make_log_softmax = make_log_softmax
        modules: list[TensorDictModuleBase] = [module]
        if make_log_softmax and not isinstance(module, DistributionalDQNnet):
            modules.append(DistributionalDQNnet(in_keys=qvalue.in_keys[:1], out_keys=qvalue.in_keys[:1]))
        SafeSequential.__init__(self, *modules, qvalue)
        self.register_buffer("support", support)


def _hook_key(key: NestedKey) -> str:
    # Keyword calls of a dispatching module take string names; nested keys are joined with "_".
    key = unravel_key(key)
    return "_".join(key) if isinstance(key, tuple) else key


class QValueHook:
    """A forward hook turning a plain network's action values into ``(action, action_values, chosen_value)``.

    Register it on an ``nn.Module`` with ``module.register_forward_hook(hook)``: the module's output is replaced
    by what a :class:`QValueModule` computes from it, so an ``Actor`` with ``out_keys=["action",
    "action_value"]`` around the module writes the greedy action.

    Args:
        action_space: ``"one_hot"``, ``"mult_one_hot"``, ``"binary"`` or ``"categorical"`` (a name, not a spec).
        var_nums: sub-space sizes for ``"mult_one_hot"``.
        action_value_key: the action-value key of the inner :class:`QValueModule`. Defaults to
            ``"action_value"``.
        action_mask_key: optional mask key (a hook receives no mask, so leave it ``None`` unless the
            wrapped call provides it).
        out_keys: the inner module's out_keys. Defaults to ``["action", "action_value",
            "chosen_action_value"]``.

    Examples:
        >>> import torch
        >>> net = torch.nn.Linear(4, 3)
        >>> _ = net.register_forward_hook(QValueHook("categorical"))
        >>> action, values, chosen = net(torch.randn(5, 4))
        >>> bool((action == values.argmax(-1)).all()), chosen.shape
        (True, torch.Size([5, 1]))
    """

    def __init__(
        self,
        action_space: str,
        var_nums: int | None = None,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        if isinstance(action_space, TensorSpec):
            raise RuntimeError(f"{type(self).__name__}: pass the action space by name (e.g. 'one_hot'), "
                               f"not a spec (got {type(action_space).__name__}).")
        self.qvalue_model = self._make_module(action_space, var_nums, action_value_key, action_mask_key,
                                              out_keys)
        self.action_value_key = _hook_key(self.qvalue_model.in_keys[0])

    def _make_module(self, action_space: str, var_nums: int | None, action_value_key: NestedKey | None,
                     action_mask_key: NestedKey | None, out_keys: Sequence[NestedKey] | None) -> QValueModule:
        return QValueModule(action_space=action_space, var_nums=var_nums, action_value_key=action_value_key,
                            action_mask_key=action_mask_key, out_keys=out_keys)

    def __call__(self, net: nn.Module, observation: torch.Tensor,
                 values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.qvalue_model(**{self.action_value_key: values})


class DistributionalQValueHook(QValueHook):
    """A forward hook for distributional (C51) networks: log-probabilities ``[..., n_atoms, n_actions]`` in,
    ``(action, log_probs)`` out, ranked by their expected value over ``support``.

    Args:
        action_space: ``"one_hot"``, ``"mult_one_hot"`` or ``"categorical"``.
        support: the atom values, shape ``[n_atoms]``.
        var_nums: sub-space sizes for ``"mult_one_hot"``.
        action_value_key: the inner module's action-value key. Defaults to ``"action_value"``.
        action_mask_key: optional mask key.
        out_keys: the inner module's out_keys. Defaults to ``["action", "action_value"]``.

    Examples:
        >>> import torch
        >>> class Net(torch.nn.Module):
        ...     def forward(self, x):
        ...         return x.view(-1, 2, 3).log_softmax(-2)
        >>> net = Net()
        >>> _ = net.register_forward_hook(DistributionalQValueHook("categorical", support=torch.tensor([0.0, 1.0])))
        >>> action, log_probs = net(torch.randn(4, 6))
        >>> action.shape, log_probs.shape
        (torch.Size([4]), torch.Size([4, 2, 3]))
    """

    def __init__(
        self,
        action_space: str,
        support: torch.Tensor,
        var_nums: int | None = None,
        action_value_key: NestedKey | None = None,
        action_mask_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        self.support = support
        super().__init__(action_space, var_nums, action_value_key, action_mask_key, out_keys)

    def _make_module(self, action_space: str, var_nums: int | None, action_value_key: NestedKey | None,
                     action_mask_key: NestedKey | None, out_keys: Sequence[NestedKey] | None) -> QValueModule:
        return DistributionalQValueModule(action_space=action_space, support=self.support, var_nums=var_nums,
                                          action_value_key=action_value_key, action_mask_key=action_mask_key,
                                          out_keys=out_keys)
