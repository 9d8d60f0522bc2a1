"""The package logger."""

from __future__ import annotations

import logging
import os

__all__ = ["logger"]

logger = logging.getLogger("tdrl")
if not logger.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s [%(name)s][%(levelname)s] %(message)s"))
    logger.addHandler(_handler)
    logger.propagate = False
logger.setLevel(os.environ.get("TDRL_LOGGING_LEVEL", "INFO").upper())
