"""A small DreamerV3 learner (state task) and its blocks, buildable from TorchRL or tdrl.

``record_dreamer_v3_golden.py`` runs it under TorchRL 0.14.1 and stores weights, inputs and results in
``dreamer_v3_torchrl_0_14_1.pt``; ``test_dreamer_v3_golden.py`` loads the weights into the tdrl build and
compares values and gradients. Only this file names the library (``lib="torchrl"`` or ``"tdrl"``).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq
from torch import nn

B, T, ACT, CATS, CLASSES, BELIEF, HIDDEN, OBS, EMBED, BINS = 2, 4, 2, 4, 4, 8, 8, 5, 8, 15
STATE = CATS * CLASSES
HORIZON = 4


def _lib(lib: str) -> SimpleNamespace:
    return SimpleNamespace(
        modules=importlib.import_module(f"{lib}.modules"),
        envs=importlib.import_module(f"{lib}.envs.model_based"),
        data=importlib.import_module(f"{lib}.data"),
        objectives=importlib.import_module(f"{lib}.objectives"),
    )


def det(*shape: int, scale: float = 1.0, phase: float = 0.0) -> torch.Tensor:
    """Deterministic ``scale * sin(1.3 * i + phase)`` (independent of either library's RNG)."""
    n = torch.Size(shape).numel()
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 1.3 + phase) * scale).reshape(shape)


def batch() -> TensorDict:
    """A ``[B, T]`` replay sample (zero state / belief primers, one reset, one terminal)."""
    is_init = torch.zeros(B, T, 1, dtype=torch.bool)
    is_init[:, 0] = True
    is_init[1, 2] = True
    terminated = torch.zeros(B, T, 1, dtype=torch.bool)
    terminated[1, 1] = True
    return TensorDict(
        {
            "state": torch.zeros(B, T, STATE),
            "belief": torch.zeros(B, T, BELIEF),
            "action": det(B, T, ACT, scale=0.9),
            "is_init": is_init,
            ("next", "observation"): det(B, T, OBS, scale=2.0, phase=0.3),
            ("next", "reward"): det(B, T, 1, scale=3.0, phase=1.1),
            ("next", "done"): terminated.clone(),
            ("next", "terminated"): terminated,
        },
        [B, T],
    )


def _heads(m: SimpleNamespace) -> tuple[nn.Module, nn.Module, nn.Module]:
    reward_net = m.modules.DreamerV3MLP(STATE + BELIEF, BINS, depth=1, num_cells=8)
    value_net = m.modules.DreamerV3MLP(STATE + BELIEF, BINS, depth=1, num_cells=8)
    cont_net = m.modules.DreamerV3MLP(STATE + BELIEF, 1, depth=1, num_cells=8)
    return reward_net, value_net, cont_net


