"""CEMPlanner / MPPIPlanner find good actions on a 1-D point mass; MPCPlannerBase checks and done masking.
(Agreement with TorchRL at the same seed: tests/objectives/test_dreamer_golden.py.)"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod

from tdrl.envs import GymEnv, PendulumEnv
from tdrl.modules import CEMPlanner, MPCPlannerBase, MPPIPlanner
from tdrl.modules.planners.common import mask_post_done_reward
from tdrl.objectives.value import TDLambdaEstimator

from ..objectives._dreamer_scenario import point_mass_env

STARTS = TensorDict({"position": torch.tensor([[-1.0], [3.0]]), "velocity": torch.zeros(2, 1)}, [2])


def _cem(env):
    return CEMPlanner(env, planning_horizon=8, optim_steps=6, num_candidates=64, top_k=8)


def _mppi(env):
    value = Mod(lambda p: -(p - 1.0).abs() * 2, ["position"], ["state_value"])
    adv = TDLambdaEstimator(gamma=0.95, lmbda=0.9, value_network=value)
    return MPPIPlanner(env, adv, temperature=1.0, planning_horizon=8, optim_steps=6, num_candidates=64, top_k=8)


@pytest.mark.parametrize("make", [_cem, _mppi], ids=["cem", "mppi"])
def test_planner_pushes_towards_goal(make) -> None:
    torch.manual_seed(0)
    env = point_mass_env("tdrl")
    planner = make(env)
    action = planner(STARTS.clone())["action"]
    assert action.shape == (2, 1)
    assert action[0] > 0.5 and action[1] < -0.5, action
    # Closed loop: the planner drives the mass near the goal and beats doing nothing.
    data = env.rollout(12, planner, auto_reset=False, tensordict=STARTS[:1].clone())
    idle = env.rollout(12, lambda t: t.set("action", torch.zeros(1, 1)), auto_reset=False,
                       tensordict=STARTS[:1].clone())
    assert data["next", "reward"].sum() > idle["next", "reward"].sum() + 5
    assert (data["next", "position"][0, -4:] - 1).abs().max() < 0.6


def test_planner_needs_unlocked_env_and_valid_top_k() -> None:
    with pytest.raises(ValueError, match="batch_locked"):
        CEMPlanner(GymEnv("Pendulum-v1"), 3, 2, 8, 2)
    with pytest.raises(ValueError, match="top_k"):
        CEMPlanner(PendulumEnv(), 3, 2, 8, 9)


def test_planner_refuses_functional_call() -> None:
    env = point_mass_env("tdrl")
    with pytest.raises(ValueError, match="functional"):
        _cem(env)(STARTS.clone(), params=None)


def test_base_projects_into_action_spec() -> None:
    class Big(MPCPlannerBase):
        def planning(self, td):
            return torch.full((*td.batch_size, 1), 5.0)

    env = point_mass_env("tdrl")
    assert Big(env)(STARTS.clone())["action"].tolist() == [[1.0], [1.0]]
    assert Big(env).in_keys == ["position", "velocity"]


def test_rewards_after_done_are_ignored() -> None:
    reward = torch.ones(2, 4, 1)
    done = torch.zeros(2, 4, 1, dtype=torch.bool)
    done[0, 1] = True
    done[0, 3] = True
    td = TensorDict({("next", "reward"): reward, ("next", "done"): done}, [2, 4])
    masked = mask_post_done_reward(td, ("next", "reward"), [("next", "done")], time_dim=1)
    assert masked[..., 0].tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    # An ancestor done group wins over the agents' own.
    td["next", "agents", "done"] = torch.ones(2, 4, 1, dtype=torch.bool)
    masked = mask_post_done_reward(td, ("next", "reward"), [("next", "agents", "done"), ("next", "done")], 1)
    assert masked[1].sum() == 4
    with pytest.raises(KeyError, match="missing"):
        mask_post_done_reward(td, ("next", "reward"), [("next", "missing", "done")], 1)
