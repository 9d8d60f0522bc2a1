"""The PPO trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["PPOTrainer"]


class PPOTrainer(OnPolicyTrainer):
    """Proximal Policy Optimization (https://arxiv.org/abs/1707.06347): several epochs of clipped updates per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 4. Build one from a preset with ``tdrl train algo=ppo`` or :func:`tdrl.trainers.run.build_run`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from tdrl.objectives import ClipPPOLoss
        >>> env = GymEnv("CartPole-v1")
        >>> actor = ProbabilisticActor(TensorDictModule(torch.nn.Linear(4, 2), ["observation"], ["logits"]),
        ...     in_keys=["logits"], distribution_class=OneHotCategorical, spec=env.action_spec, return_log_prob=True)
        >>> loss = ClipPPOLoss(actor, ValueOperator(torch.nn.Linear(4, 1), in_keys=["observation"]))
        >>> trainer = PPOTrainer(collector=Collector(env, actor, frames_per_batch=32, total_frames=64), total_frames=64,
        ...     frame_skip=1, optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(32), sampler=SamplerWithoutReplacement(),
        ...                                batch_size=16), progress_bar=False)
        >>> trainer.train()  # per batch: GAE, then 4 epochs of 2 minibatches
        >>> trainer.collected_frames, trainer.optim_count
        (64, 16)
    """

    _algo_name = "PPO"
    _default_num_epochs = 4
