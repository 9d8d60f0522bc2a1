"""TorchRL's historical module path ``torchrl.trainers.trainers``: the trainer and its hooks, re-exported."""

from tdrl.trainers import *  # noqa: F403 - the trainer and hooks, kept in step with the package
from tdrl.trainers import __all__  # noqa: F401
