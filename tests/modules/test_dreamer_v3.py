"""DreamerV3 modules: shapes, resets, errors, the seeded policy and the compiled rollout (numerics against TorchRL
are in tests/objectives/test_dreamer_v3_golden.py)."""

from __future__ import annotations

import copy

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod

from tdrl.envs import ExplorationType, set_exploration_type
from tdrl.modules import (
    DreamerV3BlockGRU,
    DreamerV3BlockGRUCell,
    DreamerV3DiscreteActor,
    DreamerV3ImageDecoder,
    DreamerV3ImageEncoder,
    DreamerV3MLP,
    DreamerV3SeededPolicy,
    RSSMPosteriorV3,
    RSSMPriorV3,
    RSSMRolloutV3,
    RSSMStateEstimatorV3,
    SymExpTwoHot,
)
from tdrl.objectives import two_hot_decode, two_hot_encode


def _rssm(recurrent_model: str = "block_gru"):
    prior = RSSMPriorV3(action_shape=(2,), hidden_dim=8, rnn_hidden_dim=8, num_categoricals=2, num_classes=4,
                        action_dim=2, recurrent_model=recurrent_model, num_blocks=2)
    posterior = RSSMPosteriorV3(hidden_dim=8, num_categoricals=2, num_classes=4, rnn_hidden_dim=8, obs_embed_dim=6)
    return prior, posterior


