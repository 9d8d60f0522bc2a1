"""Cases of the pure-torch custom envs traced on tdrl and TorchRL 0.14.1 (``record_torchrl_custom.py``).

``run(envs, name)`` builds the case from ``envs`` (``tdrl.envs`` or ``torchrl.envs``) and traces it with
``tests/envs/_golden_trace.py``: a fixed action sequence after a seeded reset.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parents[1]))

from _golden_trace import trace  # noqa: E402


def _cells(*cells: int, batch: tuple = ()) -> list[dict[str, torch.Tensor]]:
    return [{"action": torch.full(batch, c, dtype=torch.int64)} for c in cells]


def _batched_game() -> list[dict[str, torch.Tensor]]:
    # Three boards: a row win for player 0, a column win for player 1, a game still open; finished boards restart.
    games = [[0, 3, 1, 4, 2, 0, 1], [0, 1, 3, 4, 8, 7, 2], [0, 4, 8, 1, 7, 6, 2]]
    return [{"action": torch.tensor([g[t] for g in games])} for t in range(7)]


CASES: dict[str, Any] = {
    "tictactoe_p0_wins": lambda E: (E.TicTacToeEnv(), _cells(4, 0, 2, 6, 3, 5, 8, 1, 7), None),
    "tictactoe_draw_and_restart": lambda E: (E.TicTacToeEnv(), _cells(0, 4, 8, 1, 7, 6, 2, 5, 3, 4, 0), None),
    "tictactoe_batched": lambda E: (E.TicTacToeEnv(), _batched_game(), [3]),
}


def run(envs: Any, name: str) -> dict:
    from tensordict import TensorDict

    env, actions, batch = CASES[name](envs)
    reset_td = None if batch is None else TensorDict(batch_size=batch)
    return trace(env, actions, seed=0, reset_td=reset_td)
