"""``_apply_to_composite`` / ``_apply_to_composite_inv`` at TorchRL's historical import path."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs import PendulumEnv, TransformedEnv
from tdrl.envs.transforms import Compose, ObservationTransform, Transform
from tdrl.envs.transforms.transforms import _apply_to_composite, _apply_to_composite_inv
from tdrl.envs.utils import check_env_specs


class SinTransform(Transform):
    """The custom transform of TorchRL's pendulum tutorial."""

    def _apply_transform(self, obs):
        return obs.sin()

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    @_apply_to_composite
    def transform_observation_spec(self, observation_spec):
        return Bounded(-1, 1, observation_spec.shape, dtype=observation_spec.dtype)


def test_apply_to_composite_in_an_env():
    env = TransformedEnv(PendulumEnv(), SinTransform(in_keys=["th"], out_keys=["sin"]))
    spec = env.observation_spec["sin"]
    assert isinstance(spec, Bounded) and spec.shape == env.observation_spec["th"].shape
    check_env_specs(env)
    rollout = env.rollout(3)
    torch.testing.assert_close(rollout["sin"], rollout["th"].sin())


def test_apply_to_composite_passes_leaves_and_skips_absent_keys():
    t = SinTransform(in_keys=["a", "missing"], out_keys=["b", "c"])
    out = t.transform_observation_spec(Composite(a=Unbounded((2,))))
    assert sorted(out.keys()) == ["a", "b"]
    assert isinstance(t.transform_observation_spec(Unbounded((2,))), Bounded)


class ToDouble(Transform):
    @_apply_to_composite_inv
    def transform_input_spec(self, spec):
        return spec.clone().to(torch.float64)


def test_apply_to_composite_inv_renames_in_action_and_state():
    inp = Composite(full_action_spec=Composite(action=Unbounded((2,))), full_state_spec=Composite(h=Unbounded((3,))))
    out = ToDouble(in_keys_inv=["action", "h"], out_keys_inv=["act", "h"]).transform_input_spec(inp)
    assert list(out["full_action_spec"].keys()) == ["act"]
    assert out["full_action_spec", "act"].dtype == torch.float64
    assert out["full_state_spec", "h"].dtype == torch.float64
    assert inp["full_action_spec", "action"].dtype == torch.float32  # the input is not modified
    bare = ToDouble(in_keys_inv=["action"]).transform_input_spec(Composite(action=Unbounded((2,))))
    assert bare["action"].dtype == torch.float64


def test_observation_transform_defaults_and_compose_keyword():
    assert ObservationTransform().in_keys == ["observation", "pixels"]
    composed = Compose(transforms=[SinTransform(in_keys=["x"])])
    assert composed(TensorDict(x=torch.zeros(2)))["x"].tolist() == [0.0, 0.0]
