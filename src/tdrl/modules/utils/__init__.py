"""Scale mappings (tensordict's ``biased_softplus``, ``mappings``...) and ``get_primers_from_module``."""

from tdrl.modules.utils.env_transforms import append_missing_env_transforms, missing_env_transforms
from tdrl.modules.utils.mappings import biased_softplus, expln, inv_softplus, mappings
from tdrl.modules.utils.primers import get_env_transforms_from_module, get_primers_from_module

__all__ = [
    "append_missing_env_transforms",
    "biased_softplus",
    "expln",
    "get_env_transforms_from_module",
    "get_primers_from_module",
    "inv_softplus",
    "mappings",
    "missing_env_transforms",
]
