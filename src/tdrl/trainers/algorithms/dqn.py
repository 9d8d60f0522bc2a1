"""The DQN trainer."""

from __future__ import annotations

from typing import Any

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["DQNTrainer"]


class DQNTrainer(OffPolicyTrainer):
    """Deep Q-Network (https://arxiv.org/abs/1312.5602); pass the EGreedyModule as greedy module to anneal epsilon with the collected frames.

    ``greedy_module`` is TorchRL's name of ``exploration_module``. Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictSequential
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import EGreedyModule, QValueActor
        >>> from tdrl.objectives import DQNLoss, HardUpdate
        >>> env = GymEnv("CartPole-v1")
        >>> qnet = QValueActor(torch.nn.Linear(4, 2), spec=env.action_spec)
        >>> greedy = EGreedyModule(env.action_spec, eps_init=1.0, eps_end=0.1, annealing_num_steps=32)
        >>> loss = DQNLoss(qnet, delay_value=True)
        >>> trainer = DQNTrainer(collector=Collector(env, TensorDictSequential(qnet, greedy), frames_per_batch=16,
        ...     total_frames=32), total_frames=32, optim_steps_per_batch=2, loss_module=loss, greedy_module=greedy,
        ...     optimizer=torch.optim.Adam(loss.parameters()), target_net_updater=HardUpdate(loss, value_network_update_interval=4),
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8), progress_bar=False)
        >>> trainer.train()  # epsilon is annealed with the collected frames
        >>> trainer.collected_frames, trainer.optim_count, round(float(greedy.eps), 2)
        (32, 4, 0.1)
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
