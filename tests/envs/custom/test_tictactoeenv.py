"""``TicTacToeEnv``: specs and fixed-move rollouts equal TorchRL 0.14.1's (``golden_custom_torchrl_0_14_1.pt``,
recorded by ``record_torchrl_custom.py``); wins, draws, masks, the random opponent and bad moves."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

import tdrl.envs as envs
from tdrl.envs import TicTacToeEnv
from tdrl.envs.utils import check_env_specs

from .._golden_trace import assert_same_trace
from ._custom_cases import CASES, run

GOLDEN = torch.load(Path(__file__).with_name("golden_custom_torchrl_0_14_1.pt"), weights_only=True)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith("tictactoe")))
def test_matches_torchrl(name: str) -> None:
    assert_same_trace(run(envs, name), GOLDEN["cases"][name])


def test_check_env_specs() -> None:
    check_env_specs(TicTacToeEnv())
    check_env_specs(TicTacToeEnv(single_player=True))


def _play(env: TicTacToeEnv, moves: list[int]) -> TensorDict:
    td = env.reset()
    for cell in moves:
        td["action"] = torch.tensor(cell)
        out = env.step(td)
        td = env.step_mdp(out)
    return out


def test_diagonal_win_rewards_the_mover_only() -> None:
    out = _play(TicTacToeEnv(), [0, 1, 4, 2, 8])
    assert out["next", "done"].item() and out["next", "terminated"].item()
    assert out["next", "player0", "reward"].item() == 1.0 and out["next", "player1", "reward"].item() == 0.0


def test_board_is_seen_by_the_player_to_move() -> None:
    out = _play(TicTacToeEnv(), [4, 0])
    # player 0 moves next: their stone (centre) is 1, the opponent's (corner) is 0.
    assert out["next", "board"].flatten().tolist() == [0, -1, -1, -1, 1, -1, -1, -1, -1]
    assert out["next", "mask"].tolist() == [False, True, True, True, False, True, True, True, True]
    assert out["next", "turn"].tolist() == [0]


def test_single_player_opponent_answers_in_the_same_step() -> None:
    torch.manual_seed(0)
    env = TicTacToeEnv(single_player=True)
    td = env.reset(TensorDict(batch_size=[64]))
    td["action"] = torch.full((64,), 4)
    nxt = env.step(td)["next"]
    assert (nxt["turn"] == 0).all() and (nxt["mask"].sum(-1) == 7).all()
    assert not nxt["mask"][:, 4].any()
    rollout = env.rollout(10, tensordict=env.reset(TensorDict(batch_size=[8])), break_when_any_done=False)
    assert (rollout["turn"] == 0).all()


def test_rand_action_draws_free_cells() -> None:
    torch.manual_seed(1)
    env = TicTacToeEnv()
    td = env.reset(TensorDict(batch_size=[200]))
    td["mask"][:, :8] = False
    assert (env.rand_action(td)["action"] == 8).all()


def test_occupied_cell_raises() -> None:
    env = TicTacToeEnv()
    td = env.reset()
    td["action"] = torch.tensor(3)
    td = env.step_mdp(env.step(td))
    td["action"] = torch.tensor(3)
    with pytest.raises(ValueError, match="occupied cell"):
        env.step(td)
