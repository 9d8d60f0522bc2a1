"""The DQN trainer."""

from __future__ import annotations

from typing import Any

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["DQNTrainer"]


class DQNTrainer(OffPolicyTrainer):
    """Deep Q-Network (https://arxiv.org/abs/1312.5602); pass the EGreedyModule as greedy module to anneal epsilon with the collected frames.

    ``greedy_module`` is TorchRL's name of ``exploration_module``. Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.
    """

    _algo_name = "DQN"
    _requires_target_updater = False

    def __init__(self, *, greedy_module: Any = None, **kwargs: Any) -> None:
        if greedy_module is not None and kwargs.get("exploration_module") is not None:
            raise ValueError("pass greedy_module or exploration_module, not both")
        if greedy_module is not None:
            kwargs["exploration_module"] = greedy_module
        super().__init__(**kwargs)
        self.greedy_module = greedy_module
