"""TorchRL's historical module path ``torchrl.envs.transforms.transforms``: every transform, re-exported,
and the spec decorators TorchRL's custom-transform tutorials import from it."""

from tdrl.envs.transforms import *  # noqa: F403 - the whole public surface, kept in step with the package
from tdrl.envs.transforms import __all__  # noqa: F401
from tdrl.envs.transforms._spec_helpers import _apply_to_composite, _apply_to_composite_inv  # noqa: F401
