"""Selection scores for Monte-Carlo tree search: PUCT, UCB, UCB1-Tuned and EXP3, as TensorDict modules."""

from __future__ import annotations

import abc
import functools
import math
import warnings
from enum import Enum
from typing import Any

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase

try:
    from enum import member as _member
except ImportError:  # Python 3.10: a partial in an Enum body is a member already

    def _member(value: Any) -> Any:
        return value


__all__ = ["EXP3Score", "MCTSScore", "MCTSScores", "PUCTScore", "UCB1TunedScore", "UCBScore"]


def _get(node: TensorDictBase, key: NestedKey, owner: str) -> Any:
    value = node.get(key, None)
    if value is None:
        raise KeyError(f"{owner}: key {key!r} not found in the node (keys: {list(node.keys(True, True))}).")
    return value


def _parent_visits(n_total: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    # A batch of parents ([B]) against per-action stats ([B, A]): one parent count per row.
    if 0 < n_total.ndim < like.ndim:
        return n_total.unsqueeze(-1)
    return n_total


class MCTSScore(TensorDictModuleBase, metaclass=abc.ABCMeta):
    """Base class of the MCTS scores: ``forward(node)`` writes the score of each action into ``node``.

    Examples:
        >>> issubclass(UCBScore, MCTSScore)
        True
    """

    @abc.abstractmethod
    def forward(self, node: TensorDictBase) -> TensorDictBase:
        """Writes the scores into ``node`` and returns it."""


class PUCTScore(MCTSScore):
    """``score = win_count / visits + c * prior_prob * sqrt(total_visits) / (1 + visits)`` (AlphaZero's PUCT).

    Silver et al., "Mastering the game of Go without human knowledge", 2017. An unvisited action has an
    infinite (or NaN, with no wins) first term, as in TorchRL.

    Keyword Args:
        c: the exploration constant.
        win_count_key: per-action sum of rewards. Defaults to ``"win_count"``.
        visits_key: per-action visit counts. Defaults to ``"visits"``.
        total_visits_key: the parent's visit count (scalar, or one per batch row). Defaults to ``"total_visits"``.
        prior_prob_key: per-action prior probabilities. Defaults to ``"prior_prob"``.
        score_key: where the scores are written. Defaults to ``"score"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> node = TensorDict(win_count=torch.tensor([10.0, 20.0]), visits=torch.tensor([5.0, 10.0]),
        ...                   total_visits=torch.tensor(50.0), prior_prob=torch.tensor([0.6, 0.4]))
        >>> PUCTScore(c=1.5)(node)["score"]
        tensor([3.0607, 2.3857])
    """

    def __init__(
        self,
        *,
        c: float,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        prior_prob_key: NestedKey = "prior_prob",
        score_key: NestedKey = "score",
    ) -> None:
        super().__init__()
        self.c = c
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.prior_prob_key = prior_prob_key
        self.score_key = score_key
        self.in_keys = [win_count_key, prior_prob_key, total_visits_key, visits_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        name = type(self).__name__
        win_count, visits = _get(node, self.win_count_key, name), _get(node, self.visits_key, name)
        n_total = _parent_visits(_get(node, self.total_visits_key, name), visits)
        prior = _get(node, self.prior_prob_key, name)
        node.set(self.score_key, win_count / visits + self.c * prior * n_total.sqrt() / (1 + visits))
        return node


class UCBScore(MCTSScore):
    """``score = win_count / visits + c * sqrt(total_visits) / (1 + visits)``: PUCT with a uniform prior.

    This is TorchRL's "UCB" exploration term (not UCB1's ``sqrt(2 ln N / n)``; see :class:`UCB1TunedScore`).

    Keyword Args:
        c: the exploration constant.
        win_count_key: per-action sum of rewards. Defaults to ``"win_count"``.
        visits_key: per-action visit counts. Defaults to ``"visits"``.
        total_visits_key: the parent's visit count. Defaults to ``"total_visits"``.
        score_key: where the scores are written. Defaults to ``"score"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> node = TensorDict(win_count=torch.tensor([15.0, 25.0]), visits=torch.tensor([10.0, 20.0]),
        ...                   total_visits=torch.tensor(100.0))
        >>> UCBScore(c=1.414)(node)["score"]
        tensor([2.7855, 1.9233])
    """

    def __init__(
        self,
        *,
        c: float,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        score_key: NestedKey = "score",
    ) -> None:
        super().__init__()
        self.c = c
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.score_key = score_key
        self.in_keys = [win_count_key, total_visits_key, visits_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        name = type(self).__name__
        win_count, visits = _get(node, self.win_count_key, name), _get(node, self.visits_key, name)
        n_total = _parent_visits(_get(node, self.total_visits_key, name), visits)
        node.set(self.score_key, win_count / visits + self.c * n_total.sqrt() / (1 + visits))
        return node


class EXP3Score(MCTSScore):
    """EXP3's action probabilities ``p_i = (1 - gamma) * w_i / sum(w) + gamma / K``.

    Auer et al., "The nonstochastic multiarmed bandit problem", 2002. Missing weights start at ones;
    :meth:`update_weights` applies the reward of the chosen action.

    Keyword Args:
        gamma: the uniform-exploration share, in ``[0, 1]``. Defaults to ``0.1``.
        weights_key: per-action weights. Defaults to ``"weights"``.
        action_prob_key: where the probabilities are also written. Defaults to ``"action_prob"``.
        reward_key: the reward entry name (kept for TorchRL compatibility). Defaults to ``"reward"``.
        score_key: where the probabilities are written. Defaults to ``"score"``.
        num_actions_key: the number of actions ``K``. Defaults to ``"num_actions"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> exp3 = EXP3Score(gamma=0.1)
        >>> node = exp3(TensorDict(weights=torch.tensor([1.0, 3.0]), num_actions=torch.tensor(2)))
        >>> node["score"]
        tensor([0.2750, 0.7250])
        >>> exp3.update_weights(node, action_idx=0, reward=0.5)
        >>> node["weights"]
        tensor([1.0952, 3.0000])
    """

    def __init__(
        self,
        *,
        gamma: float = 0.1,
        weights_key: NestedKey = "weights",
        action_prob_key: NestedKey = "action_prob",
        reward_key: NestedKey = "reward",
        score_key: NestedKey = "score",
        num_actions_key: NestedKey = "num_actions",
    ) -> None:
        super().__init__()
        if not 0 <= gamma <= 1:
            raise ValueError(f"EXP3Score: gamma must be in [0, 1], got {gamma}.")
        self.gamma = gamma
        self.weights_key = weights_key
        self.action_prob_key = action_prob_key
        self.reward_key = reward_key
        self.score_key = score_key
        self.num_actions_key = num_actions_key
        self.in_keys = [weights_key, num_actions_key]
        self.out_keys = [score_key]

    def _num_actions(self, node: TensorDictBase) -> int:
        k = _get(node, self.num_actions_key, "EXP3Score")
        if isinstance(k, torch.Tensor):
            return int(k.flatten()[0].item())  # one K for the whole batch
        if isinstance(k, int):
            return k
        raise ValueError(f"EXP3Score: {self.num_actions_key!r} must be an int or a tensor, got {type(k).__name__}.")

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        k = self._num_actions(node)
        weights = node.get(self.weights_key, None)
        if weights is None:
            weights = torch.ones((*node.batch_size, k), device=node.device)
            node.set(self.weights_key, weights)
        if weights.shape[-1] != k:
            raise ValueError(
                f"EXP3Score: {self.weights_key!r} of shape {tuple(weights.shape)} has {weights.shape[-1]} actions "
                f"but {self.num_actions_key!r} is {k}."
            )
        total = weights.sum(-1, keepdim=True)
        total = torch.where(total == 0, torch.ones_like(total), total)
        probs = (1 - self.gamma) * (weights / total) + self.gamma / k
        node.set(self.score_key, probs)
        if self.action_prob_key != self.score_key:
            node.set(self.action_prob_key, probs)
        return node

    def update_weights(self, node: TensorDictBase, action_idx: int, reward: float) -> None:
        """``w_a <- w_a * exp(gamma / K * reward / p_a)`` for the chosen action ``a`` (rewards in ``[0, 1]``).

        Warns (and leaves the weights) when ``p_a <= 0``; warns when the reward is outside ``[0, 1]``.
        """
        if not 0 <= reward <= 1:
            warnings.warn(f"EXP3Score: reward {reward} is outside EXP3's [0, 1] range.", UserWarning, stacklevel=2)
        weights = _get(node, self.weights_key, "EXP3Score")
        probs = _get(node, self.score_key, "EXP3Score")
        if weights.ndim == 0:
            raise ValueError("EXP3Score.update_weights: the weights must have an action dim, got a 0-dim tensor.")
        weight, prob = weights[..., action_idx], probs[..., action_idx]
        if torch.any(prob <= 0):
            warnings.warn(
                f"EXP3Score: probability {prob.tolist()} of action {action_idx} is not positive; weights unchanged.",
                UserWarning,
                stacklevel=2,
            )
            return
        r = torch.as_tensor(reward, device=weight.device, dtype=weight.dtype)
        weights[..., action_idx] = weight * torch.exp(self.gamma / weights.shape[-1] * (r / prob))
        node.set(self.weights_key, weights)


class UCB1TunedScore(MCTSScore):
    """UCB1-Tuned: ``mean_i + sqrt(ln N / n_i * min(1/4, V_i))``, ``V_i = var_i + sqrt(C ln N / n_i)``.

    Auer, Cesa-Bianchi, Fischer, "Finite-time analysis of the multiarmed bandit problem", 2002. ``var_i`` is
    the empirical reward variance (from the sum of squared rewards), ``ln N`` uses ``max(N, 1)``, and
    unvisited actions score ``finfo.max / 10`` so that they are tried first.

    Keyword Args:
        win_count_key: per-action sum of rewards. Defaults to ``"win_count"``.
        visits_key: per-action visit counts ``n_i``. Defaults to ``"visits"``.
        total_visits_key: the parent's visit count ``N``. Defaults to ``"total_visits"``.
        sum_squared_rewards_key: per-action sum of squared rewards. Defaults to ``"sum_squared_rewards"``.
        score_key: where the scores are written. Defaults to ``"score"``.
        exploration_constant: ``C``. Defaults to ``2.0``.

    Examples:
        >>> from tensordict import TensorDict
        >>> node = TensorDict(win_count=torch.tensor([3.0, 0.0]), visits=torch.tensor([4.0, 0.0]),
        ...                   total_visits=torch.tensor(4.0), sum_squared_rewards=torch.tensor([3.0, 0.0]))
        >>> UCB1TunedScore()(node)["score"][0]
        tensor(1.0444)
    """

    def __init__(
        self,
        *,
        win_count_key: NestedKey = "win_count",
        visits_key: NestedKey = "visits",
        total_visits_key: NestedKey = "total_visits",
        sum_squared_rewards_key: NestedKey = "sum_squared_rewards",
        score_key: NestedKey = "score",
        exploration_constant: float = 2.0,
    ) -> None:
        super().__init__()
        self.win_count_key = win_count_key
        self.visits_key = visits_key
        self.total_visits_key = total_visits_key
        self.sum_squared_rewards_key = sum_squared_rewards_key
        self.score_key = score_key
        self.exploration_constant = exploration_constant
        self.in_keys = [win_count_key, visits_key, total_visits_key, sum_squared_rewards_key]
        self.out_keys = [score_key]

    def forward(self, node: TensorDictBase) -> TensorDictBase:
        name = type(self).__name__
        wins, visits = _get(node, self.win_count_key, name), _get(node, self.visits_key, name)
        sq = _get(node, self.sum_squared_rewards_key, name)
        log_n = torch.log(torch.clamp(_parent_visits(_get(node, self.total_visits_key, name), wins), min=1.0))
        log_n = log_n.expand_as(visits)
        visited = visits > 0
        scores = torch.full_like(wins, torch.finfo(wins.dtype).max / 10.0)
        if visited.any():
            n, log_v = visits[visited], log_n[visited]
            mean = wins[visited] / n
            var = (sq[visited] / n - mean.pow(2) + (self.exploration_constant * log_v / n).sqrt()).clamp(min=0)
            scores[visited] = mean + (log_v / n * torch.minimum(torch.full_like(var, 0.25), var)).sqrt()
        node.set(self.score_key, scores)
        return node


class MCTSScores(Enum):
    """Factories of the scores with their usual constants: ``MCTSScores.UCB.value()`` is ``UCBScore(c=sqrt(2))``.

    Members: ``PUCT`` (``c=5``), ``UCB`` (``c=sqrt(2)``), ``UCB1_TUNED`` (``exploration_constant=2.0``) and
    ``EXP3`` (``gamma=0.1``).

    Examples:
        >>> type(MCTSScores.PUCT.value()).__name__, MCTSScores.PUCT.value().c
        ('PUCTScore', 5)
    """

    PUCT = _member(functools.partial(PUCTScore, c=5))
    UCB = _member(functools.partial(UCBScore, c=math.sqrt(2)))
    UCB1_TUNED = _member(functools.partial(UCB1TunedScore, exploration_constant=2.0))
    EXP3 = _member(functools.partial(EXP3Score, gamma=0.1))
