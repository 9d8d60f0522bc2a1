"""TorchRL's historical module path ``torchrl.modules.models.models``: the model classes, re-exported."""

from tdrl.modules.models import (
    MLP,
    Conv2dNet,
    Conv3dNet,
    ConvNet,
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    DuelingCnnDQNet,
    DuelingMlpDQNet,
    NoisyLinear,
    SquashDims,
    Squeeze2dLayer,
    SqueezeLayer,
    ddpg_init_last_layer,
)

__all__ = [
    "MLP",
    "Conv2dNet",
    "Conv3dNet",
    "ConvNet",
    "DdpgCnnActor",
    "DdpgCnnQNet",
    "DdpgMlpActor",
    "DdpgMlpQNet",
    "DuelingCnnDQNet",
    "DuelingMlpDQNet",
    "NoisyLinear",
    "SquashDims",
    "Squeeze2dLayer",
    "SqueezeLayer",
    "ddpg_init_last_layer",
]
