"""``CEMPlanner``: cross-entropy-method planning (Botev et al., "The Cross-Entropy Method for Optimization",
2013; as used by PlaNet, https://arxiv.org/abs/1811.04551)."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase

from tdrl.envs.common import EnvBase
from tdrl.modules.planners.common import MPCPlannerBase

__all__ = ["CEMPlanner"]


class CEMPlanner(MPCPlannerBase):
    """Cross-entropy method: each of ``optim_steps`` rounds refits the action-sequence Gaussian to the
    ``top_k`` candidates with the highest return over the horizon.

    Args:
        env: the env to plan in (accepting any batch size).
        planning_horizon: length of the imagined trajectories.
        optim_steps: number of refits.
        num_candidates: sequences drawn per round.
        top_k: sequences kept per round.
        reward_key: the reward entry of the rollouts.
        action_key: where the planned action is written.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule as Mod
        >>> from tdrl.data import Bounded, Composite, Unbounded
        >>> from tdrl.envs.model_based import ModelBasedEnvBase
        >>> from tdrl.modules import WorldModelWrapper
        >>> class GoTo(ModelBasedEnvBase):  # 1-D point mass rewarded for being at x = 1
        ...     def __init__(self):
        ...         super().__init__(WorldModelWrapper(
        ...             Mod(lambda x, a: x + a, ["x", "action"], ["x"]),
        ...             Mod(lambda x: -(x - 1).abs(), ["x"], ["reward"])))
        ...         self.observation_spec = Composite(x=Unbounded((1,)))
        ...         self.state_spec = Composite(x=Unbounded((1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, (1,))
        ...         self.reward_spec = Unbounded((1,))
        ...     def _reset(self, td=None, **kwargs):
        ...         return TensorDict({"x": torch.zeros(1)}, [])
        >>> env = GoTo()
        >>> _ = torch.manual_seed(0)
        >>> planner = CEMPlanner(env, planning_horizon=3, optim_steps=5, num_candidates=64, top_k=8)
        >>> bool(planner(env.reset())["action"] > 0.8)
        True
    """

    def __init__(
        self,
        env: EnvBase,
        planning_horizon: int,
        optim_steps: int,
        num_candidates: int,
        top_k: int,
        reward_key: NestedKey = ("next", "reward"),
        action_key: NestedKey = "action",
    ) -> None:
        super().__init__(env=env, action_key=action_key)
        self._set_search(planning_horizon, optim_steps, num_candidates, top_k, reward_key)

    def planning(self, tensordict: TensorDictBase) -> torch.Tensor:
        start, means, stds = self._init_search(tensordict)
        k_dim = self._k_dim()
        for _ in range(self.optim_steps):
            actions, rollout = self._candidates(start, means, stds)
            # Returns [*batch, K, 1, 1]: summed over time (the reward's trailing dim stays).
            returns = self._masked_reward(rollout).sum(dim=rollout.ndim - 1, keepdim=True)
            _, best = self._top_k(actions, returns)
            means = best.mean(dim=k_dim, keepdim=True)
            stds = best.std(dim=k_dim, keepdim=True)
        return means[..., 0, 0, :]
