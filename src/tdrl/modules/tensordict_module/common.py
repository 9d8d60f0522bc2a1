"""``SafeModule``: a ``TensorDictModule`` that carries output specs and can project outputs into them."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key_list
from tensordict.nn import TensorDictModule, TensorDictModuleBase
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data import Composite, TensorSpec

__all__ = [
    "SafeModule",
    "SpecMixin",
    "ensure_tensordict_compatible",
    "is_tensordict_compatible",
    "make_output_spec",
    "project_into",
    "project_outputs",
]


def make_output_spec(spec: TensorSpec | None, out_keys: Sequence[NestedKey], *, owner: str,
                     n_spec_keys: int | None = None) -> Composite:
    """Builds the ``Composite`` spec of a module's outputs; keys without a spec get ``None``.

    Args:
        spec: ``None``, a leaf spec (for the single output ``out_keys[0]``) or a ``Composite``.
        out_keys: the module's output keys.
        owner: the module class name, used in error messages.
        n_spec_keys: how many outputs a leaf spec may describe (default ``len(out_keys)``); a probabilistic
            module does not count its log-prob key.

    Returns:
        A ``Composite`` whose leaf keys are exactly ``out_keys``.

    Examples:
        >>> from tdrl.data import Unbounded
        >>> sorted(make_output_spec(Unbounded(3), ["action"], owner="SafeModule").keys())
        ['action']
    """
    out_keys = unravel_key_list(list(out_keys))
    if spec is not None and not isinstance(spec, TensorSpec):
        raise TypeError(f"{owner}: spec must be a TensorSpec, got {type(spec).__name__}.")
    if spec is None:
        spec = Composite()
    elif not isinstance(spec, Composite):
        n = len(out_keys) if n_spec_keys is None else n_spec_keys
        if n > 1:
            raise RuntimeError(
                f"{owner}: got one leaf spec for several out_keys {out_keys}; pass a Composite keyed by out_key "
                "or no spec."
            )
        spec = Composite({out_keys[0]: spec.clone()})
    else:
        spec = spec.clone()
    spec_keys = set(unravel_key_list(list(spec.keys(True, True))))
    for key in out_keys:
        if key not in spec_keys:
            spec[key] = None
    extra = set(unravel_key_list(list(spec.keys(True, True)))) - set(out_keys)
    if extra:
        raise RuntimeError(f"{owner}: spec has keys {sorted(map(str, extra))} that are not out_keys {out_keys}.")
    return spec


def project_outputs(module: nn.Module, _args: Any, tensordict_out: Any) -> Any:
    """Forward hook of ``safe=True`` modules: projects every output that has a spec into that spec.

    Args:
        module: the module (with a ``spec`` attribute).
        _args: the forward inputs (unused).
        tensordict_out: the forward output.

    Returns:
        The output, updated in place.
    """
    if not isinstance(tensordict_out, TensorDictBase):
        return tensordict_out
    for key, leaf in module._safe_leaves:
        value = tensordict_out.get(key, None)
        if value is not None:
            tensordict_out.set(key, project_into(leaf, value))
    return tensordict_out


def project_into(spec: TensorSpec, value: torch.Tensor) -> torch.Tensor:
    """Projects ``value`` into ``spec``, without a graph break under ``torch.compile``.

    Eager calls use ``spec.project``; compiled code skips its data-dependent ``is_in`` check, which changes
    nothing because projecting an in-domain value is the identity.

    Args:
        spec: the leaf spec.
        value: the value.

    Returns:
        The projected value.

    Examples:
        >>> import torch
        >>> from tdrl.data import Bounded
        >>> project_into(Bounded(-1.0, 1.0, (2,)), torch.tensor([3.0, 0.5]))
        tensor([1.0000, 0.5000])
    """
    if torch.compiler.is_compiling():
        return spec._project(value)
    return spec.project(value)


class SpecMixin:
    """``spec`` / ``safe`` handling shared by the safe module classes."""

    _spec: Composite

    def register_spec(self, safe: bool, spec: TensorSpec | None, *, n_spec_keys: int | None = None) -> None:
        """Stores the output spec and, with ``safe=True``, installs the projection hook.

        Args:
            safe: project outputs into the spec after each forward.
            spec: the spec (see :func:`make_output_spec`).
            n_spec_keys: see :func:`make_output_spec`.
        """
        self._spec = make_output_spec(spec, self.out_keys, owner=type(self).__name__, n_spec_keys=n_spec_keys)
        self.safe = safe
        if safe:
            leaves = [(k, s) for k, s in self._spec.items(True, True) if s is not None]
            if not leaves:
                raise RuntimeError(
                    f"{type(self).__name__}(safe=True) needs a spec for at least one of out_keys {self.out_keys}."
                )
            self._safe_leaves = leaves
            self.register_forward_hook(project_outputs)
        self._on_spec_change()

    def _on_spec_change(self) -> None:
        """Called whenever the spec is set; subclasses cache spec-derived values here."""

    @property
    def spec(self) -> Composite:
        """The ``Composite`` spec of the outputs (``None`` leaves for outputs without a spec)."""
        return self._spec

    @spec.setter
    def spec(self, spec: Composite) -> None:
        if not isinstance(spec, Composite):
            raise TypeError(f"{type(self).__name__}.spec must be a Composite, got {type(spec).__name__}.")
        self._spec = spec
        if getattr(self, "safe", False):
            self._safe_leaves = [(k, s) for k, s in spec.items(True, True) if s is not None]
        self._on_spec_change()

    def random(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes a random value of the first output's spec into ``tensordict``, ignoring the inputs.

        Args:
            tensordict: where to write.

        Returns:
            ``tensordict``.
        """
        key = self.out_keys[0]
        leaf = self._spec.get(key)
        if leaf is None:
            raise RuntimeError(f"{type(self).__name__}.random: out_key {key!r} has no spec to sample from.")
        tensordict.set(key, leaf.rand(tensordict.batch_size))
        return tensordict

    def random_sample(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Alias of :meth:`random`.

        Args:
            tensordict: where to write.

        Returns:
            ``tensordict``.
        """
        return self.random(tensordict)

    def to(self, *args: Any, **kwargs: Any) -> Any:
        out = super().to(*args, **kwargs)
        dest = args[0] if args else kwargs.get("device", kwargs.get("dtype"))
        if dest is not None and isinstance(dest, (str, torch.device, int)):
            self.spec = self._spec.to(dest)
        return out


class SafeModule(SpecMixin, TensorDictModule):
    """A ``TensorDictModule`` with an output ``spec``; ``safe=True`` projects outputs into it.

    Args:
        module: the wrapped callable (an ``nn.Module`` reading ``in_keys`` and returning ``out_keys``).
        in_keys: keys read from the input tensordict.
        out_keys: keys written.
        spec: a leaf spec (single output) or a ``Composite`` keyed by out_key.
        safe: project outputs that fall outside their spec (e.g. clamp to bounds) after each call.
        inplace: see ``TensorDictModule``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tdrl.data import Bounded
        >>> mod = SafeModule(torch.nn.Linear(3, 2), ["obs"], ["action"], spec=Bounded(-1, 1, (2,)), safe=True)
        >>> td = mod(TensorDict(obs=torch.full((4, 3), 100.0), batch_size=[4]))
        >>> bool(td["action"].abs().max() <= 1)
        True
    """

    def __init__(
        self,
        module: nn.Module,
        in_keys: Iterable[NestedKey],
        out_keys: Iterable[NestedKey],
        spec: TensorSpec | None = None,
        safe: bool = False,
        inplace: bool | str = True,
    ) -> None:
        super().__init__(module, in_keys=in_keys, out_keys=out_keys, inplace=inplace)
        self.register_spec(safe=safe, spec=spec)



def is_tensordict_compatible(module: nn.Module) -> bool:
    """Whether ``module`` already reads and writes a tensordict (``in_keys``/``out_keys`` and one argument).

    Args:
        module: the module.

    Returns:
        ``True`` for TensorDict modules, ``False`` for plain modules without keys.

    Examples:
        >>> import torch
        >>> is_tensordict_compatible(torch.nn.Linear(2, 2))
        False
    """
    if isinstance(module, TensorDictModuleBase):
        return True
    has_keys = hasattr(module, "in_keys"), hasattr(module, "out_keys")
    if not any(has_keys):
        return False
    if all(has_keys) and len(inspect.signature(module.forward).parameters) == 1:
        return True
    raise TypeError(f"{type(module).__name__} defines in_keys/out_keys but its forward takes several arguments; a "
                    "TensorDict module must take one tensordict, a plain module must not define keys.")


def ensure_tensordict_compatible(
    module: nn.Module,
    in_keys: Sequence[NestedKey] | None = None,
    out_keys: Sequence[NestedKey] | None = None,
    safe: bool = False,
    wrapper_type: type | None = TensorDictModule,
    **kwargs: Any,
) -> TensorDictModuleBase:
    """Returns ``module`` if it is a TensorDict module (checking its keys), else wraps it in ``wrapper_type``.

    Args:
        module: a TensorDict module or a plain ``nn.Module``.
        in_keys: expected/needed input keys.
        out_keys: expected/needed output keys.
        safe: passed to ``wrapper_type`` when it accepts it (``SafeModule``).
        wrapper_type: the wrapping class. Defaults to ``TensorDictModule``.
        **kwargs: extra arguments for ``wrapper_type`` (e.g. ``action_space`` for ``QValueActor``).

    Returns:
        A TensorDict module.

    Examples:
        >>> import torch
        >>> mod = ensure_tensordict_compatible(torch.nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
        >>> mod.in_keys, mod.out_keys
        (['x'], ['y'])
    """
    if is_tensordict_compatible(module):
        for name, keys in (("in_keys", in_keys), ("out_keys", out_keys)):
            if keys is not None and set(unravel_key_list(list(keys))) != set(unravel_key_list(getattr(module, name))):
                raise TypeError(f"The module's {name} {getattr(module, name)} do not match the expected {list(keys)}.")
        return module
    if wrapper_type is None:
        raise TypeError(f"{type(module).__name__} is not a TensorDict module and no wrapper_type was given.")
    params = inspect.signature(wrapper_type.__init__).parameters
    if in_keys is not None and "in_keys" in params:
        kwargs["in_keys"] = in_keys
    if out_keys is not None and "out_keys" in params:
        kwargs["out_keys"] = out_keys
    if "safe" in params:
        kwargs["safe"] = safe
    return wrapper_type(module, **kwargs)