def _rollout(prior, posterior) -> RSSMRolloutV3:
    return RSSMRolloutV3(
        Mod(prior, ["state", "belief", "action"], [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
        Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_logits"), ("next", "state")]),
    )


def _sequence() -> TensorDict:
    is_init = torch.zeros(2, 5, 1, dtype=torch.bool)
    is_init[1, 3] = True
    return TensorDict({"state": torch.zeros(2, 5, 8), "belief": torch.zeros(2, 5, 8), "action": torch.randn(2, 5, 2),
                       "is_init": is_init, ("next", "encoded_latents"): torch.randn(2, 5, 6)}, [2, 5])


def test_block_gru_matches_its_cell_and_resets() -> None:
    gru = DreamerV3BlockGRU(6, 8, projection_size=4, num_blocks=2)
    x, h0 = torch.randn(3, 4, 6), torch.randn(3, 8)
    is_init = torch.zeros(3, 4, dtype=torch.bool)
    is_init[:, 2] = True
    out, last = gru(x, h0, is_init)
    h = h0
    for t in range(4):
        h = gru.cell(x[:, t], torch.zeros_like(h) if t == 2 else h)
        torch.testing.assert_close(out[:, t], h)
    torch.testing.assert_close(last, h)
    # A reset step forgets everything before it.
    torch.testing.assert_close(gru(x[:, 2:], torch.randn(3, 8), is_init[:, 2:])[0], out[:, 2:])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DreamerV3BlockGRUCell(6, 7, num_blocks=2), "divisible by num_blocks"),
        (lambda: DreamerV3BlockGRUCell(6, 8, num_blocks=2, num_layers=0), "num_layers"),
        (lambda: DreamerV3BlockGRUCell(6, 8, num_blocks=2, activation_class=torch.nn.PReLU), "learnable"),
        (lambda: DreamerV3BlockGRU(6, 8, num_blocks=2, recurrent_backend="cuda"), "recurrent_backend"),
        (lambda: DreamerV3ImageEncoder(kernel_size=4), "odd"),
        (lambda: DreamerV3ImageDecoder(8, image_shape=(3, 12, 12), mults=(1, 2, 3)), "divisible"),
        (lambda: RSSMPriorV3(recurrent_model="block_gru"), "action_dim"),
        (lambda: RSSMPriorV3(unimix=1.0), "unimix"),
        (lambda: RSSMPosteriorV3(use_rms_norm=True), "obs_embed_dim"),
        (lambda: SymExpTwoHot(1), "num_bins"),
        (lambda: DreamerV3DiscreteActor(4, 2, depth=0), "depth"),
    ],
)
def test_bad_arguments_raise(make, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_bad_inputs_name_shapes() -> None:
    cell = DreamerV3BlockGRUCell(6, 8, projection_size=4, num_blocks=2)
    with pytest.raises(ValueError, match="input.size"):
        cell(torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"hidden must have shape \(3, 8\)"):
        cell(torch.randn(3, 6), torch.zeros(2, 8))
    gru = DreamerV3BlockGRU(6, 8, projection_size=4, num_blocks=2)
    with pytest.raises(ValueError, match="is_init"):
        gru(torch.randn(3, 4, 6), is_init=torch.zeros(3, 4))
    with pytest.raises(ValueError, match="support"):
        two_hot_decode(torch.zeros(3, 4), torch.arange(5.0))


def test_two_hot_round_trip_and_saturation() -> None:
    two_hot = SymExpTwoHot()
    values = torch.tensor([-1234.5, -1.0, 0.0, 0.3, 77.0])
    encoded = two_hot.encode(values)
    torch.testing.assert_close(encoded.sum(-1), torch.ones(5))
    torch.testing.assert_close((encoded * two_hot.bins).sum(-1), values, rtol=1e-5, atol=1e-4)
    assert two_hot.decode(torch.zeros(3, 255)).eq(0).all()  # antisymmetric support, paired sum
    big = two_hot_encode(torch.tensor([1e12]), two_hot.bins)
    assert big[0, -1] == 1


def test_image_codec_shapes() -> None:
    encoder = DreamerV3ImageEncoder(depth=2, mults=(1, 2), kernel_size=3)
    images = torch.rand(2, 3, 3, 16, 16)
    features = encoder(images)
    assert features.shape == (2, 3, encoder.output_features((3, 16, 16)))
    decoder = DreamerV3ImageDecoder(10, image_shape=(3, 16, 16), depth=2, mults=(1, 2), kernel_size=3, num_blocks=2)
    assert decoder(torch.randn(2, 3, 4), torch.randn(2, 3, 6)).shape == (2, 3, 3, 16, 16)
    assert DreamerV3MLP(4, None, depth=2, num_cells=6)(torch.randn(5, 4)).shape == (5, 6)


@pytest.mark.parametrize("recurrent_model", ["gru", "block_gru"])
def test_rollout_paths_agree_and_reset(recurrent_model: str) -> None:
    prior, posterior = _rssm(recurrent_model)
    fast = _rollout(prior, posterior)
    assert fast._fast_path
    # A wrapped posterior is not the standard wiring: the TensorDict path runs.
    slow = RSSMRolloutV3(
        Mod(prior, ["state", "belief", "action"], [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
        Mod(lambda b, e: posterior(b, e), [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_logits"), ("next", "state")]),
    )
    assert not slow._fast_path
    torch.manual_seed(0)
    a = fast(_sequence())
    torch.manual_seed(0)
    b = slow(_sequence())
    for key in ("prior_logits", "posterior_logits", "state", "belief"):
        torch.testing.assert_close(a["next", key], b["next", key])
    # The reset step saw a zero state, belief and action.
    for key in ("state", "belief", "action"):
        assert a[key][1, 3].eq(0).all()
    states = a["next", "state"].reshape(2, 5, 2, 4)
    torch.testing.assert_close(states.sum(-1), torch.ones(2, 5, 2))


def test_compile_rollout_matches_eager() -> None:
    prior, posterior = _rssm()
    rollout = _rollout(prior, posterior)
    torch.manual_seed(1)
    eager = rollout(_sequence())
    rollout.compile_rollout("step", compile=False)
    torch.manual_seed(1)
    stepped = rollout(_sequence())
    torch.testing.assert_close(stepped["next", "belief"], eager["next", "belief"])
    with pytest.raises(ValueError, match="unroll"):
        rollout.compile_rollout("step", unroll=2)
    clone = copy.deepcopy(rollout)
    assert clone._step_fn is None


def test_state_estimator_resets_and_skips_prior_head() -> None:
    prior, posterior = _rssm()
    estimator = RSSMStateEstimatorV3(prior, posterior)
    data = TensorDict({"state": torch.randn(2, 8), "belief": torch.randn(2, 8), "previous_action": torch.randn(2, 2),
                       "encoded_latents": torch.randn(2, 6), "is_init": torch.tensor([True, True])}, [2])
    zero = data.clone()
    for key in ("state", "belief", "previous_action"):
        zero[key].zero_()
    torch.manual_seed(0)
    a = estimator(data.clone())
    torch.manual_seed(0)
    b = estimator(zero)
    torch.testing.assert_close(a["belief"], b["belief"])
    torch.testing.assert_close(a["state"], b["state"])
    with pytest.raises(KeyError, match="encoded_latents"):
        estimator(data.exclude("encoded_latents"))
    with pytest.raises(ValueError, match="5 in_keys"):
        RSSMStateEstimatorV3(prior, posterior, in_keys=["state"])


def test_discrete_actor_and_seeded_policy() -> None:
    actor = DreamerV3DiscreteActor(12, 3, depth=1, num_cells=8, unimix=0.2)
    data = TensorDict({"state": torch.randn(4, 8), "belief": torch.randn(4, 4)}, [4])
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        out = actor(data.clone())
    probs = out["logits"].exp()
    assert (probs >= 0.2 / 3 - 1e-6).all()
    torch.testing.assert_close(out["action"].argmax(-1), probs.argmax(-1))
    policy = DreamerV3SeededPolicy(actor, seed=3)
    state = torch.random.get_rng_state()
    first = [policy(data.clone())["action"] for _ in range(3)]
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's stream is untouched
    assert policy.state_dict()["_extra_state"] == {"seed": 3, "counter": 3}
    policy.reset_counter()
    again = [policy(data.clone())["action"] for _ in range(3)]
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    with pytest.raises(ValueError, match="seed"):
        DreamerV3SeededPolicy(actor, seed=-1)
