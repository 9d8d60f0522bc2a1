"""The REINFORCE trainer."""

from __future__ import annotations

from tdrl.trainers.algorithms.on_policy import OnPolicyTrainer

__all__ = ["ReinforceTrainer"]


class ReinforceTrainer(OnPolicyTrainer):
    """REINFORCE (Williams, 1992) with a learned baseline: one pass per batch.

    Takes the arguments of :class:`~tdrl.trainers.algorithms.on_policy.OnPolicyTrainer`; ``num_epochs``
    defaults to 1. Build one from a preset with ``tdrl train algo=reinforce`` or :func:`tdrl.trainers.run.build_run`.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.collectors import Collector
        >>> from tdrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
        >>> from tdrl.envs import GymEnv
        >>> from tdrl.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from tdrl.objectives import ReinforceLoss
        >>> env = GymEnv("CartPole-v1")
        >>> actor = ProbabilisticActor(TensorDictModule(torch.nn.Linear(4, 2), ["observation"], ["logits"]),
        ...     in_keys=["logits"], distribution_class=OneHotCategorical, spec=env.action_spec, return_log_prob=True)
        >>> loss = ReinforceLoss(actor, ValueOperator(torch.nn.Linear(4, 1), in_keys=["observation"]))
        >>> trainer = ReinforceTrainer(collector=Collector(env, actor, frames_per_batch=32, total_frames=64), total_frames=64,
        ...     frame_skip=1, optim_steps_per_batch=2, loss_module=loss, optimizer=torch.optim.Adam(loss.parameters()),
        ...     replay_buffer=ReplayBuffer(storage=LazyTensorStorage(32), sampler=SamplerWithoutReplacement(),
        ...                                batch_size=16), progress_bar=False)
        >>> trainer.train()  # per batch: GAE, then one epoch of 2 minibatches
        >>> trainer.collected_frames, trainer.optim_count
        (64, 4)
    """

    _algo_name = "REINFORCE"
    _default_num_epochs = 1
