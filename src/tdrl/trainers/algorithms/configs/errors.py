"""The error of every config check (torch-free: the ``tdrl`` command raises it before loading anything heavy)."""

from __future__ import annotations

__all__ = ["ConfigValidationError"]


class ConfigValidationError(ValueError):
    """A config names an unknown key, misses a required one, or points at a target that cannot be imported.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> from tdrl.trainers.algorithms.configs import validate_config
        >>> try:
        ...     validate_config(OmegaConf.create({"_target_": "torch.nn.Linear", "in_features": 2, "out_feature": 3}))
        ... except ConfigValidationError as err:
        ...     print("did you mean out_features?" in str(err), isinstance(err, ValueError))
        True True
    """
