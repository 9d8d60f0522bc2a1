"""DreamerV3 end to end on CPU: a few world-model, actor and critic updates on a tiny state task (and a pixel
world-model step), with the optimizers and the slow-critic updater a training loop uses."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from tdrl.modules import (
    DreamerV3ImageDecoder,
    DreamerV3ImageEncoder,
    DreamerV3MLP,
    RSSMPosteriorV3,
    RSSMPriorV3,
    RSSMRolloutV3,
    SymExpTwoHot,
)
from tdrl.objectives import DreamerV3ModelLoss, SoftUpdate

from ._dreamer_v3_scenario import B, T, batch, build


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_state_task_updates() -> None:
    torch.manual_seed(0)
    parts = build("tdrl")
    loss = parts.loss
    world = torch.optim.Adam(parts.world_model.parameters(), lr=3e-3)
    actor = torch.optim.Adam(parts.actor.parameters(), lr=1e-3)
    critic = torch.optim.Adam(parts.value_loss.value_model_params.values(True, True), lr=1e-3)
    slow = SoftUpdate(parts.value_loss, tau=0.02)
    before = {"world": _params(parts.world_model), "actor": _params(parts.actor),
              "target": parts.value_loss.target_value_model_params.clone()}
    data = batch()
    reco = []
    for _ in range(6):
        out = loss(data.clone())
        total = sum(v for k, v in out.items() if k.startswith("loss_"))
        assert torch.isfinite(total)
        for opt in (world, actor, critic):
            opt.zero_grad()
        total.backward()
        for opt in (world, actor, critic):
            opt.step()
        slow.step()
        reco.append(out["loss_model_reco"].item())
        assert out["replay_context"].batch_size == torch.Size([B, T])
    assert reco[-1] < reco[0]
    assert any(not torch.equal(a, b) for a, b in zip(before["world"], parts.world_model.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(before["actor"], parts.actor.parameters()))
    assert not (parts.value_loss.target_value_model_params == before["target"]).all()


def test_pixel_world_model_step() -> None:
    torch.manual_seed(0)
    cats, classes, belief = 2, 4, 8
    state = cats * classes
    encoder = DreamerV3ImageEncoder(depth=2, mults=(1, 2), kernel_size=3)
    embed = encoder.output_features((3, 8, 8))
    prior = RSSMPriorV3(action_shape=(1,), hidden_dim=8, rnn_hidden_dim=belief, num_categoricals=cats,
                        num_classes=classes, action_dim=1, recurrent_model="block_gru", num_blocks=2)
    posterior = RSSMPosteriorV3(hidden_dim=8, num_categoricals=cats, num_classes=classes, rnn_hidden_dim=belief,
                                obs_embed_dim=embed, use_rms_norm=True)
    nxt = [("next", "state"), ("next", "belief")]
    world_model = Seq(
        Mod(encoder, [("next", "pixels")], [("next", "encoded_latents")]),
        RSSMRolloutV3(
            Mod(prior, ["state", "belief", "action"],
                [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
            Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
                [("next", "posterior_logits"), ("next", "state")]),
        ),
        Mod(DreamerV3ImageDecoder(state + belief, image_shape=(3, 8, 8), depth=2, mults=(1, 2), kernel_size=3,
                                  num_blocks=2), nxt, [("next", "reco_pixels")]),
        Mod(DreamerV3MLP(state + belief, 15, depth=1, num_cells=8, outscale=0.0), nxt, [("next", "reward_logits")]),
        Mod(SymExpTwoHot(15), [("next", "reward_logits")], [("next", "reward")]),
    )
    loss = DreamerV3ModelLoss(world_model, num_reward_bins=15, reco_symlog=False)
    data = TensorDict({
        "state": torch.zeros(2, 3, state), "belief": torch.zeros(2, 3, belief), "action": torch.randn(2, 3, 1),
        "is_init": torch.zeros(2, 3, 1, dtype=torch.bool),
        ("next", "pixels"): torch.randint(0, 256, (2, 3, 3, 8, 8), dtype=torch.uint8),
        ("next", "reward"): torch.randn(2, 3, 1),
    }, [2, 3])
    opt = torch.optim.Adam(world_model.parameters(), lr=1e-2)
    first = last = None
    for _ in range(4):
        losses, out = loss(data.clone())
        total = sum(losses.values()).sum()
        opt.zero_grad()
        total.backward()
        opt.step()
        first = first if first is not None else losses["loss_model_reco"].item()
        last = losses["loss_model_reco"].item()
    assert out["next", "reco_pixels"].shape == (2, 3, 3, 8, 8)
    assert last < first
