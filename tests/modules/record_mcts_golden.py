"""Records TorchRL 0.14.1's MCTS scores (``torchrl.modules.PUCTScore``, ``UCBScore``, ``UCB1TunedScore``,
``EXP3Score``, ``MCTSScores``) on the cases of ``_mcts_cases.py`` into ``mcts_scores_torchrl_0_14_1.json``.
Not a test; run with the TorchRL reference interpreter from the repository root::

    /root/.cache/torchrl-anchor-venv/bin/python tests/modules/record_mcts_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def main() -> None:
    import torchrl.modules
    from _mcts_cases import compute

    golden = compute(torchrl.modules)
    (HERE / "mcts_scores_torchrl_0_14_1.json").write_text(json.dumps(golden, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
