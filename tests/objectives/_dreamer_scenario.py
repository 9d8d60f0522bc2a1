"""A small Dreamer pipeline and a 1-D point-mass planning task, buildable from TorchRL or tdrl.

``record_dreamer_golden.py`` runs it under TorchRL 0.14.1 and stores weights, inputs and results in
``dreamer_torchrl_0_14_1.pt``; ``test_dreamer_golden.py`` loads the weights into the tdrl build and compares.
Only this file names the library (``lib="torchrl"`` or ``"tdrl"``).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq
from torch import nn

B, T, ACT, STATE, BELIEF, HIDDEN, PIX = 3, 4, 2, 4, 8, 8, 16
HORIZON = 5


def _lib(lib: str) -> SimpleNamespace:
    return SimpleNamespace(
        modules=importlib.import_module(f"{lib}.modules"),
        envs=importlib.import_module(f"{lib}.envs.model_based"),
        data=importlib.import_module(f"{lib}.data"),
        objectives=importlib.import_module(f"{lib}.objectives"),
        value=importlib.import_module(f"{lib}.objectives.value"),
    )


def det(*shape: int, scale: float = 1.0, phase: float = 0.0) -> torch.Tensor:
    """Deterministic ``scale * sin(1.3 * i + phase)`` (independent of either library's RNG)."""
    n = torch.Size(shape).numel()
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 1.3 + phase) * scale).reshape(shape)


def batch() -> TensorDict:
    """A ``[B, T]`` batch as Dreamer's replay buffer gives it (zero state / belief primers)."""
    return TensorDict(
        {
            "state": torch.zeros(B, T, STATE),
            "belief": torch.zeros(B, T, BELIEF),
            "action": det(B, T, ACT, scale=0.9),
            ("next", "pixels"): det(B, T, 3, PIX, PIX, scale=0.5, phase=0.3),
            ("next", "reward"): det(B, T, 1, phase=1.1),
        },
        [B, T],
    )


def build_dreamer(lib: str, value_type: str = "td0") -> SimpleNamespace:
    """World model, imagination env, actor, value model and the three Dreamer losses.

    ``value_type`` is the actor loss's estimator: ``"td0"`` or ``"tdlambda"`` (its default, which TorchRL
    0.14.1 computes as one-step targets: docs/differences.md).
    """
    m = _lib(lib)
    action_spec = m.data.Bounded(-1.0, 1.0, (ACT,))
    prior = m.modules.RSSMPrior(action_spec, hidden_dim=HIDDEN, rnn_hidden_dim=BELIEF, state_dim=STATE,
                                action_dim=ACT)
    posterior = m.modules.RSSMPosterior(hidden_dim=HIDDEN, state_dim=STATE, rnn_hidden_dim=BELIEF, obs_embed_dim=16)
    encoder = m.modules.ObsEncoder(channels=2, num_layers=2, in_channels=3)
    decoder = m.modules.ObsDecoder(channels=2, num_layers=2, kernel_sizes=[6, 6], latent_dim=STATE + BELIEF)
    reward = m.modules.MLP(in_features=STATE + BELIEF, out_features=1, depth=1, num_cells=8)
    rollout = m.modules.RSSMRollout(
        Mod(prior, ["state", "belief", "action"],
            [("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")]),
        Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")]),
    )
    world_model = m.modules.WorldModelWrapper(
        Seq(
            Mod(encoder, [("next", "pixels")], [("next", "encoded_latents")]),
            rollout,
            Mod(decoder, [("next", "state"), ("next", "belief")], [("next", "reco_pixels")]),
        ),
        Mod(reward, [("next", "state"), ("next", "belief")], [("next", "reward")]),
    )
    env = m.envs.DreamerEnv(
        m.modules.WorldModelWrapper(
            Mod(prior, ["state", "belief", "action"], ["_", "_", "state", "belief"]),
            Mod(reward, ["state", "belief"], ["reward"]),
        ),
        prior_shape=(STATE,),
        belief_shape=(BELIEF,),
    )
    obs = m.data.Composite(state=m.data.Unbounded((STATE,)), belief=m.data.Unbounded((BELIEF,)))
    env.observation_spec = obs
    env.state_spec = obs.clone()
    env.action_spec = action_spec
    env.reward_spec = m.data.Unbounded((1,))
    actor_net = m.modules.DreamerActor(ACT, depth=1, num_cells=8)
    actor_net(torch.zeros(1, STATE), torch.zeros(1, BELIEF))  # materialise the lazy first layer
    actor = m.modules.ProbabilisticActor(
        Mod(actor_net, ["state", "belief"], ["loc", "scale"]),
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=m.modules.TanhNormal,
        spec=action_spec,
    )
    value = Mod(m.modules.MLP(in_features=STATE + BELIEF, out_features=1, depth=1, num_cells=8),
                ["state", "belief"], ["state_value"])
    model_loss = m.objectives.DreamerModelLoss(world_model, free_nats=0.1)
    actor_loss = m.objectives.DreamerActorLoss(actor, value, env, imagination_horizon=HORIZON)
    if value_type == "td0":
        actor_loss.make_value_estimator(m.objectives.ValueEstimators.TD0, gamma=0.9)
    else:
        actor_loss.make_value_estimator(m.objectives.ValueEstimators.TDLambda, gamma=0.9, lmbda=0.8)
    value_loss = m.objectives.DreamerValueLoss(value, gamma=0.9)
    return SimpleNamespace(
        prior=prior, posterior=posterior, encoder=encoder, decoder=decoder, actor_net=actor_net,
        world_model=world_model, env=env, actor=actor, value=value,
        model_loss=model_loss, actor_loss=actor_loss, value_loss=value_loss,
    )


