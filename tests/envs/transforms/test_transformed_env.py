"""TransformedEnv API (attach-time key checks, append/insert, unwrap, tolerance, parents), ObservationNorm
statistics and the functional ``cat_frames`` against a reference loop."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import (
    CatFrames,
    Compose,
    DoubleToFloat,
    ObservationNorm,
    RewardSum,
    StepCounter,
    VecNorm,
    cat_frames,
)

from ._envs import VectorEnv


def test_missing_in_keys_rejected_at_construction():
    with pytest.raises(KeyError, match=r"\['nope'\] not found in the env; available keys: .*observation"):
        TransformedEnv(VectorEnv(), ObservationNorm(0.0, 1.0, in_keys=["nope"]))


def test_missing_in_keys_rejected_at_append_and_env_unchanged():
    env = TransformedEnv(VectorEnv(), StepCounter())
    with pytest.raises(KeyError, match="nope"):
        env.append_transform(ObservationNorm(0.0, 1.0, in_keys=["nope"]))
    assert isinstance(env.transform, StepCounter) and env.transform.container is env
    env.rollout(2)


def test_keys_created_by_earlier_transforms_are_available():
    env = TransformedEnv(VectorEnv(), Compose(StepCounter(), ObservationNorm(0.0, 1.0, in_keys=["step_count"])))
    assert env.rollout(3)["next", "step_count"].dtype == torch.float32


def test_set_missing_tolerance():
    env = TransformedEnv(VectorEnv(), StepCounter())
    env.append_transform(ObservationNorm(1.0, 2.0, in_keys=["observation"]))
    env.set_missing_tolerance(True)
    assert env.transform[1].missing_tolerance
    td = TensorDict({}, [])
    assert env.transform[1](td) is td


def test_append_insert_and_attributes():
    base = VectorEnv()
    env = TransformedEnv(base, StepCounter(5))
    assert env.base_env is base
    assert isinstance(env.transform, StepCounter)
    env.append_transform(RewardSum())
    assert isinstance(env.transform, Compose) and len(env.transform) == 2
    env.insert_transform(0, DoubleToFloat())
    assert isinstance(env.transform[0], DoubleToFloat)
    assert env.full_action_spec["action"].dtype == torch.float32
    assert "episode_reward" in env.observation_spec.keys()
    env.append_transform(lambda td: td.set("extra", torch.ones(1)))
    assert (env.rollout(3)["next", "extra"] == 1).all()


def test_transform_reuse_is_refused():
    t = StepCounter()
    TransformedEnv(VectorEnv(), t)
    with pytest.raises(AttributeError, match="clone"):
        TransformedEnv(VectorEnv(), t)
    TransformedEnv(VectorEnv(), t.clone())


def test_nested_transformed_env_unwraps():
    inner = TransformedEnv(VectorEnv(), StepCounter(3))
    outer = TransformedEnv(inner, RewardSum())
    assert isinstance(outer.base_env, VectorEnv)
    assert len(outer.transform) == 2
    td = outer.rollout(5, break_when_any_done=False)
    assert td["next", "step_count"].max() == 3 and "episode_reward" in td.keys()


def test_parent_sees_preceding_transforms():
    env = TransformedEnv(VectorEnv(), Compose(StepCounter(), RewardSum()))
    parent = env.transform[1].parent
    assert "step_count" in parent.observation_spec.keys()
    assert "episode_reward" not in parent.observation_spec.keys()
    parent.close()
    env.rollout(2)  # closing the parent view leaves the base env usable


def test_observation_norm_init_stats():
    # Episodes of one step: every observation is a fresh N(0, 1) draw plus a small action term.
    env = TransformedEnv(VectorEnv(episode_len=1), ObservationNorm(in_keys=["observation"], standard_normal=True))
    env.set_seed(0)
    t = env.transform
    with pytest.raises(RuntimeError, match="init_stats"):
        t(TensorDict({"observation": torch.zeros(3)}, []))
    t.init_stats(num_iter=200, reduce_dim=0, cat_dim=0)
    assert t.loc.shape == (3,) and t.scale.shape == (3,)
    assert t.loc.abs().max() < 0.3 and (t.scale - 1).abs().max() < 0.3
    td = env.rollout(20, break_when_any_done=False)
    torch.testing.assert_close(td["next", "observation"], (td["next", "observation_copy"] - t.loc) / t.scale)


def test_vecnorm_converges_and_freezes():
    t = VecNorm(in_keys=["x"], decay=1.0)
    data = torch.randn(500, 2) * 3 + 5
    for row in data:
        out = t(TensorDict({"x": row}, []))
    mean, std = t.loc["x"], t.scale["x"]
    torch.testing.assert_close(mean, data.mean(0), atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(std, data.std(0, unbiased=False), atol=1e-2, rtol=1e-2)
    t.freeze()
    t(TensorDict({"x": torch.full((2,), 1e6)}, []))
    torch.testing.assert_close(t.loc["x"], mean)
    assert torch.isfinite(out["x"]).all()


def _reference_cat_frames(x, N, padding, padding_value, done_start):
    """Loop over (batch, time): the window of the N last frames of the same trajectory."""
    B, T, C = x.shape
    out = torch.empty(B, T, N * C)
    for b in range(B):
        start = 0
        for t in range(T):
            if done_start[b, t]:
                start = t
            frames = []
            for k in range(N):
                s = t - N + 1 + k
                if s < start:
                    frames.append(x[b, start] if padding == "same" else torch.full((C,), padding_value))
                else:
                    frames.append(x[b, s])
            out[b, t] = torch.cat(frames)
    return out


@pytest.mark.parametrize("padding", ["same", "constant"])
@pytest.mark.parametrize("N", [1, 3, 5])
@pytest.mark.parametrize("with_done", [False, True])
def test_cat_frames_functional_golden(padding, N, with_done):
    x = torch.randn(2, 9, 2)
    starts = torch.zeros(2, 9, dtype=torch.bool)
    mask = None
    if with_done:
        starts[0, 4] = starts[1, 2] = starts[1, 3] = True
        idx = torch.arange(9)
        last = torch.where(starts, idx, torch.zeros_like(idx)).cummax(-1).values
        source = idx.unsqueeze(-1) - (N - 1) + torch.arange(N)
        mask = source < last.unsqueeze(-1)
    out = cat_frames(x, N, -1, padding=padding, padding_value=-3.0, time_dim=-2, done_mask=mask)
    expected = _reference_cat_frames(x, N, padding, -3.0, starts)
    torch.testing.assert_close(out, expected)


def test_cat_frames_functional_errors():
    with pytest.raises(ValueError, match="negative"):
        cat_frames(torch.zeros(3, 2), 2, 1)
    with pytest.raises(ValueError, match="padding"):
        cat_frames(torch.zeros(3, 2), 2, -1, padding="reflect", time_dim=-2)
    with pytest.raises(ValueError, match="done_mask has shape"):
        cat_frames(torch.zeros(3, 2), 2, -1, time_dim=-2, done_mask=torch.zeros(3, 5, dtype=torch.bool))


def test_catframes_partial_reset_in_batched_env():
    env = TransformedEnv(VectorEnv(batch_size=(2,)), CatFrames(2, -1, in_keys=["observation"]))
    td = env.reset()
    td = env.step_mdp(env.rand_step(td))
    stacked = td["observation"].clone()
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    torch.testing.assert_close(out["observation"][1], stacked[1])
    torch.testing.assert_close(out["observation"][0, :3], out["observation"][0, 3:])


def test_policy_next_entries_survive_primer_transforms_in_rollout():
    """A recurrent policy's ("next", state) must reach the next step, not be replaced by the primer."""
    from tdrl.envs import GymEnv, InitTracker, TransformedEnv
    from tdrl.modules import LSTMModule

    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="features")
    env = TransformedEnv(GymEnv("Pendulum-v1"), InitTracker())
    env.append_transform(lstm.make_tensordict_primer())

    def policy(td):
        td = lstm(td)
        td.set("action", td["features"][..., :1].tanh())
        return td

    data = env.rollout(4, policy)
    h_next = data["next", "recurrent_state_h"]
    assert not torch.equal(h_next[1], h_next[0])  # the state advances
    assert torch.equal(data["recurrent_state_h"][1:], h_next[:-1])  # and is carried step to step
