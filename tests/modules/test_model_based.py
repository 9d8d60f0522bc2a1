"""Dreamer blocks (RSSM, encoder, decoder, actor) and world-model wrappers: shapes, errors, propagation.
(Numbers against TorchRL: tests/objectives/test_dreamer_golden.py.)"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod

from tdrl.data import Unbounded
from tdrl.modules import (
    DreamerActor,
    ObsDecoder,
    ObsEncoder,
    RSSMPosterior,
    RSSMPrior,
    RSSMRollout,
    WorldModel,
    WorldModelWrapper,
)


def test_encoder_decoder_shapes_and_errors() -> None:
    assert ObsEncoder()(torch.zeros(2, 3, 64, 64)).shape == (2, 1024)
    assert ObsDecoder(latent_dim=10)(torch.zeros(2, 5, 4), torch.zeros(2, 5, 6)).shape == (2, 5, 3, 64, 64)
    assert ObsDecoder(num_layers=3, out_channels=1)(torch.zeros(2, 4), torch.zeros(2, 6)).shape[1] == 1
    with pytest.raises(RuntimeError, match="num_layers"):
        ObsEncoder(num_layers=0)
    with pytest.raises(RuntimeError, match="num_layers"):
        ObsDecoder(num_layers=0)
    with pytest.raises(ValueError, match="kernel sizes"):
        ObsDecoder(num_layers=3, kernel_sizes=[5, 5])
    with pytest.raises(ValueError, match=r"\[\*batch, C, H, W\]"):
        ObsEncoder()(torch.zeros(3, 4))
    with pytest.warns(UserWarning, match="depth"):
        enc = ObsEncoder(depth=4, num_layers=1, in_channels=3)
    assert enc.encoder[0].out_channels == 4


def test_prior_noise_is_deterministic_and_any_batch() -> None:
    prior = RSSMPrior(Unbounded(2), hidden_dim=8, rnn_hidden_dim=5, state_dim=3, action_dim=2)
    s, b, a = torch.randn(2, 4, 3), torch.randn(2, 4, 5), torch.randn(2, 4, 2)
    noise = torch.randn(2, 4, 3)
    mean, std, state, belief = prior(s, b, a, noise=noise)
    torch.testing.assert_close(state, mean + noise * std)
    assert belief.shape == (2, 4, 5) and (std > 0.1).all()
    # Flattened batch gives the same numbers.
    flat = prior(s.reshape(8, 3), b.reshape(8, 5), a.reshape(8, 2), noise=noise.reshape(8, 3))
    torch.testing.assert_close(flat[3].reshape(2, 4, 5), belief)
    post = RSSMPosterior(hidden_dim=8, state_dim=3, rnn_hidden_dim=5, obs_embed_dim=6, scale_lb=0.5)
    pm, ps, pstate = post(belief, torch.randn(2, 4, 6), noise=torch.zeros(2, 4, 3))
    torch.testing.assert_close(pstate, pm)
    assert (ps > 0.5).all()


def test_rollout_propagates_posterior_state() -> None:
    prior = Mod(RSSMPrior(Unbounded(1), hidden_dim=8, rnn_hidden_dim=8, state_dim=4, action_dim=1),
                ["state", "belief", "action"], [("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")])
    post = Mod(RSSMPosterior(hidden_dim=8, state_dim=4, rnn_hidden_dim=8, obs_embed_dim=5),
               [("next", "belief"), ("next", "encoded_latents")],
               [("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")])
    data = TensorDict({"state": torch.zeros(2, 6, 4), "belief": torch.zeros(2, 6, 8), "action": torch.randn(2, 6, 1),
                       ("next", "encoded_latents"): torch.randn(2, 6, 5)}, [2, 6])
    out = RSSMRollout(prior, post)(data)
    assert out.batch_size == (2, 6)
    torch.testing.assert_close(out["state"][:, 1:], out["next", "state"][:, :-1])
    torch.testing.assert_close(out["belief"][:, 1:], out["next", "belief"][:, :-1])
    assert (out["state"][:, 0] == 0).all()
    with pytest.raises(ValueError, match="time dim"):
        RSSMRollout(prior, post)(data[0, 0])


def test_actor_scale_floor() -> None:
    actor = DreamerActor(3, depth=2, num_cells=16, std_min_val=0.2)
    loc, scale = actor(torch.randn(4, 5) * 100, torch.randn(4, 2))
    assert loc.shape == scale.shape == (4, 3) and (scale >= 0.2).all()


def test_world_model_parts() -> None:
    wm = WorldModel(
        Mod(lambda o: o * 2, ["observation"], ["latent"]),
        Mod(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
        Mod(lambda z: z.sum(-1, keepdim=True), [("next", "latent")], [("next", "reward")]),
        done_head=Mod(lambda z: z.sum(-1, keepdim=True) > 10, [("next", "latent")], [("next", "done")]),
    )
    td = TensorDict({"observation": torch.ones(2), "latent": torch.zeros(2), "action": torch.ones(2)}, [])
    assert wm.step(td.clone())["next", "latent"].tolist() == [1, 1]  # no encoder
    assert wm(td.clone())["next", "latent"].tolist() == [3, 3]
    assert "observation" in wm.in_keys and ("next", "done") in wm.out_keys
    with pytest.raises(RuntimeError, match="decoder"):
        wm.decode(td)
    wrapper = WorldModelWrapper(Mod(lambda x: x, ["a"], ["b"]), Mod(lambda x: x, ["b"], ["reward"]))
    assert wrapper.get_transition_model_operator().out_keys == ["b"]