def load(parts: SimpleNamespace, states: dict) -> None:
    """Loads the recorded state dicts into ``parts``."""
    for name in ("world_model", "actor", "value"):
        getattr(parts, name).load_state_dict(states[name])


def _grads(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}


def run_dreamer(parts: SimpleNamespace) -> dict:
    """One Dreamer update's losses and gradients, plus the blocks on fixed inputs (with fixed noise)."""
    out: dict = {}
    x = det(B, STATE + BELIEF + ACT, phase=0.7)
    s, b, a = x[:, :STATE], x[:, STATE:STATE + BELIEF], x[:, STATE + BELIEF:]
    out["prior"] = parts.prior(s, b, a, noise=det(B, STATE, phase=2.0))
    out["posterior"] = parts.posterior(b, det(B, 16, phase=0.4), noise=det(B, STATE, phase=2.5))
    out["encoder"] = parts.encoder(batch()["next", "pixels"])
    out["decoder"] = parts.decoder(s, b)
    out["actor_net"] = parts.actor_net(s, b)

    torch.manual_seed(7)
    model_losses, sampled = parts.model_loss(batch())
    out["model_losses"] = {k: v.detach() for k, v in model_losses.items()}
    out["posterior_state"] = sampled["next", "state"].detach()
    sum(model_losses.values()).sum().backward()
    out["model_grads"] = _grads(parts.world_model)

    start = sampled.select("state", "belief").reshape(-1).detach()
    actor_losses, fake = parts.actor_loss(start)
    out["actor_loss"] = actor_losses["loss_actor"].detach()
    out["lambda_target"] = fake["lambda_target"].detach()
    out["imagined_action"] = fake["action"].detach()
    out["imagined_reward"] = fake["next", "reward"].detach()
    with torch.no_grad():
        out["next_value"] = parts.value(fake["next"].select("state", "belief").clone())["state_value"]
    parts.world_model.zero_grad()
    actor_losses["loss_actor"].backward()
    out["actor_grads"] = _grads(parts.actor)
    out["actor_loss_world_model_grads"] = _grads(parts.world_model)

    value_losses, _ = parts.value_loss(fake.detach())
    out["value_loss"] = value_losses["loss_value"].detach()
    value_losses["loss_value"].backward()
    out["value_grads"] = _grads(parts.value)
    return out


def point_mass_env(lib: str):
    """A 1-D point mass (``position``, ``velocity``) rewarded for reaching ``position = 1``."""
    m = _lib(lib)

    def dynamics(position, velocity, action):
        velocity = velocity + 0.5 * action
        return position + 0.5 * velocity, velocity

    class PointMass(m.envs.ModelBasedEnvBase):
        def __init__(self):
            super().__init__(m.modules.WorldModelWrapper(
                Mod(dynamics, ["position", "velocity", "action"], ["position", "velocity"]),
                Mod(lambda p: -(p - 1.0).abs(), ["position"], ["reward"]),
            ))
            obs = m.data.Composite(position=m.data.Unbounded((1,)), velocity=m.data.Unbounded((1,)))
            self.observation_spec = obs
            self.state_spec = obs.clone()
            self.action_spec = m.data.Bounded(-1.0, 1.0, (1,))
            self.reward_spec = m.data.Unbounded((1,))

        def _reset(self, tensordict=None, **kwargs):
            return TensorDict({"position": torch.zeros(1), "velocity": torch.zeros(1)}, [])

    return PointMass()


def planners(lib: str) -> dict:
    """CEM's and MPPI's actions for a batch of point-mass states, seeded."""
    m = _lib(lib)
    env = point_mass_env(lib)
    start = TensorDict({"position": torch.tensor([[0.0], [2.0], [1.0]]), "velocity": torch.zeros(3, 1)}, [3])
    out = {}
    torch.manual_seed(3)
    cem = m.modules.CEMPlanner(env, planning_horizon=6, optim_steps=4, num_candidates=32, top_k=6)
    out["cem"] = cem(start.clone())["action"]
    value = Mod(lambda p: -(p - 1.0).abs() * 2, ["position"], ["state_value"])
    adv = m.value.TDLambdaEstimator(gamma=0.9, lmbda=0.9, value_network=value)
    torch.manual_seed(3)
    mppi = m.modules.MPPIPlanner(env, adv, temperature=2.0, planning_horizon=6, optim_steps=4,
                                 num_candidates=32, top_k=6)
    out["mppi"] = mppi(start.clone())["action"]
    return out
