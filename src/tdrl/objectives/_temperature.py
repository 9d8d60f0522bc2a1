"""The learnable entropy temperature (``log_alpha``) shared by the SAC-family losses (SAC, CQL, REDQ)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import torch
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl.data import Composite, TensorSpec

__all__ = ["TemperatureMixin", "auto_target_entropy"]


def auto_target_entropy(action_spec: TensorSpec | None, action_key: NestedKey) -> float:
    """``-dim(action)``, the usual SAC target entropy, from the action spec.

    With a ``Composite`` spec the dims of the composite holding the action (for a nested key such as
    ``("agents", "action")``, the ``"agents"`` entry: its agent dim) are not counted.

    Examples:
        >>> from tdrl.data import Composite, Unbounded
        >>> auto_target_entropy(Unbounded((4,)), "action")
        -4.0
        >>> agents = Composite(agents=Composite(action=Unbounded((3, 2)), shape=(3,)))
        >>> auto_target_entropy(agents, ("agents", "action"))
        -2.0
    """
    if action_spec is None:
        raise RuntimeError(
            "Cannot infer the dimensionality of the action: pass action_spec= or target_entropy= to the loss"
        )
    if isinstance(action_spec, Composite):
        leaf = action_spec[action_key]
        nested = isinstance(action_key, tuple) and len(action_key) > 1
        container = action_spec[action_key[:-1]].shape if nested else action_spec.shape
    else:
        leaf, container = action_spec, torch.Size([])
    if leaf is None:  # an actor built without a spec holds ``Composite(action=None)``
        raise RuntimeError(
            f"Cannot infer the dimensionality of the action: the spec has no shape for {action_key!r}; pass "
            "action_spec= or target_entropy= to the loss"
        )
    return -float(leaf.shape[len(container) :].numel())


class TemperatureMixin:
    """Adds ``log_alpha`` (parameter, or buffer when fixed), its bounds and the target entropy to a loss."""

    log_alpha: Tensor
    if TYPE_CHECKING:  # the loss it is mixed into is an nn.Module
        def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None: ...
    #: Buffer holding the target entropy (TorchRL's names: SAC ``_target_entropy``, CQL ``target_entropy_buffer``).
    _target_entropy_name: str = "_target_entropy"

    def _init_temperature(
        self,
        *,
        alpha_init: float,
        min_alpha: float | None,
        max_alpha: float | None,
        fixed_alpha: bool,
        target_entropy: str | float,
        action_spec: TensorSpec | None,
        actor_network: nn.Module,
        action_key: NestedKey,
        device: torch.device,
    ) -> None:
        self.register_buffer("alpha_init", torch.tensor(float(alpha_init), device=device))
        if bool(min_alpha) ^ bool(max_alpha):
            min_alpha = min_alpha or 0.0
            if max_alpha == 0:
                raise ValueError("max_alpha must be either None or greater than 0.")
            max_alpha = max_alpha or 1e9
        self.min_log_alpha = math.log(min_alpha) if min_alpha else None
        self.max_log_alpha = math.log(max_alpha) if max_alpha else None
        self.fixed_alpha = fixed_alpha
        log_alpha = torch.tensor(math.log(alpha_init), device=device)
        if fixed_alpha:
            self.register_buffer("log_alpha", log_alpha)
        else:
            self.log_alpha = nn.Parameter(log_alpha)
        # "auto" is resolved against the action key; a key renamed later by set_keys (a multi-agent
        # ("agents", "action")) resolves it again then, as TorchRL resolves it at first use.
        self._auto_entropy_spec = None
        self._entropy_pending = False
        if target_entropy == "auto":
            spec = action_spec if action_spec is not None else getattr(actor_network, "spec", None)
            if spec is None:
                auto_target_entropy(spec, action_key)  # raises, naming the fix
            self._auto_entropy_spec = spec
            target_entropy = self._resolve_auto_entropy(action_key)
        # TorchRL's buffer name, so state_dicts load across the two libraries.
        self.register_buffer(self._target_entropy_name, torch.tensor(float(target_entropy), device=device))

    def _resolve_auto_entropy(self, action_key: NestedKey) -> float:
        """``auto_target_entropy`` of the stored spec; NaN (pending) while ``action_key`` is not in it."""
        spec = self._auto_entropy_spec
        if isinstance(spec, Composite) and action_key not in spec.keys(True, True):
            self._entropy_pending = True
            return math.nan
        self._entropy_pending = False
        return auto_target_entropy(spec, action_key)

    def _refresh_auto_entropy(self, action_key: NestedKey) -> None:
        """Re-resolves an ``"auto"`` target entropy after the action key changed (called from ``set_keys``)."""
        if self._auto_entropy_spec is None:
            return
        getattr(self, self._target_entropy_name).fill_(self._resolve_auto_entropy(action_key))

    @property
    def target_entropy(self) -> Tensor:
        """Target entropy of the temperature loss (``-dim(action)`` for ``"auto"``)."""
        if self._entropy_pending:
            raise KeyError(
                f"target_entropy='auto': the action key {self._action_key_for_entropy()!r} is not in the action "
                f"spec (keys {list(cast(Any, self._auto_entropy_spec).keys(True, True))}); set_keys(action=...) or pass "
                "target_entropy="
            )
        return getattr(self, self._target_entropy_name)

    def _on_keys_changed(self) -> None:
        self._refresh_auto_entropy(self._action_key_for_entropy())
        super()._on_keys_changed()  # type: ignore[misc]  # LossModule's hook, next in the MRO

    def _action_key_for_entropy(self) -> NestedKey:
        return self._tensor_keys.action  # type: ignore[attr-defined]  # the loss's keys

    @property
    def _alpha(self) -> Tensor:
        if self.min_log_alpha is not None or self.max_log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.clamp_(self.min_log_alpha, self.max_log_alpha)
        return self.log_alpha.detach().exp()
