"""``MPPIPlanner``: model predictive path integral control (Williams et al., "Information Theoretic MPC for
Model-Based Reinforcement Learning", ICRA 2017), with the top-k selection of TD-MPC
(Hansen et al., https://arxiv.org/abs/2203.04955)."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from torch import nn

from tdrl.envs.common import EnvBase
from tdrl.modules.planners.common import MPCPlannerBase

__all__ = ["MPPIPlanner"]


class MPPIPlanner(MPCPlannerBase):
    """MPPI: candidates are scored by the advantage of their first step (``advantage_module`` on the
    rollout); the ``top_k`` are averaged with weights ``exp(temperature * advantage)`` to refit the mean and std.

    Args:
        env: the env to plan in (accepting any batch size).
        advantage_module: writes ``"advantage"`` on a ``[*batch, K, T]`` rollout (e.g. ``TDLambdaEstimator``).
        temperature: scale of the advantages in the weights.
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
        >>> from tdrl.objectives.value import TDLambdaEstimator
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
        >>> value = Mod(lambda x: -(x - 1).abs() * 3, ["x"], ["state_value"])
        >>> adv = TDLambdaEstimator(gamma=0.9, lmbda=0.95, value_network=value)
        >>> _ = torch.manual_seed(0)
        >>> planner = MPPIPlanner(env, adv, temperature=10.0, planning_horizon=3, optim_steps=5,
        ...     num_candidates=64, top_k=8)
        >>> bool(planner(env.reset())["action"] > 0.8)
        True
    """

    def __init__(
        self,
        env: EnvBase,
        advantage_module: nn.Module,
        temperature: float,
        planning_horizon: int,
        optim_steps: int,
        num_candidates: int,
        top_k: int,
        reward_key: NestedKey = ("next", "reward"),
        action_key: NestedKey = "action",
    ) -> None:
        super().__init__(env=env, action_key=action_key)
        self._set_search(planning_horizon, optim_steps, num_candidates, top_k, reward_key)
        self.advantage_module = advantage_module
        self.register_buffer("temperature", torch.as_tensor(temperature))

    def planning(self, tensordict: TensorDictBase) -> torch.Tensor:
        start, means, stds = self._init_search(tensordict)
        k_dim = self._k_dim()
        for _ in range(self.optim_steps):
            actions, rollout = self._candidates(start, means, stds)
            rollout.set(self.reward_key, self._masked_reward(rollout))
            self.advantage_module(rollout)
            advantage = rollout.get("advantage")[..., :1, :]  # first step: [*batch, K, 1, 1]
            top, best = self._top_k(actions, advantage)
            weights = (self.temperature * advantage.gather(k_dim, top)).exp()
            total = weights.sum(k_dim, True)
            means = (weights * best).sum(dim=k_dim, keepdim=True) / total
            stds = ((weights * (best - means).pow(2)).sum(dim=k_dim, keepdim=True) / total).sqrt()
        return means[..., 0, 0, :]
