"""A short Dreamer run on state-based Pendulum: world model, imagination env, actor and value losses trained
together from random-policy data (TorchRL's Dreamer wiring, with MLP encoder / decoder for vector observations).
"""

from __future__ import annotations

import torch
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq

from tdrl.data import Composite, Unbounded
from tdrl.envs import GymEnv
from tdrl.envs.model_based import DreamerEnv
from tdrl.modules import (
    MLP,
    DreamerActor,
    ProbabilisticActor,
    RSSMPosterior,
    RSSMPrior,
    RSSMRollout,
    TanhNormal,
    WorldModelWrapper,
)
from tdrl.objectives import DreamerActorLoss, DreamerModelLoss, DreamerValueLoss

STATE, BELIEF, EMBED, T = 8, 32, 16, 10


def _data(env) -> TensorDict:  # noqa: F821
    data = env.rollout(400, break_when_any_done=False).reshape(-1, T)  # [40, T]
    data["state"] = torch.zeros(*data.shape, STATE)
    data["belief"] = torch.zeros(*data.shape, BELIEF)
    return data


def test_dreamer_learns_on_state_pendulum() -> None:
    torch.manual_seed(0)
    env = GymEnv("Pendulum-v1")
    env.set_seed(0)
    data = _data(env)
    action_spec = env.action_spec
    prior = RSSMPrior(action_spec, hidden_dim=BELIEF, rnn_hidden_dim=BELIEF, state_dim=STATE, action_dim=1)
    posterior = RSSMPosterior(hidden_dim=BELIEF, state_dim=STATE, rnn_hidden_dim=BELIEF, obs_embed_dim=EMBED)
    reward = MLP(in_features=STATE + BELIEF, out_features=1, depth=2, num_cells=64)
    world_model = WorldModelWrapper(
        Seq(
            Mod(MLP(in_features=3, out_features=EMBED, depth=1, num_cells=64), [("next", "observation")],
                [("next", "encoded_latents")]),
            RSSMRollout(
                Mod(prior, ["state", "belief", "action"],
                    [("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")]),
                Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
                    [("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")]),
            ),
            Mod(MLP(in_features=STATE + BELIEF, out_features=3, depth=1, num_cells=64),
                [("next", "state"), ("next", "belief")], [("next", "reco_observation")]),
        ),
        Mod(reward, [("next", "state"), ("next", "belief")], [("next", "reward")]),
    )
    model_loss = DreamerModelLoss(world_model, global_average=True, free_nats=0.0).set_keys(
        pixels="observation", reco_pixels="reco_observation")

    imagination = DreamerEnv(
        WorldModelWrapper(Mod(prior, ["state", "belief", "action"], ["_", "_", "state", "belief"]),
                          Mod(reward, ["state", "belief"], ["reward"])),
        prior_shape=(STATE,), belief_shape=(BELIEF,),
    )
    latent = Composite(state=Unbounded((STATE,)), belief=Unbounded((BELIEF,)))
    imagination.observation_spec = latent
    imagination.state_spec = latent.clone()
    imagination.action_spec = action_spec
    imagination.reward_spec = Unbounded((1,))
    actor = ProbabilisticActor(
        Mod(DreamerActor(1, depth=2, num_cells=64), ["state", "belief"], ["loc", "scale"]),
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal,
        distribution_kwargs={"low": -2.0, "high": 2.0}, spec=action_spec,
    )
    value = Mod(MLP(in_features=STATE + BELIEF, out_features=1, depth=2, num_cells=64), ["state", "belief"],
                ["state_value"])
    actor_loss = DreamerActorLoss(actor, value, imagination, imagination_horizon=8)
    value_loss = DreamerValueLoss(value)

    opt_model = torch.optim.Adam(world_model.parameters(), lr=3e-3)
    opt_actor = torch.optim.Adam(actor.parameters(), lr=1e-3)
    opt_value = torch.optim.Adam(value.parameters(), lr=1e-3)
    history = []
    for _ in range(60):
        batch = data[torch.randint(0, data.shape[0], (16,))].clone()
        losses, sampled = model_loss(batch)
        opt_model.zero_grad()
        sum(losses.values()).sum().backward()
        opt_model.step()
        history.append({k: v.item() for k, v in losses.items()})

        start = sampled.select("state", "belief").reshape(-1).detach()
        a_losses, fake = actor_loss(start)
        opt_actor.zero_grad()
        a_losses["loss_actor"].backward()
        opt_actor.step()
        v_losses, _ = value_loss(fake.detach())
        opt_value.zero_grad()
        v_losses["loss_value"].backward()
        opt_value.step()
        assert torch.isfinite(a_losses["loss_actor"]) and torch.isfinite(v_losses["loss_value"])

    first = {k: sum(h[k] for h in history[:5]) / 5 for k in history[0]}
    last = {k: sum(h[k] for h in history[-5:]) / 5 for k in history[0]}
    # The world model learns to reconstruct observations and predict rewards from its latent.
    assert last["loss_model_reco"] < 0.5 * first["loss_model_reco"], (first, last)
    assert last["loss_model_reward"] < 0.5 * first["loss_model_reward"], (first, last)
    # Imagined trajectories have the horizon and the actions stay in the action bounds.
    assert fake.shape == (16 * T, 8) and fake["action"].abs().max() <= 2.0
