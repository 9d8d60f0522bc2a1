"""TorchRL's historical module path ``torchrl.envs.transforms.transforms``: every transform, re-exported."""

from tdrl.envs.transforms import *  # noqa: F403 - the whole public surface, kept in step with the package
from tdrl.envs.transforms import __all__  # noqa: F401
