"""The error of every config check (torch-free: the ``tdrl`` command raises it before loading anything heavy)."""

from __future__ import annotations

__all__ = ["ConfigValidationError"]


class ConfigValidationError(ValueError):
    """A config names an unknown key, misses a required one, or points at a target that cannot be imported."""
