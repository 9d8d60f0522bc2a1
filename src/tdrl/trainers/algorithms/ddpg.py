"""The DDPG trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["DDPGTrainer"]


class DDPGTrainer(OffPolicyTrainer):
    """Deep Deterministic Policy Gradient (https://arxiv.org/abs/1509.02971).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import MLP, TanhModule, ValueOperator
        >>> from tdrl.objectives import DDPGLoss, SoftUpdate
        >>> env = GymEnv("Pendulum-v1")
        >>> actor = TensorDictSequential(TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["param"]),
        ...                              TanhModule(["param"], ["action"], spec=env.action_spec))
        >>> loss = DDPGLoss(actor, ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]),
        ...                                           in_keys=["observation", "action"]))
        >>> trainer = DDPGTrainer(collector=Collector(env, actor, frames_per_batch=16, total_frames=32), total_frames=32,
        ...     optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     target_net_updater=SoftUpdate(loss, tau=0.05), progress_bar=False,
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8))
        >>> trainer.train()
        >>> trainer.collected_frames, trainer.optim_count
        (32, 4)
    """

    _algo_name = "DDPG"
    _requires_target_updater = False
