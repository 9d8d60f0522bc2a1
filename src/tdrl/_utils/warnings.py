"""Warning category for tdrl's own warnings (the test suite turns them into errors)."""

from __future__ import annotations

__all__ = ["TDRLWarning"]


class TDRLWarning(UserWarning):
    """Base class of every warning tdrl emits."""
