"""The one evaluation path: roll a policy out in an env without exploration and read the returns.

:class:`Evaluator` is used by the run folder's periodic best-policy evaluation and final evaluation
(:mod:`tdrl.trainers.run`), by ``tdrl eval``, by the :class:`~tdrl.trainers.hooks.LogValidationReward` hook
(TorchRL's names and scalars) and by the examples.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.envs import EnvBase, ExplorationType, set_exploration_type

__all__ = ["Evaluator", "evaluate_policy"]


class Evaluator:
    """Runs ``policy`` in ``env`` under ``exploration_type`` (deterministic by default), in eval mode, without grad.

    Args:
        env: the evaluation env; a batched env (``batch_size=[n]``) plays ``n`` episodes side by side.
        policy: the policy (a module or a callable on TensorDicts).
        max_steps: steps per rollout at most.
        exploration_type: how the policy acts (``ExplorationType.DETERMINISTIC``: the mode of its distribution).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv(batch_size=[2])
        >>> policy = lambda td: td.set("action", env.action_spec.zero())
        >>> returns = Evaluator(env, policy, max_steps=5).episode_returns(3)
        >>> len(returns)
        3
    """

    def __init__(self, env: EnvBase, policy: Any, *, max_steps: int,
                 exploration_type: ExplorationType = ExplorationType.DETERMINISTIC) -> None:
        if max_steps < 1:
            raise ValueError(f"Evaluator: max_steps must be >= 1, got {max_steps}")
        self.env, self.policy, self.max_steps, self.exploration_type = env, policy, max_steps, exploration_type

    @torch.no_grad()
    def rollout(self, *, break_when_any_done: bool = False) -> TensorDictBase:
        """One rollout of ``max_steps`` steps (``auto_reset``), the policy in eval mode for its duration."""
        policy = self.policy
        was_training = isinstance(policy, torch.nn.Module) and policy.training
        if was_training:
            policy.eval()
        try:
            with set_exploration_type(self.exploration_type):
                return self.env.rollout(self.max_steps, policy, auto_reset=True,
                                        break_when_any_done=break_when_any_done)
        finally:
            if was_training:
                policy.train()

    def episode_returns(self, episodes: int) -> list[float]:
        """Returns of ``episodes`` episodes, each summed up to the end of its first episode (or ``max_steps``).

        A batched env plays its ``n`` copies side by side, ``n`` times faster than one episode after the other;
        the rewards of a copy after its first end (an auto-reset's next episode) are not counted.
        """
        if episodes < 1:
            raise ValueError(f"Evaluator: episodes must be >= 1, got {episodes}")
        returns: list[float] = []
        while len(returns) < episodes:
            if not self.env.batch_size:
                data = self.rollout(break_when_any_done=True)
                returns.append(float(data["next", "reward"].sum()))
                continue
            data = self.rollout()  # [*batch, T]
            reward = data["next", "reward"].reshape(*data.shape, -1).sum(-1)
            done = data["next", "done"].reshape(*data.shape, -1).any(-1).long()
            in_first_episode = (done.cumsum(-1) - done) == 0  # up to and including the first done
            returns.extend(float(r) for r in (reward * in_first_episode).sum(-1).flatten())
        return returns[:episodes]


def evaluate_policy(env: EnvBase, policy: Any, *, episodes: int, max_steps: int) -> list[float]:
    """Deterministic returns of ``episodes`` episodes of ``policy`` in ``env``: :meth:`Evaluator.episode_returns`.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = PendulumEnv()
        >>> len(evaluate_policy(env, lambda td: td.set("action", env.action_spec.zero()), episodes=2, max_steps=3))
        2
    """
    return Evaluator(env, policy, max_steps=max_steps).episode_returns(episodes)
