"""Makes the step-by-step reference estimators (``_reference.py``) importable from these tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
