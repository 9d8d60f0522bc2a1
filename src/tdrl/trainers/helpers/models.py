"""TorchRL's ``trainers.helpers.models`` names: the activation table its example scripts read by name."""

from __future__ import annotations

from torch import nn

__all__ = ["ACTIVATIONS"]

#: Activation classes by the names TorchRL's example configs use (``activation: elu``).
ACTIVATIONS: dict[str, type[nn.Module]] = {"elu": nn.ELU, "tanh": nn.Tanh, "relu": nn.ReLU}
