"""ModelBasedEnvBase, DreamerEnv, DreamerDecoder, ImaginedEnv and WorldModelEnv."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictModuleBase

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs import GymEnv, PendulumEnv
from tdrl.envs.model_based import DreamerDecoder, DreamerEnv, ImaginedEnv, ModelBasedEnvBase, WorldModelEnv
from tdrl.modules import WorldModel, WorldModelWrapper


class _Line(ModelBasedEnvBase):
    """x' = x + a, reward -|x' - 1|."""

    def __init__(self, world_model=None, **kwargs):
        super().__init__(world_model or WorldModelWrapper(
            Mod(lambda x, a: x + a, ["x", "action"], ["x"]),
            Mod(lambda x: -(x - 1).abs(), ["x"], ["reward"]),
        ), **kwargs)
        self.observation_spec = Composite(x=Unbounded((1,)))
        self.state_spec = Composite(x=Unbounded((1,)))
        self.action_spec = Bounded(-1.0, 1.0, (1,))
        self.reward_spec = Unbounded((1,))

    def _reset(self, tensordict=None, **kwargs):
        if tensordict is not None and "x" in tensordict.keys():
            return tensordict.select("x").clone()
        return TensorDict({"x": torch.zeros(1)}, [])


def test_rollout_follows_world_model_any_batch() -> None:
    env = _Line()
    start = TensorDict({"x": torch.tensor([[0.0], [2.0]])}, [2])
    data = env.rollout(3, lambda td: td.set("action", torch.full((2, 1), 0.5)), auto_reset=False,
                       tensordict=start)
    assert data.batch_size == (2, 3)
    torch.testing.assert_close(data["next", "x"][..., 0], torch.tensor([[0.5, 1.0, 1.5], [2.5, 3.0, 3.5]]))
    torch.testing.assert_close(data["next", "reward"][0, :, 0], torch.tensor([-0.5, 0.0, -0.5]))
    assert not data["next", "done"].any()


def test_step_keeps_only_spec_entries() -> None:
    model = WorldModelWrapper(
        Mod(lambda x, a: (x + a, x * 0), ["x", "action"], ["x", "scratch"]),
        Mod(lambda x: x, ["x"], ["reward"]),
    )
    out = _Line(model).step(TensorDict({"x": torch.zeros(1), "action": torch.ones(1)}, []))
    assert "scratch" not in out["next"].keys()
    assert set(out["next"].keys()) >= {"x", "reward", "done", "terminated"}


def test_world_model_params_are_passed() -> None:
    class Functional(TensorDictModuleBase):
        in_keys = ["x", "action"]
        out_keys = ["x", "reward"]

        def forward(self, td, params=None, buffers=None):
            scale = params["scale"]
            td.set("x", td["x"] + scale * td["action"])
            return td.set("reward", td["x"])

    env = _Line(Functional(), params={"scale": torch.tensor(3.0)}, buffers={})
    out = env.step(TensorDict({"x": torch.zeros(1), "action": torch.ones(1)}, []))
    assert out["next", "x"].item() == 3.0


def test_set_specs_from_env_and_seed_warning() -> None:
    env = _Line()
    env.set_specs_from_env(PendulumEnv())
    assert set(env.observation_spec.keys()) == set(PendulumEnv().observation_spec.keys())
    assert env.batch_locked is False
    with pytest.warns(UserWarning, match="Set seed"):
        env.set_seed(0)


def _dreamer_env(decoder=None) -> DreamerEnv:
    step = WorldModelWrapper(
        Mod(lambda s, b, a: (s + a, b + 1), ["state", "belief", "action"], ["state", "belief"]),
        Mod(lambda s: s.sum(-1, keepdim=True), ["state"], ["reward"]),
    )
    env = DreamerEnv(step, prior_shape=(2,), belief_shape=(3,), obs_decoder=decoder)
    obs = Composite(state=Unbounded((2,)), belief=Unbounded((3,)))
    env.observation_spec = obs
    env.state_spec = obs.clone()
    env.action_spec = Bounded(-1.0, 1.0, (2,))
    env.reward_spec = Unbounded((1,))
    return env


def test_dreamer_env_never_done_and_resets() -> None:
    env = _dreamer_env()
    td = env.reset()
    assert set(td.keys()) >= {"state", "belief", "action"}
    assert env.any_done(TensorDict({"done": torch.ones(1, dtype=torch.bool)}, [])) is False
    given = TensorDict({"state": torch.ones(4, 2), "belief": torch.zeros(4, 3)}, [4])
    assert env.maybe_reset(given) is given
    out = env.reset(given)
    assert (out["state"] == 1).all()
    data = env.rollout(4, lambda t: t.set("action", torch.ones(4, 2)), auto_reset=False, tensordict=given)
    torch.testing.assert_close(data["next", "belief"][0, :, 0], torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_dreamer_env_specs_from_env() -> None:
    env = _dreamer_env()
    with pytest.raises(KeyError, match="'state'"):
        env.set_specs_from_env(PendulumEnv())
    ref = _dreamer_env()
    env.set_specs_from_env(ref)
    assert set(env.state_spec.keys()) == {"state", "belief"}


def test_dreamer_decode_obs_and_decoder_transform() -> None:
    with pytest.raises(ValueError, match="decoder"):
        _dreamer_env().decode_obs(TensorDict({}, []))
    decoder = Mod(lambda s, b: torch.cat([s, b], -1), ["state", "belief"], ["reco_pixels"])
    env = _dreamer_env(decoder)
    td = TensorDict({"state": torch.zeros(2), "belief": torch.zeros(3), "action": torch.ones(2)}, [])
    assert env.decode_obs(td.clone())["reco_pixels"].tolist() == [0.0] * 5
    # compute_latents runs the imagination step first.
    assert env.decode_obs(td.clone(), compute_latents=True)["reco_pixels"].tolist() == [1, 1, 1, 1, 1]
    tenv = env.append_transform(DreamerDecoder())
    data = tenv.rollout(2)
    assert data["reco_pixels"].shape == (2, 5) and data["next", "reco_pixels"].shape == (2, 5)
    torch.testing.assert_close(data["next", "reco_pixels"], torch.cat([data["next", "state"],
                                                                        data["next", "belief"]], -1))


def test_imagined_env_beliefs() -> None:
    base = GymEnv("Pendulum-v1")

    def model(obs, action):
        return obs["mean"] + action, obs["var"] + 0.5

    wm = Mod(model, ["observation", "action"], [("next", "observation", "mean"), ("next", "observation", "var")])
    env = ImaginedEnv(wm, base)
    assert env.batch_size == (1,) and env.action_spec.shape == (1, 1)
    td = env.reset(TensorDict({"observation": torch.ones(1, 3)}, [1]))
    torch.testing.assert_close(td["observation", "var"], torch.zeros(1, 3, 3))
    data = env.rollout(4, lambda t: t.set("action", torch.ones(1, 1)), auto_reset=False, tensordict=td)
    torch.testing.assert_close(data["next", "observation", "mean"][0, -1], torch.full((3,), 5.0))
    assert (data["next", "reward"] == 0).all() and not data["next", "done"].any()
    with pytest.raises(KeyError, match="'observation'"):
        ImaginedEnv(wm, PendulumEnv())


def test_world_model_env() -> None:
    wm = WorldModel(
        Mod(torch.nn.Linear(3, 4), ["observation"], ["latent"]),
        Mod(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
        Mod(lambda z: z.sum(-1, keepdim=True), [("next", "latent")], [("next", "reward")]),
    )
    env = WorldModelEnv(wm, GymEnv("Pendulum-v1"), batch_size=[2],
                        observation_spec=Composite(latent=Unbounded((2, 4)), shape=(2,)))
    assert env.action_spec.shape == (2, 1)
    with pytest.raises(RuntimeError, match="'latent'"):
        env.reset()
    start = wm.encode(TensorDict({"observation": torch.zeros(2, 3)}, [2]))
    data = env.rollout(3, lambda t: t.set("action", torch.ones(2, 1)), tensordict=start)
    z0 = start["latent"]
    torch.testing.assert_close(data["next", "latent"][:, -1], z0 + 3)
    torch.testing.assert_close(data["next", "reward"][:, 0], (z0 + 1).sum(-1, keepdim=True))
    # No done head: done entries are the spec's zeros.
    assert not data["next", "done"].any()
