"""The input stage of ``EnvBase.step``: each action checked against its spec before the env sees it.

What is checked, and why it stays cheap (the step is a hot path):

* presence and shape of every action leaf (a tuple compare per leaf);
* dtype: a floating action for a discrete spec (``OneHot``, ``Categorical``, ``Binary``, ...) is refused
  (an attribute compare; TorchRL passes it through and the env casts ``0.7`` to ``0``);
* domain of indices, always: a ``Categorical`` index in ``[0, n)``, a ``BoundedDiscrete`` value in
  ``[low, high]`` (one ``aminmax``, ~2 us: an out-of-range index otherwise reaches the env, which may
  index out of bounds or silently wrap);
* domain of one-hot and binary values (a ``OneHot`` row with exactly one hot entry, a ``Binary`` value in
  ``{0, 1}``) only with ``run_type_checks=True``: three ops per step (~5 us, 10-15% of a gym CartPole
  step), and the common mistake, a float action, is already caught by the dtype check.

Continuous ``Bounded`` actions are not range-checked: policies routinely emit values a hair outside and
envs clip them, as in TorchRL.

Every error names the env, the action key, the spec and the offending value (with its index).

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tdrl.data import Categorical
    >>> check = ActionCheck("MyEnv", [("action", Categorical(3, shape=(2,)))], batch_locked=True, batch_dims=1)
    >>> check(TensorDict({"action": torch.tensor([0, 2])}, [2]))
    >>> check(TensorDict({"action": torch.tensor([0, 3])}, [2]))
    Traceback (most recent call last):
    ...
    ValueError: MyEnv.step(): action 'action' holds 3 at index (1,), outside its spec Categorical(n=3, shape=(2,), dtype=torch.int64): expected an index in [0, 2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data import Binary, BoundedDiscrete, Categorical, NonTensor, OneHot

__all__ = ["ActionCheck", "describe_spec"]


def describe_spec(spec: Any) -> str:
    """A one-line description of a spec: its class, size, shape and dtype.

    Examples:
        >>> from tdrl.data import OneHot
        >>> describe_spec(OneHot(4))
        'OneHot(n=4, shape=(4,), dtype=torch.bool)'
    """
    parts = []
    n = getattr(spec, "n", None)
    if isinstance(n, int):
        parts.append(f"n={n}")
    if isinstance(spec, BoundedDiscrete):
        parts.append(f"low={spec.low.min().item()}, high={spec.high.max().item()}")
    parts += [f"shape={tuple(spec.shape)}", f"dtype={spec.dtype}"]
    return f"{type(spec).__name__}({', '.join(parts)})"


def _first(mask: torch.Tensor, value: torch.Tensor) -> tuple[tuple[int, ...], Any]:
    index = tuple(int(i) for i in mask.nonzero()[0])
    return index, value[index].tolist()


def _range_check(spec: Any) -> Callable[[torch.Tensor], str | None]:
    """Categorical indices in ``[0, n)``, BoundedDiscrete values in ``[low, high]``: one ``aminmax``."""
    categorical = type(spec) is Categorical
    low, high = (0, spec.n - 1) if categorical else (int(spec.low.min()), int(spec.high.max()))
    what = "an index" if categorical else "a value"

    def check(value: torch.Tensor) -> str | None:
        if value.numel() == 0:
            return None
        lo, hi = torch.aminmax(value)
        if lo.item() >= low and hi.item() <= high:
            return None
        index, bad = _first((value < low) | (value > high), value)
        return f"holds {bad} at index {index}, outside its spec {{spec}}: expected {what} in [{low}, {high}]"

    return check


def _one_hot_check(value: torch.Tensor) -> str | None:
    """One hot entry per row (and only 0/1 values for non-bool dtypes)."""
    hot = value.sum(-1)
    if value.dtype == torch.bool:
        if torch.equal(hot, torch.ones_like(hot)):
            return None
    elif torch.equal(hot, torch.ones_like(hot)) and torch.equal(value.clamp(0, 1), value):
        return None
    ok = (hot == 1) & ((value == 0) | (value == 1)).all(-1)
    index = tuple(int(i) for i in (~ok).nonzero()[0])
    return (f"holds {value[index].tolist()} at index {index}, outside its spec {{spec}}: "
            "expected a one-hot vector (one 1, zeros elsewhere)")


def _binary_check(value: torch.Tensor) -> str | None:
    """Binary values in ``{0, 1}``."""
    if torch.equal(value.clamp(0, 1), value):
        return None
    index, item = _first((value != 0) & (value != 1), value)
    return f"holds {item} at index {index}, outside its spec {{spec}}: expected 0 or 1"


def _domain_check(spec: Any) -> Callable[[torch.Tensor], str | None] | None:
    """A function returning a description of the first out-of-domain value, or None (None: no check).

    The happy path of each is one or two tensor ops and one sync; the index of the culprit is only
    searched for once something is wrong.
    """
    kind = type(spec)
    if kind is Categorical or kind is BoundedDiscrete:
        return _range_check(spec)
    if kind is OneHot:
        return _one_hot_check
    if kind is Binary:
        return _binary_check
    return None


class ActionCheck:
    """Checks the action entries of a step input against their specs; raises naming key, spec and value.

    Args:
        env_name: the env class name, for the messages.
        actions: ``(key, spec)`` for each action leaf (the full, batched specs).

    Keyword Args:
        batch_locked: whether the env's batch size is fixed (else the expected shape follows the input's).
        batch_dims: the number of batch dims of the specs.
        full: also check one-hot and binary values (the env's ``run_type_checks``).
    """

    def __init__(self, env_name: str, actions: list[tuple[NestedKey, Any]], *, batch_locked: bool,
                 batch_dims: int, full: bool = False) -> None:
        self.env_name = env_name
        # Ragged (-1) dims, e.g. LLM tokens or chat messages: a lazy stack cannot be read as one tensor, so only
        # the entry's presence is checked. Non-tensor leaves (text, a None tensorclass field such as
        # History.tool_calls, which is not stored at all) are not checked.
        self.present_only = [(k, spec) for k, spec in actions
                             if not isinstance(spec, NonTensor) and -1 in spec.shape]
        actions = [(k, spec) for k, spec in actions if not isinstance(spec, NonTensor) and -1 not in spec.shape]
        self.actions = actions
        self.batch_locked = batch_locked
        self.batch_dims = batch_dims
        flat = all(isinstance(k, str) for k, _ in actions)
        # (key, shape, dtype) compared per step on the fast path; anything unusual takes the slow path. A
        # batch-unlocked env (PendulumEnv) takes it too when the input has the specs' batch size, the common case.
        self.fast = [(k, spec.shape, spec.dtype) for k, spec in actions] if flat else None
        self.spec_batch = actions[0][1].shape[:batch_dims] if actions else None
        self.discrete = [(k, spec) for k, spec in actions if getattr(spec, "domain", "") == "discrete"
                         and not spec.dtype.is_floating_point]
        cheap = (Categorical, BoundedDiscrete)
        domains = [(k, _domain_check(spec), spec) for k, spec in self.discrete if full or type(spec) in cheap]
        self.domains = [(k, fn, spec) for k, fn, spec in domains if fn is not None]

    def __call__(self, tensordict: TensorDictBase) -> None:
        d = tensordict._tensordict if type(tensordict) is TensorDict else None
        if self.present_only:
            self._check_present(tensordict)
        if self.fast is not None and d is not None and (
            self.batch_locked or tensordict._batch_size == self.spec_batch
        ):
            for key, shape, dtype in self.fast:
                value = d.get(key)
                if value is None or value.shape != shape or value.dtype != dtype:
                    self._slow(tensordict)
                    break
        else:
            self._slow(tensordict)
        for key, check, spec in self.domains:
            value = d[key] if d is not None and type(key) is str else tensordict.get(key)
            problem = check(value)
            if problem is not None:
                raise ValueError(f"{self.env_name}.step(): action {key!r} " + problem.format(spec=describe_spec(spec)))

    def _check_present(self, tensordict: TensorDictBase) -> None:
        keys = set(tensordict.keys(True, True))
        for key, spec in self.present_only:
            if key not in keys:
                raise KeyError(
                    f"{self.env_name}.step(): the input tensordict has no action entry {key!r} "
                    f"(expected an entry for its spec {describe_spec(spec)}); "
                    "write one with env.rand_action(td) or a policy before stepping"
                )

    def _slow(self, tensordict: TensorDictBase) -> None:
        """Presence, shape and dtype of every action, with a message for the first that does not fit."""
        nb = self.batch_dims
        for key, spec in self.actions:
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"{self.env_name}.step(): the input tensordict has no action entry {key!r} "
                    f"(expected a tensor of shape {tuple(spec.shape)} and dtype {spec.dtype}); "
                    "write one with env.rand_action(td) or a policy before stepping"
                )
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{self.env_name}.step(): action {key!r} is a {type(value).__name__}, "
                                f"expected a tensor for its spec {describe_spec(spec)}")
            expected = spec.shape if self.batch_locked else (*tensordict.batch_size, *spec.shape[nb:])
            if value.shape != expected:
                raise ValueError(
                    f"{self.env_name}.step(): action {key!r} has shape {tuple(value.shape)}, "
                    f"expected {tuple(expected)} (spec {describe_spec(spec)})"
                )
        for key, spec in self.discrete:
            value = tensordict.get(key)
            if value.dtype.is_floating_point:
                raise TypeError(
                    f"{self.env_name}.step(): action {key!r} is {value.dtype} (first values "
                    f"{value.flatten()[:4].tolist()}), but its spec {describe_spec(spec)} is discrete: write "
                    f"{spec.dtype} actions (a discrete policy, or spec.encode / .to(dtype) of class indices)"
                )
