"""Invertible value transforms (``forward`` compresses value targets, ``inverse`` maps predictions back)."""

from __future__ import annotations

import abc

import torch
from torch import nn

from tdrl.modules.functional import signed_hyperbolic, signed_parabolic, symexp, symlog

__all__ = [
    "ValueTransform",
    "IdentityValueTransform",
    "SymLogValueTransform",
    "SignedHyperbolicValueTransform",
    "ComposeValueTransform",
]


class ValueTransform(nn.Module, abc.ABC):
    """An invertible element-wise transform of values: implement :meth:`forward` and :meth:`inverse`.

    Examples:
        >>> import torch
        >>> class Scale(ValueTransform):
        ...     def forward(self, value):
        ...         return value / 10
        ...     def inverse(self, value):
        ...         return value * 10
        >>> Scale().inverse(Scale()(torch.tensor([5.0])))
        tensor([5.])
    """

    @abc.abstractmethod
    def forward(self, value: torch.Tensor) -> torch.Tensor:
        """Maps values to the transformed space."""

    @abc.abstractmethod
    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        """Maps transformed values back."""


class IdentityValueTransform(ValueTransform):
    """The identity transform.

    Examples:
        >>> import torch
        >>> IdentityValueTransform()(torch.ones(2))
        tensor([1., 1.])
    """

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return value


class SymLogValueTransform(ValueTransform):
    """:func:`~tdrl.modules.functional.symlog` / ``symexp``.

    Examples:
        >>> import torch
        >>> t = SymLogValueTransform()
        >>> t.inverse(t(torch.tensor([-50.0, 3.0])))
        tensor([-50.,   3.])
    """

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return symlog(value)

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return symexp(value)


class SignedHyperbolicValueTransform(ValueTransform):
    """:func:`~tdrl.modules.functional.signed_hyperbolic` / ``signed_parabolic``.

    Args:
        epsilon: the linear term. Defaults to ``1e-3``.

    Examples:
        >>> import torch
        >>> t = SignedHyperbolicValueTransform()
        >>> t.inverse(t(torch.tensor([-50.0, 3.0])))
        tensor([-50.0000,   3.0000])
    """

    def __init__(self, epsilon: float = 1e-3) -> None:
        super().__init__()
        if epsilon <= 0:
            raise ValueError(f"epsilon must be positive, got {epsilon}.")
        self.epsilon = epsilon

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return signed_hyperbolic(value, self.epsilon)

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return signed_parabolic(value, self.epsilon)


class ComposeValueTransform(ValueTransform):
    """Chains transforms: ``forward`` applies them in order, ``inverse`` in reverse order.

    Args:
        *transforms: the transforms.

    Examples:
        >>> import torch
        >>> t = ComposeValueTransform(SymLogValueTransform(), SignedHyperbolicValueTransform())
        >>> torch.allclose(t.inverse(t(torch.tensor([7.0]))), torch.tensor([7.0]))
        True
    """

    def __init__(self, *transforms: ValueTransform) -> None:
        super().__init__()
        for transform in transforms:
            if not isinstance(transform, ValueTransform):
                raise TypeError(f"ComposeValueTransform takes ValueTransform instances, got {type(transform).__name__}.")
        self.transforms = nn.ModuleList(transforms)

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        for transform in self.transforms:
            value = transform(value)
        return value

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        for transform in reversed(self.transforms):
            value = transform.inverse(value)
        return value
