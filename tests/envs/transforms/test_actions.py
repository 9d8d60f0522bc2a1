"""DiscreteActionProjection and ActionDiscretizer: the contract, specs and behaviour (grid values are
checked against TorchRL in test_golden_torchrl.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Bounded, MultiCategorical, MultiOneHot, OneHot
from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import ActionDiscretizer, DiscreteActionProjection
from tdrl.envs.utils import check_env_specs

from ._contract import TransformContract
from ._envs import OneHotEnv, VectorEnv


class TestDiscreteActionProjection(TransformContract):
    def base_env(self):
        return OneHotEnv(3)

    def make_transform(self):
        return DiscreteActionProjection(3, 5)

    def check(self, rollout, setting):
        action = rollout["action"]
        assert action.shape[-1] == 5 and (action.sum(-1) == 1).all()
        # The base env saw the projected action: an index < 3 is kept, a larger one redrawn below 3.
        index, seen = action.long().argmax(-1), rollout["next", "observation"].argmax(-1)
        assert torch.equal(seen[index < 3], index[index < 3])
        assert (seen < 3).all()

    def check_plain(self, data, out):
        assert out["action"].shape[-1] == 5
        assert torch.equal(out["action"].long().argmax(-1), data["action"].long().argmax(-1))

    def check_inv(self, transform):
        torch.manual_seed(0)
        action = torch.nn.functional.one_hot(torch.tensor([0, 2, 4, 3]), 5)
        out = transform.inv(TensorDict(action=action, batch_size=[4]))["action"]
        assert out.shape == (4, 3) and torch.equal(out[:2].argmax(-1), torch.tensor([0, 2]))
        assert (out.sum(-1) == 1).all()


def test_projection_checks_its_arguments():
    with pytest.raises(RuntimeError, match="max_actions"):
        DiscreteActionProjection(5, 3)
    with pytest.raises(TypeError, match="OneHot spec of width num_actions_effective=4"):
        _ = TransformedEnv(OneHotEnv(3), DiscreteActionProjection(4, 5)).action_spec
    with pytest.raises(RuntimeError, match="max_actions=5"):
        DiscreteActionProjection(3, 5).inv(TensorDict(action=torch.zeros(4)))
    spec = TransformedEnv(OneHotEnv(3), DiscreteActionProjection(3, 6)).action_spec
    assert isinstance(spec, OneHot) and spec.shape == (6,)


class TestActionDiscretizer(TransformContract):
    def make_transform(self):
        return ActionDiscretizer(5)

    def check(self, rollout, setting):
        action = rollout["action"]
        assert action.dtype == torch.int64 and action.shape[-1] == 2
        assert ((action >= 0) & (action < 5)).all()
        # VectorEnv adds 0.1 * sum(continuous action) to its observation: the grid is the cell centres.
        step = rollout["next", "observation_copy"][..., 0] - rollout["observation_copy"][..., 0]
        expected = 0.1 * (-0.8 + 0.4 * action.double()).sum(-1)
        fresh = ~rollout["next", "done"].squeeze(-1)
        torch.testing.assert_close(step[fresh].double(), expected[fresh], rtol=1e-4, atol=1e-5)

    def check_plain(self, data, out):
        torch.testing.assert_close(out["action"], data["action"])  # nothing to do outside an env


def test_discretizer_specs_and_keys():
    env = TransformedEnv(VectorEnv(), ActionDiscretizer(torch.tensor([2, 3])))
    spec = env.action_spec
    assert isinstance(spec, MultiCategorical) and spec.nvec.tolist() == [2, 3]
    torch.testing.assert_close(env.transform.intervals[0, :2], torch.tensor([-0.5, 0.5], dtype=torch.float64))
    onehot = TransformedEnv(VectorEnv(), ActionDiscretizer(4, categorical=False, out_action_key="discrete"))
    assert isinstance(onehot.full_action_spec["discrete"], MultiOneHot)
    assert onehot.full_action_spec["discrete"].shape == (8,)
    assert "action" not in onehot.full_action_spec.keys()
    check_env_specs(onehot)


def test_discretizer_random_sampling_stays_in_its_cell():
    env = TransformedEnv(VectorEnv(), ActionDiscretizer(4, sampling=ActionDiscretizer.SamplingStrategy.RANDOM))
    env.action_spec  # noqa: B018 (builds the grid)
    index = torch.tensor([[0, 3]] * 200)
    out = env.transform.inv(TensorDict(action=index, batch_size=[200]))["action"]
    assert ((out[:, 0] >= -1) & (out[:, 0] <= -0.5)).all() and ((out[:, 1] >= 0.5) & (out[:, 1] <= 1)).all()
    assert out[:, 0].std() > 0.05  # one draw per action, not one per dimension


def test_discretizer_errors():
    with pytest.raises(TypeError, match="must be Bounded"):
        _ = TransformedEnv(OneHotEnv(3), ActionDiscretizer(3)).action_spec
    with pytest.raises(ValueError, match="num_intervals has 3 entries"):
        _ = TransformedEnv(VectorEnv(), ActionDiscretizer(torch.tensor([2, 3, 4]))).action_spec
    with pytest.raises(ValueError, match="expected one of"):
        ActionDiscretizer(3, sampling="middle")
    assert ActionDiscretizer(3, sampling="low").sampling is ActionDiscretizer.SamplingStrategy.LOW
    with pytest.raises(RuntimeError, match="inside a TransformedEnv"):
        ActionDiscretizer(3).inv(TensorDict(action=torch.tensor([1])))
    assert Bounded  # the contract env's spec type
