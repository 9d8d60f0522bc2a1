"""check_env_specs, terminated_or_truncated, make_composite_from_td, exploration aliases, EnvCreator."""

from __future__ import annotations

import pickle

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, interaction_type, set_interaction_type

from tdrl.data import Categorical, Composite, Unbounded
from tdrl.envs import (
    EnvCreator,
    ExplorationType,
    PendulumEnv,
    check_env_specs,
    exploration_type,
    make_composite_from_td,
    set_exploration_type,
    terminated_or_truncated,
)

from .mocks import CountingEnv


def test_exploration_aliases_are_tensordicts():
    assert ExplorationType is InteractionType
    assert set_exploration_type is set_interaction_type
    assert exploration_type is interaction_type
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        assert exploration_type() == ExplorationType.DETERMINISTIC


def test_check_env_specs_passes_on_mocks():
    check_env_specs(CountingEnv(batch_size=[2]))
    check_env_specs(PendulumEnv(seed=0), seed=0)
    check_env_specs(CountingEnv(max_steps=2), break_when_any_done="both")


def test_check_env_specs_reports_undeclared_key_and_dtype():
    class Broken(CountingEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            out["surprise"] = torch.zeros(*self.batch_size, 2)
            out["obs"] = out["obs"].to(torch.float64)
            return out

    with pytest.raises(AssertionError) as err:
        check_env_specs(Broken())
    msg = str(err.value)
    assert "not declared in its specs: ('next', 'surprise')" in msg
    assert "('next', 'obs'): dtype torch.float64 but the spec says torch.float32" in msg


def test_check_env_specs_reports_shape_and_missing():
    class Broken(CountingEnv):
        def __init__(self):
            super().__init__()
            self.observation_spec = Composite(obs=Unbounded((3,)), extra=Unbounded((1,)))

    with pytest.raises(AssertionError) as err:
        check_env_specs(Broken())
    msg = str(err.value)
    assert "missing from the data" in msg and "'extra'" in msg
    assert "'obs': shape (3, 1) but the spec gives (3, 3)" in msg


def test_terminated_or_truncated_nested_with_spec():
    done = Categorical(2, (1,), dtype=torch.bool)
    spec = Composite(
        done=done, truncated=done.clone(), nested=Composite(done=done.clone(), truncated=done.clone())
    )
    data = TensorDict(
        {
            "done": torch.tensor([False]),
            "truncated": torch.tensor([False]),
            "nested": {"done": torch.tensor([False]), "truncated": torch.tensor([True])},
        },
        [],
    )
    # the root has its own leaves, so the nested True is not reported (TorchRL's rule) and, with nothing
    # reported, the entries are removed again unless write_full_false is set
    assert not terminated_or_truncated(data.clone(), spec)
    assert not terminated_or_truncated(data, spec, write_full_false=True)
    assert data["nested", "_reset"].item()
    assert not data["_reset"].item()
    data2 = TensorDict({"done": torch.tensor([True])}, [])
    assert terminated_or_truncated(data2, key=None)
    assert "_reset" not in data2.keys()
    data3 = TensorDict({"done": torch.tensor([False])}, [])
    assert not terminated_or_truncated(data3, write_full_false=True)
    assert "_reset" in data3.keys()


def test_make_composite_from_td():
    td = TensorDict(
        {"a": torch.zeros(4, 3), "b": torch.zeros(4, dtype=torch.int64), "c": {"d": torch.ones(4, 2)}}, [4]
    )
    spec = make_composite_from_td(td)
    assert spec.shape == (4,)
    assert spec["a"].shape == (4, 3) and spec["b"].dtype == torch.int64
    assert spec["c", "d"].shape == (4, 2)
    spec = make_composite_from_td(TensorDict({"x": torch.zeros(())}, []), unsqueeze_null_shapes=False)
    assert spec["x"].shape == ()
    spec = make_composite_from_td(td, dynamic_shape=True)
    assert spec["a"].shape == (4, -1)


def test_env_creator_pickles_and_merges_kwargs():
    creator = EnvCreator(
        lambda max_steps, batch_size=(): CountingEnv(batch_size, max_steps), {"max_steps": 3}
    )
    clone = pickle.loads(pickle.dumps(creator))
    env = clone(batch_size=[2])
    assert env.batch_size == (2,)
    assert creator.meta_data.specs["output_spec", "full_observation_spec", "obs"].shape == (1,)
    assert creator.make_variant(max_steps=1)().max_steps.item() == 1
    with pytest.raises(TypeError, match="not an EnvBase"):
        EnvCreator(lambda: 3)()
