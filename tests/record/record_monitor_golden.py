"""Records TorchRL 0.14.1's ``LoggerMonitor`` on the scenario of ``_monitor_scenario.py`` into
``monitor_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/record/record_monitor_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _monitor_scenario import SCHEDULES, run  # noqa: E402


def main() -> None:
    from torchrl.record import loggers
    from torchrl.record.loggers import monitoring

    class Record:
        CSVLogger = loggers.CSVLogger
        Every = monitoring.Every
        LoggerMonitor = monitoring.LoggerMonitor

    golden = {name: run(Record, name) for name in SCHEDULES}
    out = Path(__file__).parent / "monitor_torchrl_0_14_1.json"
    out.write_text(json.dumps(golden, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