def build(lib: str) -> SimpleNamespace:
    """World model, imagination env, actor, value and continuation models, and the DreamerV3 losses."""
    m = _lib(lib)
    prior = m.modules.RSSMPriorV3(action_shape=(ACT,), hidden_dim=HIDDEN, rnn_hidden_dim=BELIEF,
                                  num_categoricals=CATS, num_classes=CLASSES, action_dim=ACT,
                                  recurrent_model="block_gru", num_blocks=2, unimix=0.01)
    posterior = m.modules.RSSMPosteriorV3(hidden_dim=HIDDEN, num_categoricals=CATS, num_classes=CLASSES,
                                          rnn_hidden_dim=BELIEF, obs_embed_dim=EMBED, use_rms_norm=True, unimix=0.01)
    encoder = m.modules.DreamerV3MLP(OBS, EMBED, depth=1, num_cells=8)
    decoder = m.modules.DreamerV3MLP(STATE + BELIEF, OBS, depth=1, num_cells=8)
    reward_net, value_net, cont_net = _heads(m)
    two_hot = m.modules.SymExpTwoHot(BINS)
    nxt = [("next", "state"), ("next", "belief")]
    rollout = m.modules.RSSMRolloutV3(
        Mod(prior, ["state", "belief", "action"], [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
        Mod(posterior, [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_logits"), ("next", "state")]),
    )
    world_model = Seq(
        Mod(encoder, [("next", "observation")], [("next", "encoded_latents")]),
        rollout,
        Mod(decoder, nxt, [("next", "reco_observation")]),
        Mod(reward_net, nxt, [("next", "reward_logits")]),
        Mod(two_hot, [("next", "reward_logits")], [("next", "reward")]),
        Mod(cont_net, nxt, [("next", "continue_pred")]),
    )
    env = m.envs.DreamerEnv(
        m.modules.WorldModelWrapper(
            Mod(prior, ["state", "belief", "action"], ["_", "state", "belief"]),
            Seq(Mod(reward_net, ["state", "belief"], ["reward_logits"]),
                Mod(two_hot, ["reward_logits"], ["reward"])),
        ),
        prior_shape=(STATE,),
        belief_shape=(BELIEF,),
    )
    obs = m.data.Composite(state=m.data.Unbounded((STATE,)), belief=m.data.Unbounded((BELIEF,)))
    env.observation_spec = obs
    env.state_spec = obs.clone()
    env.action_spec = m.data.OneHot(ACT)
    env.reward_spec = m.data.Unbounded((1,))
    actor = m.modules.DreamerV3DiscreteActor(STATE + BELIEF, ACT, depth=1, num_cells=8)
    value = Seq(Mod(value_net, ["state", "belief"], ["state_value_logits"]),
                Mod(two_hot, ["state_value_logits"], ["state_value"]))
    continuation = Seq(Mod(cont_net, ["state", "belief"], ["continue_logit"]),
                       Mod(nn.Sigmoid(), ["continue_logit"], ["continuation"]))
    model_loss = m.objectives.DreamerV3ModelLoss(world_model, num_reward_bins=BINS, free_bits=0.1, lambda_continue=1.0,
                                                 continue_target_scale=0.99, kl_mode="separate", unimix=0.01,
                                                 detach_output=False)
    model_loss.set_keys(pixels="observation", reco_pixels="reco_observation")
    actor_loss = m.objectives.DreamerV3ActorLoss(actor, value, env, continuation_model=continuation,
                                                 imagination_horizon=HORIZON, use_reinforce=True)
    actor_loss.make_value_estimator(m.objectives.ValueEstimators.TDLambda, gamma=0.9, lmbda=0.8)
    value_loss = m.objectives.DreamerV3ValueLoss(value, value_loss="two_hot", num_value_bins=BINS,
                                                 actor_loss=actor_loss, slow_critic_regularization=1.0)
    loss = m.objectives.DreamerV3Loss(model_loss, actor_loss, value_loss)
    modules = {"prior": prior, "posterior": posterior, "encoder": encoder, "decoder": decoder,
               "reward_net": reward_net, "value_net": value_net, "cont_net": cont_net, "actor": actor}
    return SimpleNamespace(m=m, modules=modules, world_model=world_model, env=env, actor=actor, value=value,
                           model_loss=model_loss, actor_loss=actor_loss, value_loss=value_loss, loss=loss,
                           rollout=rollout)


def build_blocks(lib: str) -> dict:
    """Stand-alone blocks (every module family, both RSSM variants)."""
    m = _lib(lib)
    return {
        "cell": m.modules.DreamerV3BlockGRUCell(6, 8, projection_size=4, num_blocks=2, num_layers=2),
        "gru": m.modules.DreamerV3BlockGRU(6, 8, projection_size=4, num_blocks=2),
        "mlp": m.modules.DreamerV3MLP(6, 3, depth=2, num_cells=8, outscale=0.5),
        "image_encoder": m.modules.DreamerV3ImageEncoder(depth=2, mults=(1, 2), kernel_size=3),
        "image_decoder": m.modules.DreamerV3ImageDecoder(12, image_shape=(3, 8, 8), depth=2, mults=(1, 2),
                                                         kernel_size=3, num_blocks=2),
        "image_decoder_dense": m.modules.DreamerV3ImageDecoder(12, image_shape=(3, 8, 8), depth=2, mults=(1, 2),
                                                               kernel_size=3, num_blocks=1),
        "prior_gru": m.modules.RSSMPriorV3(action_shape=(ACT,), hidden_dim=HIDDEN, rnn_hidden_dim=BELIEF,
                                           num_categoricals=CATS, num_classes=CLASSES, action_dim=ACT),
        "posterior_plain": m.modules.RSSMPosteriorV3(hidden_dim=HIDDEN, num_categoricals=CATS, num_classes=CLASSES,
                                                     rnn_hidden_dim=BELIEF, obs_embed_dim=EMBED),
    }


def load(parts: SimpleNamespace, blocks: dict, states: dict) -> None:
    """Loads the recorded state dicts."""
    for name, module in {**parts.modules, **blocks}.items():
        module.load_state_dict(states[name])


def _grads(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}


def _zero(*modules: nn.Module) -> None:
    for module in modules:
        module.zero_grad(set_to_none=True)


def run_utilities(lib: str) -> dict:
    """The two-hot and KL utilities on fixed inputs, values and input gradients."""
    o = _lib(lib).objectives
    out: dict = {}
    bins = _lib(lib).modules.SymExpTwoHot(BINS).bins
    out["bins"], out["bins_even"] = bins, _lib(lib).modules.SymExpTwoHot(16).bins
    x = det(3, 5, scale=30.0)
    out["encode"] = o.two_hot_encode(x, bins)
    logits = det(3, 5, BINS, scale=2.0, phase=0.2).requires_grad_()
    out["decode"] = o.two_hot_decode(logits, bins)
    ce = o.two_hot_cross_entropy(logits, x, bins)
    out["cross_entropy"] = ce
    (ce.sum() + out["decode"].sum()).backward()
    out["two_hot_grad"] = logits.grad
    post = det(3, CATS, CLASSES, scale=2.0, phase=0.5).requires_grad_()
    prior = det(3, CATS, CLASSES, scale=1.5, phase=1.7).requires_grad_()
    dyn, rep = o.categorical_kl_terms(post, prior, free_nats=0.5, unimix=0.01)
    bal = o.categorical_kl_balanced(post, prior, alpha=0.7, free_bits=0.05)
    out["kl_terms"], out["kl_balanced"] = torch.stack([dyn, rep]), bal
    (dyn + 2 * rep + 3 * bal).backward()
    out["kl_post_grad"], out["kl_prior_grad"] = post.grad, prior.grad
    out["symlog"], out["symexp"] = o.symlog(x), o.symexp(det(7, scale=3.0))
    return out


def run_blocks(blocks: dict) -> dict:
    """Each block's output (and the sum's parameter gradients) on fixed inputs; RSSM draws seeded."""
    out: dict = {}
    x = det(3, 5, 6, phase=0.4)
    is_init = torch.tensor([[False, False, True, False, False]] * 3)
    calls = {
        "cell": lambda b: b(x[:, 0], det(3, 8, phase=0.9)),
        "gru": lambda b: torch.cat([t.flatten(1) for t in b(x, det(3, 8, phase=0.9), is_init)], -1),
        "mlp": lambda b: b(x[..., :2], x[..., 2:]),
        "image_encoder": lambda b: b((det(2, 3, 8, 8, phase=0.1) * 127 + 128).to(torch.uint8)),
        "image_decoder": lambda b: b(det(2, 12, phase=0.6)),
        "image_decoder_dense": lambda b: b(det(2, 12, phase=0.6)),
        "prior_gru": lambda b: torch.cat([t.flatten(1) for t in b(det(3, STATE), det(3, BELIEF, phase=1.0),
                                                                   det(3, ACT, phase=2.0))], -1),
        "posterior_plain": lambda b: torch.cat([t.flatten(1) for t in b(det(3, BELIEF), det(3, EMBED, phase=1.0))],
                                               -1),
    }
    for name, call in calls.items():
        _zero(blocks[name])
        torch.manual_seed(11)
        y = call(blocks[name])
        out[name] = y.detach()
        y.pow(2).sum().backward()
        out[name + "_grads"] = _grads(blocks[name])
    return out


def run_rssm(parts: SimpleNamespace) -> dict:
    """The block-GRU prior, the RMS posterior, the state estimator and both rollout paths, seeded."""
    m, out = parts.m, {}
    prior, posterior = parts.modules["prior"], parts.modules["posterior"]
    torch.manual_seed(5)
    out["prior"] = torch.cat([t.flatten(1) for t in prior(det(3, STATE), det(3, BELIEF, phase=1.0),
                                                          det(3, ACT, phase=2.0, scale=3.0))], -1).detach()
    out["posterior"] = torch.cat([t.flatten(1) for t in posterior(det(3, BELIEF), det(3, EMBED, phase=1.0))],
                                 -1).detach()
    data = TensorDict({"state": det(3, STATE), "belief": det(3, BELIEF, phase=0.3),
                       "previous_action": det(3, ACT, phase=0.6), "encoded_latents": det(3, EMBED, phase=0.9),
                       "is_init": torch.tensor([True, False, False])}, [3])
    torch.manual_seed(6)
    est = m.modules.RSSMStateEstimatorV3(prior, posterior)(data)
    out["estimator"] = torch.cat([est["state"], est["belief"]], -1).detach()
    seq = batch()
    seq.set(("next", "encoded_latents"), det(B, T, EMBED, phase=0.2))
    torch.manual_seed(7)
    fast = parts.rollout(seq.clone())
    out["rollout_fast"] = {k: fast["next", k].detach() for k in ("prior_logits", "posterior_logits", "state", "belief")}
    # The same modules behind a wrapper take the TensorDict path (its draws come step by step, in the same order).
    slow_rollout = m.modules.RSSMRolloutV3(
        Mod(prior, ["state", "belief", "action"], [("next", "prior_logits"), ("next", "state"), ("next", "belief")]),
        Mod(lambda b, e: posterior(b, e), [("next", "belief"), ("next", "encoded_latents")],
            [("next", "posterior_logits"), ("next", "state")]),
    )
    assert not slow_rollout._fast_path
    torch.manual_seed(7)
    slow = slow_rollout(seq)
    out["rollout_td"] = {k: slow["next", k].detach() for k in ("prior_logits", "posterior_logits", "state", "belief")}
    return out


def run_losses(parts: SimpleNamespace) -> dict:
    """One DreamerV3 update: every loss entry, the gradients of each objective, the imagined trajectory."""
    out: dict = {}
    wm = parts.world_model
    torch.manual_seed(3)
    result = parts.loss(batch())
    out["losses"] = {k: v.detach() for k, v in result.items() if k != "replay_context"}
    out["replay_context"] = result["replay_context"].to_dict()
    models = {"world_model": wm, "actor": parts.actor, "value": parts.value}
    for term in ("loss_model_dynamic", "loss_model_reco", "loss_model_reward", "loss_model_continue",
                 "loss_actor", "loss_value", "loss_replay_value"):
        _zero(*models.values())
        result[term].sum().backward(retain_graph=True)
        out["grads_" + term] = {name: _grads(mod) for name, mod in models.items()}
    # The imagination alone, to compare the trajectory.
    start = TensorDict({"state": result["replay_context", "state"].reshape(-1, STATE),
                        "belief": result["replay_context", "belief"].reshape(-1, BELIEF)}, [B * T])
    torch.manual_seed(4)
    actor_losses, fake = parts.actor_loss(start)
    out["actor_losses"] = {k: v.detach() for k, v in actor_losses.items()}
    out["fake"] = {k: fake[k].detach() for k in ("action", "lambda_target", "discount_weight", "continuation",
                                                   ("next", "reward"), ("next", "state"))}
    value_losses, _ = parts.value_loss(fake)
    out["value_losses"] = {k: v.detach() for k, v in value_losses.items()}
    return out


def run_variants(parts: SimpleNamespace) -> dict:
    """Other options: balanced KL, scalar reward, symlog value loss, pathwise actor, no return normalisation."""
    m, out = parts.m, {}
    loss = m.objectives.DreamerV3ModelLoss(parts.world_model, num_reward_bins=BINS, reward_two_hot=False,
                                           reco_loss="l1", reco_symlog=False, global_average=True)
    loss.set_keys(pixels="observation", reco_pixels="reco_observation")
    torch.manual_seed(8)
    losses, _ = loss(batch())
    out["model_balanced"] = {k: v.detach() for k, v in losses.items()}
    sym_value = Mod(parts.modules["cont_net"], ["state", "belief"], ["state_value"])
    value_loss = m.objectives.DreamerV3ValueLoss(sym_value, gamma=0.8)
    fake = TensorDict({"state": det(3, HORIZON, STATE), "belief": det(3, HORIZON, BELIEF, phase=0.5),
                       "lambda_target": det(3, HORIZON, 1, scale=4.0)}, [3, HORIZON])
    out["value_symlog"] = value_loss(fake)[0]["loss_value"].detach()
    actor_loss = m.objectives.DreamerV3ActorLoss(parts.actor, parts.value, parts.env, imagination_horizon=HORIZON,
                                                 return_normalization=False, entropy_bonus=0.1)
    actor_loss.make_value_estimator(m.objectives.ValueEstimators.TD0, gamma=0.9)
    start = TensorDict({"state": torch.zeros(3, STATE), "belief": det(3, BELIEF)}, [3])
    torch.manual_seed(9)
    losses, fake = actor_loss(start)
    out["actor_pathwise"] = {k: v.detach() for k, v in losses.items()}
    out["actor_pathwise_target"] = fake["lambda_target"].detach()
    return out


def run_lambda_target(parts: SimpleNamespace) -> torch.Tensor:
    """The actor loss's TD(lambda) target (gamma 0.9, lambda 0.8) without a continuation model."""
    return parts.actor_loss.lambda_target(det(2, HORIZON, 1, scale=2.0), det(2, HORIZON, 1, phase=0.5))


def run_seeded(parts: SimpleNamespace) -> dict:
    """Three calls of the discrete actor wrapped in DreamerV3SeededPolicy (seed 7), and the caller's next draw."""
    policy = parts.m.modules.DreamerV3SeededPolicy(parts.actor, seed=7)
    data = TensorDict({"state": det(5, STATE), "belief": det(5, BELIEF, phase=0.4)}, [5])
    torch.manual_seed(13)
    out = {f"call{i}": policy(data.clone())["action"].detach() for i in range(3)}
    out["caller"] = torch.rand(3)
    out["logits"] = policy(data.clone())["logits"].detach()
    return out


def run_optimizer(lib: str) -> dict:
    """DreamerV3Optimizer on fixed parameters and gradients: two groups, warm-up, a skipped parameter."""
    algos = importlib.import_module(f"{lib}.trainers.algorithms")
    a, b, c = (nn.Parameter(det(*shape, phase=i)) for i, shape in enumerate([(3, 4), (5,), (2,)]))
    opt = algos.DreamerV3Optimizer([{"params": [a, c]}, {"params": [b], "agc": 0.0, "lr": 0.5}], lr=0.1,
                                   warmup_steps=2)
    out = {}
    for step in range(3):
        a.grad, b.grad = det(3, 4, scale=5.0, phase=step), det(5, scale=0.01, phase=step + 1)
        opt.step()
        out[f"step{step}"] = {"a": a.detach().clone(), "b": b.detach().clone(), "c": c.detach().clone()}
    return out


def learner_parameters(parts: SimpleNamespace) -> list[nn.Parameter]:
    seen: dict[int, nn.Parameter] = {}
    for module in (parts.world_model, parts.actor, parts.modules["value_net"]):
        for p in module.parameters():
            seen.setdefault(id(p), p)
    return list(seen.values())


def run_stepper(parts: SimpleNamespace) -> dict:
    """Two eager DreamerV3OptimizationStepper updates: metrics and the parameters after them."""
    m, algos = parts.m, importlib.import_module(f"{parts.m.objectives.__name__.split('.')[0]}.trainers.algorithms")
    params = learner_parameters(parts)
    parts.actor_loss.retnorm.low.zero_()  # the same return statistics whatever ran before
    parts.actor_loss.retnorm.high.zero_()
    opt = algos.DreamerV3Optimizer(params, lr=1e-3, warmup_steps=0)
    stepper = algos.DreamerV3OptimizationStepper(parts.loss, opt, m.objectives.SoftUpdate(parts.value_loss, tau=0.1),
                                                 compile_train_step=False, cudagraph=False)
    out = {}
    for step in range(2):
        torch.manual_seed(20 + step)
        sample = batch()
        metrics = stepper.step(None, sample)
        out[f"metrics{step}"] = {k: v.detach() for k, v in metrics.items()}
        out[f"context{step}"] = sample["replay_context"].to_dict()
    out["params"] = {str(i): p.detach().clone() for i, p in enumerate(params)}
    out["target"] = {".".join(k): v.clone() for k, v in
                     parts.value_loss.target_value_model_params.items(True, True)}
    return out
