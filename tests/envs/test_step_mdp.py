"""step_mdp against a plain reference implementation, over every flag combination."""

from __future__ import annotations

import itertools

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from tdrl.envs import step_mdp


def _flat(keys):
    return [k if isinstance(k, tuple) else (k,) for k in (keys if isinstance(keys, list) else [keys])]


def reference_step_mdp(
    td, *, keep_other, exclude_reward, exclude_done, exclude_action, reward_keys, done_keys, action_keys
):
    """Written from the documented semantics: root (minus next) first, next overwrites, exclusions drop keys."""
    excluded = set()
    if exclude_reward:
        excluded |= set(_flat(reward_keys))
    if exclude_done:
        excluded |= set(_flat(done_keys))
    if exclude_action:
        excluded |= set(_flat(action_keys))
    out = {}
    if keep_other:
        for key in td.exclude("next").keys(include_nested=True, leaves_only=True):
            key = key if isinstance(key, tuple) else (key,)
            if not any(key[: len(e)] == e for e in excluded):
                out[key] = td[key]
    elif not exclude_action:
        for key in _flat(action_keys):
            if key in td.keys(include_nested=True):
                out[key] = td[key]
    for key in td["next"].keys(include_nested=True, leaves_only=True):
        key = key if isinstance(key, tuple) else (key,)
        if not any(key[: len(e)] == e for e in excluded):
            out[key] = td["next"][key]
    return out


def _make_td(nested: bool, multi: bool):
    def k(name):
        return ("agent", name) if nested else name

    td = TensorDict(batch_size=[3])
    names = ["action", "done", "obs", "other"] + (["done2", "action2"] if multi else [])
    for i, name in enumerate(names):
        td.set(k(name), torch.full((3, 1), float(i)))
    for i, name in enumerate(["action", "reward", "done", "obs"] + (["reward2", "done2"] if multi else [])):
        td.set(("next", *_flat(k(name))[0]), torch.full((3, 1), 10.0 + i))
    td.set(("next", "flat_obs"), torch.ones(3, 2))
    td.set("flat_other", torch.zeros(3))
    keys = {
        "action_keys": [k("action"), k("action2")] if multi else k("action"),
        "reward_keys": [k("reward"), k("reward2")] if multi else k("reward"),
        "done_keys": [k("done"), k("done2")] if multi else k("done"),
    }
    return td, keys


FLAGS = list(itertools.product([True, False], repeat=4))


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "-".join(map(str, f)))
def test_matches_reference(flags, nested, multi):
    keep_other, exclude_reward, exclude_done, exclude_action = flags
    td, keys = _make_td(nested, multi)
    opts = dict(
        keep_other=keep_other,
        exclude_reward=exclude_reward,
        exclude_done=exclude_done,
        exclude_action=exclude_action,
        **keys,
    )
    expected = reference_step_mdp(td, **opts)
    for _ in range(2):  # second call goes through the cached plan
        out = step_mdp(td, **opts)
        got = {
            (k if isinstance(k, tuple) else (k,)): v
            for k, v in out.items(include_nested=True, leaves_only=True)
        }
        assert set(got) == set(expected), (flags, sorted(got), sorted(expected))
        for key, value in expected.items():
            assert got[key] is value  # shared, not copied
        assert out.batch_size == td.batch_size


def test_layout_change_invalidates_plan():
    td = TensorDict({"a": torch.zeros(()), "next": {"a": torch.ones(())}}, [])
    assert set(step_mdp(td).keys()) == {"a"}
    td.set(("next", "b"), torch.ones(()))
    assert set(step_mdp(td).keys()) == {"a", "b"}
    td.set(("next", "c"), TensorDict({"d": torch.ones(())}, []))
    assert step_mdp(td)["c", "d"] == 1


def test_output_is_independent_of_input():
    td = TensorDict({"a": torch.zeros(()), "next": {"sub": {"x": torch.ones(())}}}, [])
    out = step_mdp(td)
    out["sub"].set("y", torch.zeros(()))
    assert "y" not in td["next", "sub"].keys()


def test_empty_sub_tensordict_dropped():
    td = TensorDict({"next": {"agent": {"reward": torch.ones(())}, "obs": torch.ones(())}}, [])
    out = step_mdp(td, reward_keys=("agent", "reward"))
    assert set(out.keys()) == {"obs"}


def test_next_tensordict_is_updated():
    td = TensorDict({"obs": torch.zeros(2), "next": {"obs": torch.ones(2)}}, [2])
    dest = TensorDict({"obs": torch.zeros(2)}, [2])
    out = step_mdp(td, next_tensordict=dest)
    assert out is dest
    assert (dest["obs"] == 1).all()


def test_lazy_stack_input():
    tds = [
        TensorDict({"obs": torch.zeros(1), "action": torch.ones(1), "next": {"obs": torch.ones(1)}}, [])
        for _ in range(2)
    ]
    out = step_mdp(LazyStackedTensorDict.lazy_stack(tds, 0))
    assert out.batch_size == torch.Size([2])
    assert set(out.keys()) == {"obs"}
    assert (out["obs"] == 1).all()


def test_missing_next_is_an_error():
    with pytest.raises(KeyError, match="'next'"):
        step_mdp(TensorDict({"obs": torch.zeros(())}, []))


def test_names_and_device_follow_next():
    td = TensorDict({"obs": torch.zeros(2, 3), "next": {"obs": torch.ones(2, 3)}}, [2, 3], names=["env", "t"])
    out = step_mdp(td)
    assert out.names == ["env", "t"]
    assert out.device == td["next"].device
