"""The IQL trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.off_policy import OffPolicyTrainer

__all__ = ["IQLTrainer"]


class IQLTrainer(OffPolicyTrainer):
    """Implicit Q-Learning (https://arxiv.org/abs/2110.06169).

    Takes the arguments of :class:`~tdrl.trainers.algorithms.off_policy.OffPolicyTrainer`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from tdrl.objectives import IQLLoss, SoftUpdate
        >>> env = GymEnv("Pendulum-v1")
        >>> net = torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor())
        >>> actor = ProbabilisticActor(TensorDictModule(net, ["observation"], ["loc", "scale"]), in_keys=["loc", "scale"],
        ...     distribution_class=TanhNormal, spec=env.action_spec, return_log_prob=True)
        >>> qvalue = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[8]), in_keys=["observation", "action"])
        >>> loss = IQLLoss(actor, qvalue, value_network=ValueOperator(torch.nn.Linear(3, 1), in_keys=["observation"]))
        >>> trainer = IQLTrainer(collector=Collector(env, actor, frames_per_batch=16, total_frames=32), total_frames=32,
        ...     optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     target_net_updater=SoftUpdate(loss, tau=0.05), progress_bar=False,
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8))
        >>> trainer.train()  # online IQL here; offline, give collector=None and a filled replay_buffer
        >>> trainer.collected_frames, trainer.optim_count
        (32, 4)
    """

    _algo_name = "IQL"
    _requires_target_updater = False
