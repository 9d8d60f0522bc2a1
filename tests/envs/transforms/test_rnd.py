"""RNDTransform (random network distillation bonus), RunningMeanStd and the gSDENoise primer."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

from tdrl.envs import GymEnv, SerialEnv, TransformedEnv
from tdrl.envs.transforms import RNDTransform, RunningMeanStd, gSDENoise

from ._contract import TransformContract
from ._envs import VectorEnv


def _rnd() -> RNDTransform:
    torch.manual_seed(0)
    return RNDTransform(nn.Linear(3, 8), nn.Linear(3, 8))


class TestRNDTransform(TransformContract):
    def make_transform(self):
        return _rnd()

    def check(self, rollout, setting):
        bonus = rollout["next", "intrinsic_reward"]
        assert bonus.shape == rollout["next", "reward"].shape
        assert (bonus >= 0).all() and (bonus <= 5).all() and bonus.std() > 0

    def check_plain(self, data, out):
        # Outside an env the bonus is computed from the root observation (e.g. a replay-buffer sample).
        assert out["intrinsic_reward"].shape == (*data.shape, 1)


class TestgSDENoise(TransformContract):
    def make_transform(self):
        # action_dim 5: unlike 2, it cannot be mistaken for the batch size of the batched settings (the
        # primer expands specs whose shape does not start with the batch size; pass shape= otherwise).
        return gSDENoise(state_dim=3, action_dim=5)

    def check(self, rollout, setting):
        eps = rollout["_eps_gSDE"]
        assert eps.shape[-2:] == (5, 3) and eps.std() > 0.5
        # Drawn on reset only: constant within an episode (VectorEnv episodes last 7 steps).
        torch.testing.assert_close(eps[..., 1, :, :], eps[..., 0, :, :])
        assert not torch.equal(eps[..., 7, :, :], eps[..., 0, :, :])

    def check_plain(self, data, out):
        assert out["_eps_gSDE"].shape == (*data.shape, 5, 3)


def test_running_mean_std_matches_the_pooled_statistics() -> None:
    rms = RunningMeanStd(shape=(2,), epsilon=0.0)
    chunks = [torch.randn(n, 2) * 3 + 1 for n in (5, 1, 17)]
    for c in chunks:
        rms.update(c)
    pooled = torch.cat(chunks)
    torch.testing.assert_close(rms.mean, pooled.mean(0))
    torch.testing.assert_close(rms.var, pooled.var(0, unbiased=False))
    assert float(rms.count) == 23


def test_rnd_bonus_falls_for_states_the_predictor_learns() -> None:
    t = RNDTransform(nn.Linear(3, 8), nn.Linear(3, 8), normalize_reward=False)
    seen = TensorDict({"observation": torch.randn(64, 3)}, [64])
    before = t(seen.clone())["intrinsic_reward"].mean()
    opt = torch.optim.Adam(t.predictor_network.parameters(), lr=1e-2)
    obs = t.obs_rms.normalize(seen["observation"]).clamp(-5, 5)
    for _ in range(200):
        opt.zero_grad()
        (t.predictor_network(obs) - t.target_network(obs)).square().mean().backward()
        opt.step()
    t.eval()  # scoring only: the statistics stay where they are
    count = t.obs_rms.count.clone()
    after = t(seen.clone())["intrinsic_reward"].mean()
    assert after < 0.1 * before and torch.equal(count, t.obs_rms.count)


def test_rnd_state_dict_recreates_lazy_statistics() -> None:
    env = TransformedEnv(VectorEnv(), _rnd())
    env.rollout(5)
    state = env.transform.state_dict()
    fresh = _rnd()
    assert fresh.obs_rms is None
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh.obs_rms.mean, env.transform.obs_rms.mean)
    torch.testing.assert_close(fresh.reward_rms.var, env.transform.reward_rms.var)
    assert env.reward_spec["intrinsic_reward"].shape == env.reward_spec["reward"].shape


@pytest.mark.parametrize("num_envs", [2, 3])
def test_gsde_noise_is_batched_when_action_dim_equals_the_batch_size(num_envs):
    # [action_dim, state_dim] = [2, 3] on 2 envs used to be taken as already batched.
    env = TransformedEnv(SerialEnv(num_envs, lambda: GymEnv("Pendulum-v1")), gSDENoise(state_dim=3, action_dim=2))
    assert env.observation_spec["_eps_gSDE"].shape == (num_envs, 2, 3)
    assert env.reset()["_eps_gSDE"].shape == (num_envs, 2, 3)
    env.close()


def test_gsde_noise_with_a_batched_shape_is_not_expanded_twice():
    env = TransformedEnv(SerialEnv(2, lambda: GymEnv("Pendulum-v1")), gSDENoise(state_dim=3, action_dim=1, shape=(2,)))
    assert env.observation_spec["_eps_gSDE"].shape == (2, 1, 3)
    assert env.reset()["_eps_gSDE"].shape == (2, 1, 3)
    env.close()
