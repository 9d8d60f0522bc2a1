"""``TicTacToeEnv``: two-player tic-tac-toe on a 3x3 board, stateless and batched, in pure torch.

The board is written from the point of view of the player to move: ``1`` marks their stones, ``0`` the
opponent's, ``-1`` an empty cell, so one policy can play both sides. ``"turn"`` says who moves (0 or 1),
``"mask"`` which cells are free; each player has its own reward (``("player0", "reward")``, ...), 1 on
the winning move and 0 otherwise. The state travels in the tensordict (``batch_locked=False``), like
TorchRL's env of the same name.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs.common import EnvBase

__all__ = ["TicTacToeEnv"]

# The 8 lines of the board as flat cell indices.
_LINES = torch.tensor(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)


class TicTacToeEnv(EnvBase):
    """Tic-tac-toe for two players (or one against a random opponent).

    Args:
        single_player: when ``True``, ``"player1"`` plays uniformly at random among the free cells right
            after each move of ``"player0"``; otherwise the players alternate through the actions given.
        device: device of the env.

    The batch comes from the tensordict given to ``reset`` (``env.reset(TensorDict(batch_size=[n]))``).
    ``rand_action`` only draws free cells (it reads ``"mask"``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> env = TicTacToeEnv()
        >>> td = env.reset()
        >>> td["board"].flatten().tolist()
        [-1, -1, -1, -1, -1, -1, -1, -1, -1]
        >>> td["action"] = torch.tensor(4)
        >>> out = env.step(td)
        >>> out["next", "board"][1].tolist(), out["next", "turn"].tolist()
        ([-1, 0, -1], [1])
        >>> env.reset(TensorDict(batch_size=[5]))["mask"].shape
        torch.Size([5, 9])
    """

    batch_locked = False

    def __init__(self, *, single_player: bool = False, device: Any = None) -> None:
        super().__init__(device=device)
        self.single_player = single_player
        dev = self.device
        self.action_spec = Categorical(9, shape=(), device=dev)
        self.full_observation_spec = Composite(
            board=Unbounded(shape=(3, 3), dtype=torch.int32, device=dev),
            turn=Categorical(2, shape=(1,), dtype=torch.int32, device=dev),
            mask=Categorical(2, shape=(9,), dtype=torch.bool, device=dev),
        )
        self.state_spec = self.full_observation_spec.clone()
        self.reward_spec = Composite(
            {
                ("player0", "reward"): Unbounded(shape=(1,), device=dev),
                ("player1", "reward"): Unbounded(shape=(1,), device=dev),
            }
        )
        done = Categorical(2, shape=(1,), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=done, terminated=done.clone(), truncated=done.clone())

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        shape = tensordict.batch_size if tensordict is not None else self.batch_size
        dev = self.device
        flag = torch.zeros((*shape, 1), dtype=torch.bool, device=dev)
        return TensorDict(
            {
                "board": torch.full((*shape, 3, 3), -1, dtype=torch.int32, device=dev),
                "turn": torch.zeros((*shape, 1), dtype=torch.int32, device=dev),
                "mask": torch.ones((*shape, 9), dtype=torch.bool, device=dev),
                "done": flag,
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
            shape,
            device=dev,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self._play(tensordict["board"], tensordict["turn"], tensordict["action"], None)
        if self.single_player:
            # The random opponent answers in the same step wherever the game goes on.
            answer = (~out["done"] & (out["turn"] == 1)).squeeze(-1)
            if answer.any():
                cells = self._random_free_cell(out["mask"])
                reply = self._play(out["board"], out["turn"], cells, answer)
                for key in ("board", "turn", "mask", "done", "terminated", ("player1", "reward")):
                    sel = answer.reshape(*answer.shape, *([1] * (out[key].ndim - answer.ndim)))
                    out[key] = torch.where(sel, reply[key], out[key])
        return out

    def _play(
        self, board: torch.Tensor, turn: torch.Tensor, action: torch.Tensor, active: torch.Tensor | None
    ) -> TensorDictBase:
        """One move on every board; only the ``active`` boards (all when ``None``) must play a free cell."""
        batch = board.shape[:-2]
        action = action.reshape(*batch, 1).long()
        flat = board.flatten(-2, -1)
        legal = flat.gather(-1, action).squeeze(-1) == -1
        if not bool((legal if active is None else legal | ~active).all()):
            raise ValueError("TicTacToeEnv: the action plays on an occupied cell (check the 'mask' entry)")
        flat = flat.scatter(-1, action, 1)
        lines = flat[..., _LINES.to(flat.device)]
        wins = (lines == 1).all(-1).any(-1, keepdim=True)
        free = flat == -1
        done = wins | ~free.any(-1, keepdim=True)
        # The next player sees their own stones as 1: swap 0 and 1, keep -1.
        next_board = torch.where(free, flat, 1 - flat).reshape(*batch, 3, 3)
        return TensorDict(
            {
                "board": next_board,
                "turn": 1 - turn,
                "mask": free,
                "done": done,
                "terminated": done.clone(),
                ("player0", "reward"): (wins & (turn == 0)).float(),
                ("player1", "reward"): (wins & (turn == 1)).float(),
            },
            batch,
        )

    @staticmethod
    def _random_free_cell(mask: torch.Tensor) -> torch.Tensor:
        # A finished board has no free cell: any index is fine there, the result is discarded.
        weights = mask.float() + (~mask.any(-1, keepdim=True)).float()
        return torch.multinomial(weights.reshape(-1, 9), 1).reshape(mask.shape[:-1])

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A uniform free cell for each board (any cell when ``tensordict`` has no ``"mask"``)."""
        if tensordict is None:
            tensordict = TensorDict(batch_size=self.batch_size, device=self.device)
        mask = tensordict.get("mask", None)
        if mask is None:
            mask = torch.ones((*tensordict.batch_size, 9), dtype=torch.bool, device=self.device)
        tensordict.set("action", self._random_free_cell(mask))
        return tensordict

    def _set_seed(self, seed: int | None) -> None:
        # Stateless and deterministic: random moves use torch's global generator, seeded by the caller.
        return None
