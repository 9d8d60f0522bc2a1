"""ModuleTransform: forward and inverse use, spec maps, errors."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.data import Composite, Unbounded
from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import ModuleTransform

from ._contract import TransformContract
from ._envs import VectorEnv


def _add_norm(spec):
    spec["obs_norm"] = Unbounded((*spec.shape, 1))
    return spec


def _norm_module():
    return TensorDictModule(lambda x: x.norm(dim=-1, keepdim=True), in_keys=["observation"], out_keys=["obs_norm"])


class TestModuleTransform(TransformContract):
    def make_transform(self):
        return ModuleTransform(module_factory=_norm_module, no_grad=True, observation_spec_transform=_add_norm)

    def check(self, rollout, setting):
        torch.testing.assert_close(rollout["next", "obs_norm"], rollout["next", "observation"].norm(dim=-1, keepdim=True))
        torch.testing.assert_close(rollout["obs_norm"], rollout["observation"].norm(dim=-1, keepdim=True))

    def check_inv(self, transform):
        doubled = TensorDictModule(lambda a: a * 2, in_keys=["policy_action"], out_keys=["action"])
        t = ModuleTransform(module=doubled, inverse=True)
        assert t.in_keys == [] and t.in_keys_inv == ["action"] and t.out_keys_inv == ["policy_action"]
        out = t.inv(TensorDict(policy_action=torch.ones(2)))
        assert out["action"].tolist() == [2.0, 2.0]


def test_inverse_in_env_and_spec_replacement():
    halve = TensorDictModule(lambda a: a / 2, in_keys=["action"], out_keys=["action"])
    env = TransformedEnv(VectorEnv(), ModuleTransform(module=halve, inverse=True,
                                                      action_spec_transform=Composite(action=Unbounded((2,), dtype=torch.float64))))
    assert isinstance(env.action_spec, Unbounded)  # a spec given replaces the whole (composite) action spec
    td = env.reset().set("action", torch.tensor([1.0, 1.0], dtype=torch.float64))
    before = td["observation"].clone()
    out = env.step(td)
    torch.testing.assert_close(out["next", "observation"], before + 0.1)  # 0.1 * (0.5 + 0.5)


def test_errors():
    with pytest.raises(ValueError, match="exactly one"):
        ModuleTransform()
    with pytest.raises(ValueError, match="use_ray_service"):
        ModuleTransform(module=_norm_module(), use_ray_service=True)
    t = ModuleTransform(module=_norm_module())
    with pytest.raises(RuntimeError, match="come from the module"):
        t.in_keys = ["x"]
