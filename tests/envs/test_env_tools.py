"""make_tensordict, get_available_libraries and register_gym_spec_conversion."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from tdrl.data import Bounded, NonTensor
from tdrl.envs import (
    GymEnv,
    PendulumEnv,
    get_available_libraries,
    make_tensordict,
    register_gym_spec_conversion,
)
from tdrl.envs.libs import _gym_spaces
from tdrl.envs.libs._gym_spaces import space_to_spec


def test_make_tensordict_zeros_every_step_entry():
    env = PendulumEnv()
    td = make_tensordict(env, policy=lambda t: t.set("action", torch.ones(1)))
    assert ("next", "reward") in td.keys(True, True) and "action" in td.keys()
    assert all(not v.any() for v in td.values(True, True))


def test_available_libraries_reports_dm_control():
    libs = get_available_libraries()
    assert libs["dm_control"] is True  # installed in this venv (the dmc extra)
    assert set(libs) == {"gym", "gym[atari]", "dm_control", "habitat", "gym-super-mario-bros"}


@pytest.fixture
def clean_registry():
    saved = dict(_gym_spaces._CONVERSIONS)
    yield
    _gym_spaces._CONVERSIONS.clear()
    _gym_spaces._CONVERSIONS.update(saved)


def test_registered_conversion_overrides_builtin_and_reaches_envs(clean_registry):
    calls = []

    @register_gym_spec_conversion(gym.spaces.Box)
    def box(spec, dtype=None, device=None, batch_size=(), **kwargs):
        calls.append(tuple(batch_size))
        return Bounded(-7.0, 7.0, (*batch_size, *spec.shape), device=device)

    assert float(space_to_spec(gym.spaces.Box(-1, 1, (2,))).space.high[0]) == 7.0
    env = GymEnv("Pendulum-v1")
    assert float(env.observation_spec["observation"].space.high[0]) == 7.0 and calls


def test_registered_by_name_and_unknown_space(clean_registry):
    with pytest.raises(TypeError, match="cannot convert"):
        space_to_spec(gym.spaces.Text(4))
    register_gym_spec_conversion("Text")(lambda spec, batch_size=(), device=None, **kw: NonTensor(shape=batch_size))
    assert isinstance(space_to_spec(gym.spaces.Dict(t=gym.spaces.Text(4)))["t"], NonTensor)
