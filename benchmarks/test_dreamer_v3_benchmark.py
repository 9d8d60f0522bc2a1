"""DreamerV3 hot paths: the RSSM rollout over a replay sequence and the world-model loss forward/backward
(``--backend torchrl`` runs the same workload on TorchRL 0.14.1)."""

from __future__ import annotations

import pytest
import torch
from _backend import has, sub
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

B, T, ACT, OBS, CATS, CLASSES, BELIEF, HIDDEN, EMBED, BINS = 16, 32, 4, 16, 8, 8, 64, 64, 32, 255
STATE = CATS * CLASSES


def _world_model():
    modules = sub("modules")
    prior = modules.RSSMPriorV3(action_shape=(ACT,), hidden_dim=HIDDEN, rnn_hidden_dim=BELIEF, num_categoricals=CATS,
                                num_classes=CLASSES, action_dim=ACT, recurrent_model="block_gru", num_blocks=8)
    posterior = modules.RSSMPosteriorV3(hidden_dim=HIDDEN, num_categoricals=CATS, num_classes=CLASSES,
                                        rnn_hidden_dim=BELIEF, obs_embed_dim=EMBED, use_rms_norm=True)
    rollout = modules.RSSMRolloutV3(
        Mod(prior, ["state", "belief", "action"], [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
        Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_logits"), ("next", "state")]),
    )
    nxt = [("next", "state"), ("next", "belief")]
    world_model = Seq(
        Mod(modules.DreamerV3MLP(OBS, EMBED, depth=2, num_cells=64), [("next", "observation")],
            [("next", "encoded_latents")]),
        rollout,
        Mod(modules.DreamerV3MLP(STATE + BELIEF, OBS, depth=2, num_cells=64), nxt, [("next", "reco_pixels")]),
        Mod(modules.DreamerV3MLP(STATE + BELIEF, BINS, depth=2, num_cells=64), nxt, [("next", "reward_logits")]),
    )
    return rollout, world_model


def _batch() -> TensorDict:
    g = torch.Generator().manual_seed(0)
    is_init = torch.zeros(B, T, 1, dtype=torch.bool)
    is_init[:, 0] = True
    return TensorDict({
        "state": torch.zeros(B, T, STATE), "belief": torch.zeros(B, T, BELIEF),
        "action": torch.randn(B, T, ACT, generator=g), "is_init": is_init,
        ("next", "observation"): torch.randn(B, T, OBS, generator=g),
        ("next", "encoded_latents"): torch.randn(B, T, EMBED, generator=g),
        ("next", "reward"): torch.randn(B, T, 1, generator=g),
    }, [B, T])


def _skip() -> None:
    if not has("objectives", "DreamerV3ModelLoss"):
        pytest.skip("DreamerV3 is not available in this backend")


def test_rssm_rollout_v3_speed(benchmark) -> None:
    _skip()
    rollout, _ = _world_model()
    td = _batch()
    with torch.no_grad():
        benchmark(rollout, td)


def test_dreamer_v3_model_loss_speed(benchmark) -> None:
    _skip()
    _, world_model = _world_model()
    loss = sub("objectives").DreamerV3ModelLoss(world_model, num_reward_bins=BINS, reco_symlog=False)
    loss.set_keys(pixels="observation")
    td = _batch().exclude(("next", "encoded_latents"))

    def step() -> None:
        losses, _ = loss(td)
        sum(v for k, v in losses.items() if k.startswith("loss")).sum().backward()

    benchmark.pedantic(step, setup=loss.zero_grad, iterations=1, warmup_rounds=2, rounds=10)
