"""Objective benchmarks: value estimators (TorchRL's ``test_values`` and ``test_gae_speed`` workloads).

Same workload IDs and sizes as TorchRL's CPU suite, so ``--backend tdrl`` and ``--backend torchrl`` runs
can be compared with ``benchmarks/compare.py``.
"""

from __future__ import annotations

import pytest
import torch
from _backend import has, sub
from tensordict import TensorDict
from tensordict.nn import (
    InteractionType,
    NormalParamExtractor,
)
from tensordict.nn import (
    ProbabilisticTensorDictModule as ProbMod,
)
from tensordict.nn import (
    ProbabilisticTensorDictSequential as ProbSeq,
)
from tensordict.nn import (
    TensorDictModule as Mod,
)
from tensordict.nn import (
    TensorDictSequential as Seq,
)

F = sub("objectives.value.functional")


def _value_inputs(*, b: int = 300, t: int = 500, d: int = 1) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {
        "values": torch.randn(b, t, d),
        "next_values": torch.randn(b, t, d),
        "reward": torch.randn(b, t, d),
        "done": torch.zeros(b, t, d, dtype=torch.bool).bernoulli_(0.1),
    }


@pytest.mark.parametrize(
    "val_fn,has_lmbda,has_state_value",
    [
        ("generalized_advantage_estimate", True, True),
        ("vec_generalized_advantage_estimate", True, True),
        ("td0_return_estimate", False, False),
        ("td1_return_estimate", False, False),
        ("vec_td1_return_estimate", False, False),
        ("td_lambda_return_estimate", True, False),
        ("vec_td_lambda_return_estimate", True, False),
    ],
)
def test_values(benchmark, val_fn: str, has_lmbda: bool, has_state_value: bool) -> None:
    fn = getattr(F, val_fn)

    def setup():
        data = _value_inputs()
        kwargs = {
            "gamma": 0.95,
            "next_state_value": data["next_values"],
            "reward": data["reward"],
            "done": data["done"],
        }
        if has_lmbda:
            kwargs["lmbda"] = 0.95
        if has_state_value:
            kwargs["state_value"] = data["values"]
        return (), kwargs

    benchmark.pedantic(fn, setup=setup, iterations=1, rounds=50)


@pytest.mark.parametrize(
    "gae_fn,gamma_tensor,batches,timesteps",
    [
        ("generalized_advantage_estimate", False, 1, 512),
        ("vec_generalized_advantage_estimate", True, 1, 512),
        ("vec_generalized_advantage_estimate", False, 1, 512),
        ("vec_generalized_advantage_estimate", True, 32, 512),
        ("vec_generalized_advantage_estimate", False, 32, 512),
    ],
)
def test_gae_speed(benchmark, gae_fn: str, gamma_tensor: bool, batches: int, timesteps: int) -> None:
    fn = getattr(F, gae_fn)
    data = _value_inputs(b=batches, t=timesteps)
    gamma = torch.full((batches, timesteps, 1), 0.99) if gamma_tensor else 0.99
    benchmark(fn, gamma, 0.95, data["values"], data["next_values"], data["reward"], data["done"])


########################################################################
# Loss benchmarks: TorchRL's ``test_<algo>_speed[compile-backward]`` (reference section 4.3), plus bare
# ``nn.Module`` forwards of the same networks so eager loss overhead = loss time / bare time.
# Section owned by the losses engineer.

_modules = sub("modules")
_data = sub("data")
_objectives = sub("objectives")
N_OBS, N_ACT, NCELLS, N_HIDDEN, BATCH, T = 8, 4, 128, 64, 128, 10
_COMPILE = [False, True, "reduce-overhead"]
_BACKWARD = [None, "backward"]


def _mlp(i: int, o: int, depth: int):
    return _modules.MLP(in_features=i, out_features=o, depth=depth, num_cells=NCELLS)


def _common():
    return Mod(_mlp(N_OBS, N_HIDDEN, 3), in_keys=["obs"], out_keys=["hidden"])


def _actor(common, **prob_kwargs):
    return ProbSeq(
        common,
        Mod(_mlp(N_HIDDEN, 2 * N_ACT, 2), in_keys=["hidden"], out_keys=["param"]),
        Mod(NormalParamExtractor(), in_keys=["param"], out_keys=["loc", "scale"]),
        ProbMod(
            in_keys=["loc", "scale"],
            out_keys=["action"],
            distribution_class=_modules.TanhNormal,
            distribution_kwargs={"safe_tanh": False},
            **prob_kwargs,
        ),
    )


def _qvalue(common):
    return Seq(common, Mod(_mlp(N_HIDDEN + N_ACT, 1, 2), in_keys=["hidden", "action"], out_keys=["state_action_value"]))


def _value(common):
    return Seq(common, Mod(_mlp(N_HIDDEN, 1, 2), in_keys=["hidden"], out_keys=["state_value"]))


def _offpolicy_td(action=None) -> TensorDict:
    torch.manual_seed(0)
    return TensorDict(
        {
            "obs": torch.randn(BATCH, N_OBS),
            "action": torch.randn(BATCH, N_ACT).tanh() if action is None else action,
            "done": torch.zeros(BATCH, 1, dtype=torch.bool),
            "next": {
                "obs": torch.randn(BATCH, N_OBS),
                "reward": torch.randn(BATCH, 1),
                "done": torch.zeros(BATCH, 1, dtype=torch.bool),
            },
        },
        batch_size=[BATCH],
    )


def _onpolicy_td(critic=None) -> TensorDict:
    torch.manual_seed(0)
    td = TensorDict(
        {
            "obs": torch.randn(BATCH, T, N_OBS),
            "action": torch.randn(BATCH, T, N_ACT).tanh(),
            "action_log_prob": torch.randn(BATCH, T),
            "done": torch.zeros(BATCH, T, 1, dtype=torch.bool),
            "next": {
                "obs": torch.randn(BATCH, T, N_OBS),
                "reward": torch.randn(BATCH, T, 1),
                "done": torch.zeros(BATCH, T, 1, dtype=torch.bool),
            },
        },
        batch_size=[BATCH, T],
        names=[None, "time"],
    )
    if critic is not None and has("objectives.value", "GAE"):
        sub("objectives.value").GAE(value_network=critic, gamma=0.99, lmbda=0.95, shifted=True)(td)
    else:
        # Same inputs for both backends when an estimator is missing; GAE is outside the timed region.
        td["advantage"] = torch.randn(BATCH, T, 1)
        td["value_target"] = torch.randn(BATCH, T, 1)
    return td


def _maybe_compile(fn, compile):
    if compile:
        torch._dynamo.reset_code_caches()
        if compile == "reduce-overhead":
            return torch.compile(fn, mode="reduce-overhead", fullgraph=True)
        return torch.compile(fn, fullgraph=True)
    return fn


def _run_loss(benchmark, loss, td, compile, backward, *, pedantic_forward: bool = False) -> None:
    loss(td)
    fn = _maybe_compile(loss, compile)
    if compile:
        for _ in range(3):
            fn(td)
    if backward:

        def loss_and_bw(td):
            losses = fn(td)
            sum(v for k, v in losses.items() if k.startswith("loss")).backward()

        benchmark.pedantic(loss_and_bw, args=(td,), setup=loss.zero_grad, iterations=1, warmup_rounds=5, rounds=50)
    elif pedantic_forward:
        benchmark.pedantic(fn, args=(td,), rounds=100, iterations=10)
    else:
        benchmark(fn, td)


def _skip(name: str, compile, backward) -> None:
    if compile == "reduce-overhead" and backward:
        pytest.skip("reduce-overhead x backward is skipped (as in TorchRL's suite)")
    if not has("objectives", name):
        pytest.skip(f"{name} is not available in this backend")


_loss_params = pytest.mark.parametrize("backward", _BACKWARD)
_compile_params = pytest.mark.parametrize("compile", _COMPILE)


@_loss_params
@_compile_params
def test_dqn_speed(benchmark, backward, compile) -> None:
    _skip("DQNLoss", compile, backward)
    net = _modules.QValueActor(_mlp(N_OBS, N_ACT, 3), in_keys=["obs"], action_space="one-hot")
    loss = _objectives.DQNLoss(net, action_space="one-hot")
    td = _offpolicy_td(action=torch.nn.functional.one_hot(torch.randint(N_ACT, (BATCH,)), N_ACT))
    _run_loss(benchmark, loss, td, compile, backward)


@_loss_params
@_compile_params
def test_ddpg_speed(benchmark, backward, compile) -> None:
    _skip("DDPGLoss", compile, backward)
    common = _common()
    actor = Seq(common, Mod(_mlp(N_HIDDEN, N_ACT, 2), in_keys=["hidden"], out_keys=["action"]))
    loss = _objectives.DDPGLoss(actor, _qvalue(common))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_sac_speed(benchmark, backward, compile) -> None:
    _skip("SACLoss", compile, backward)
    common = _common()
    loss = _objectives.SACLoss(_actor(common), _qvalue(common), action_spec=_data.Unbounded(shape=(N_ACT,)))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_redq_speed(benchmark, backward, compile) -> None:
    _skip("REDQLoss", compile, backward)
    if compile and backward:
        pytest.skip("REDQ compile x backward is skipped (as in TorchRL's suite)")
    common = _common()
    actor = _actor(common, return_log_prob=True)
    loss = _objectives.REDQLoss(actor, _qvalue(common), action_spec=_data.Unbounded(shape=(N_ACT,)))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_redq_deprec_speed(benchmark, backward, compile) -> None:
    if compile == "reduce-overhead" and backward:
        pytest.skip("reduce-overhead x backward is skipped (as in TorchRL's suite)")
    if compile and backward:
        pytest.skip("REDQ compile x backward is skipped (as in TorchRL's suite)")
    if not has("objectives.deprecated", "REDQLoss_deprecated"):
        pytest.skip("REDQLoss_deprecated is not available in this backend")
    common = _common()
    actor = _actor(common, return_log_prob=True)
    loss = sub("objectives.deprecated").REDQLoss_deprecated(
        actor, _qvalue(common), action_spec=_data.Unbounded(shape=(N_ACT,))
    )
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


class _RenormQ(torch.nn.Module):
    """``[obs, action] -> Q`` with batch renormalisation before each hidden layer (CrossQ's critic)."""

    def __init__(self) -> None:
        super().__init__()
        d = N_OBS + N_ACT
        self.net = torch.nn.Sequential(
            _modules.BatchRenorm1d(d), torch.nn.Linear(d, NCELLS), _modules.BatchRenorm1d(NCELLS), torch.nn.ReLU(),
            torch.nn.Linear(NCELLS, NCELLS), _modules.BatchRenorm1d(NCELLS), torch.nn.ReLU(), torch.nn.Linear(NCELLS, 1),
        )

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, action], -1))


@_loss_params
@_compile_params
def test_crossq_speed(benchmark, backward, compile) -> None:
    _skip("CrossQLoss", compile, backward)
    qvalue = Mod(_RenormQ(), in_keys=["obs", "action"], out_keys=["state_action_value"])
    loss = _objectives.CrossQLoss(_actor(_common()), qvalue, action_spec=_data.Unbounded(shape=(N_ACT,)))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_tqc_speed(benchmark, backward, compile) -> None:
    _skip("TQCLoss", compile, backward)
    common = _common()
    # TorchRL's sota layout: one critic MLP per member, 25 quantiles, 5 members.
    qvalue = Seq(common, Mod(_mlp(N_HIDDEN + N_ACT, 25, 2), in_keys=["hidden", "action"], out_keys=["state_action_value"]))
    loss = _objectives.TQCLoss(_actor(common), qvalue, action_spec=_data.Unbounded(shape=(N_ACT,)))
    td = _offpolicy_td()
    td["next", "terminated"] = td["next", "done"]  # TorchRL's TQC reads it without falling back to done
    _run_loss(benchmark, loss, td, compile, backward)


@_loss_params
@_compile_params
def test_bc_speed(benchmark, backward, compile) -> None:
    _skip("BCLoss", compile, backward)
    loss = _objectives.BCLoss(_actor(_common()))  # the negative log-likelihood of the stored action
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_rnd_speed(benchmark, backward, compile) -> None:
    _skip("RNDLoss", compile, backward)
    loss = _objectives.RNDLoss(_mlp(N_OBS, N_HIDDEN, 2), _mlp(N_OBS, N_HIDDEN, 2))
    loss.set_keys(observation=("next", "obs"))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_td3_speed(benchmark, backward, compile) -> None:
    _skip("TD3Loss", compile, backward)
    common = _common()
    actor = _actor(common, return_log_prob=True, default_interaction_type=InteractionType.DETERMINISTIC)
    loss = _objectives.TD3Loss(
        actor, _qvalue(common), action_spec=_data.Bounded(shape=(N_ACT,), low=-1, high=1)
    )
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward, pedantic_forward=True)


@_loss_params
@_compile_params
def test_cql_speed(benchmark, backward, compile) -> None:
    _skip("CQLLoss", compile, backward)
    common = _common()
    loss = _objectives.CQLLoss(_actor(common), _qvalue(common), action_spec=_data.Unbounded(shape=(N_ACT,)))
    _run_loss(benchmark, loss, _offpolicy_td(), compile, backward)


@_loss_params
@_compile_params
def test_a2c_speed(benchmark, backward, compile) -> None:
    _skip("A2CLoss", compile, backward)
    common = _common()
    actor, critic = _actor(common), _value(common)
    loss = _objectives.A2CLoss(actor_network=actor, critic_network=critic)
    _run_loss(benchmark, loss, _onpolicy_td(critic), compile, backward)


@_loss_params
@_compile_params
def test_ppo_speed(benchmark, backward, compile) -> None:
    _skip("ClipPPOLoss", compile, backward)
    common = _common()
    actor, critic = _actor(common), _value(common)
    loss = _objectives.ClipPPOLoss(actor_network=actor, critic_network=critic)
    _run_loss(benchmark, loss, _onpolicy_td(critic), compile, backward)


@_loss_params
@_compile_params
def test_reinforce_speed(benchmark, backward, compile) -> None:
    _skip("ReinforceLoss", compile, backward)
    common = _common()
    actor, critic = _actor(common), _value(common)
    loss = _objectives.ReinforceLoss(actor_network=actor, critic_network=critic)
    _run_loss(benchmark, loss, _onpolicy_td(critic), compile, backward)


@_loss_params
@_compile_params
def test_iql_speed(benchmark, backward, compile) -> None:
    _skip("IQLLoss", compile, backward)
    common = _common()
    loss = _objectives.IQLLoss(
        actor_network=_actor(common), qvalue_network=_qvalue(common), value_network=_value(common)
    )
    _run_loss(benchmark, loss, _onpolicy_td(), compile, backward)


def _bare_dqn():
    q, q_target = _mlp(N_OBS, N_ACT, 3), _mlp(N_OBS, N_ACT, 3)
    td = _offpolicy_td()
    obs, next_obs = td["obs"], td["next", "obs"]

    def fwd():
        values = q(obs)
        with torch.no_grad():
            next_values = q_target(next_obs).max(-1).values
        return values, next_values

    return fwd


def _bare_ppo():
    trunk, actor_head, critic_head = _mlp(N_OBS, N_HIDDEN, 3), _mlp(N_HIDDEN, 2 * N_ACT, 2), _mlp(N_HIDDEN, 1, 2)
    td = _onpolicy_td()
    obs = td["obs"]

    def fwd():
        hidden = trunk(obs)
        loc, scale = actor_head(hidden).chunk(2, -1)
        value = critic_head(trunk(obs))
        return loc, torch.nn.functional.softplus(scale), value

    return fwd


def _bare_sac_nets():
    """The SAC benchmark's networks as plain modules: policy ``obs -> tanh(loc)`` and two Q members
    ``(trunk, head)``, with the batch's ``obs``, ``next obs`` and ``action``."""
    trunk, head = _mlp(N_OBS, N_HIDDEN, 3), _mlp(N_HIDDEN, 2 * N_ACT, 2)
    qs = [(_mlp(N_OBS, N_HIDDEN, 3), _mlp(N_HIDDEN + N_ACT, 1, 2)) for _ in range(2)]
    td = _offpolicy_td()

    def policy(o):
        return head(trunk(o)).chunk(2, -1)[0].tanh()

    return policy, qs, td["obs"], td["next", "obs"], td["action"]


def _bare_sac():
    """Each Q member runs its trunk for the stored and for the policy's actions (TorchRL's loss)."""
    policy, qs, obs, next_obs, action = _bare_sac_nets()

    def q_all(o, a):
        return [h(torch.cat([t(o), a], -1)) for t, h in qs]

    def fwd():
        with torch.no_grad():
            next_q = q_all(next_obs, policy(next_obs))
        return next_q, q_all(obs, action), q_all(obs, policy(obs))

    return fwd


def _bare_sac_shared():
    """As ``_bare_sac``, with each Q member's trunk run once on ``obs`` for the stored and the policy's
    actions (what tdrl's SACLoss computes)."""
    policy, qs, obs, next_obs, action = _bare_sac_nets()

    def fwd():
        with torch.no_grad():
            next_action = policy(next_obs)
            next_q = [h(torch.cat([t(next_obs), next_action], -1)) for t, h in qs]
        new_action = policy(obs)
        out = []
        for t, h in qs:
            hidden = t(obs)
            out.append((h(torch.cat([hidden, action], -1)), h(torch.cat([hidden.detach(), new_action], -1))))
        return next_q, out

    return fwd


@pytest.mark.parametrize("algo", ["dqn", "ppo", "sac", "sac_shared"])
def test_bare_forward(benchmark, algo: str) -> None:
    """The networks a loss runs, as plain ``nn.Module`` calls (no TensorDict, no loss logic)."""
    fwd = {"dqn": _bare_dqn, "ppo": _bare_ppo, "sac": _bare_sac, "sac_shared": _bare_sac_shared}[algo]()
    fwd()
    benchmark(fwd)


# Offline sequence and imitation losses (no counterpart in TorchRL's suite; eager, same workload both backends).
_DT_KEYS = ["obs", "action", "return_to_go"]


def _dt_config():
    return _modules.DecisionTransformer.DTConfig(
        n_embd=N_HIDDEN, n_layer=2, n_head=4, n_inner=4 * N_HIDDEN, n_positions=3 * T, resid_pdrop=0.0, attn_pdrop=0.0
    )


def _dt_td() -> TensorDict:
    torch.manual_seed(0)
    return TensorDict({"obs": torch.randn(BATCH, T, N_OBS), "action": torch.rand(BATCH, T, N_ACT) * 1.8 - 0.9,
                       "return_to_go": torch.randn(BATCH, T, 1)}, batch_size=[BATCH, T])


@_loss_params
def test_dt_speed(benchmark, backward) -> None:
    _skip("DTLoss", False, backward)
    torch.manual_seed(0)
    actor = Mod(_modules.DTActor(N_OBS, N_ACT, transformer_config=_dt_config()), _DT_KEYS, ["action"])
    _run_loss(benchmark, _objectives.DTLoss(actor), _dt_td(), False, backward)


@_loss_params
def test_online_dt_speed(benchmark, backward) -> None:
    _skip("OnlineDTLoss", False, backward)
    torch.manual_seed(0)
    net = Mod(_modules.OnlineDTActor(N_OBS, N_ACT, transformer_config=_dt_config()), _DT_KEYS, ["loc", "scale"])
    actor = _modules.ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=_modules.TanhNormal,
                                        spec=_data.Unbounded((N_ACT,)))
    _run_loss(benchmark, _objectives.OnlineDTLoss(actor), _dt_td(), False, backward)


class _Discriminator(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = _mlp(N_OBS + N_ACT, 1, 2)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(torch.cat([obs, action], -1)))


@_loss_params
@pytest.mark.parametrize("grad_penalty", [False, True])
def test_gail_speed(benchmark, backward, grad_penalty) -> None:
    _skip("GAILLoss", False, backward)
    torch.manual_seed(0)
    loss = _objectives.GAILLoss(Mod(_Discriminator(), ["obs", "action"], ["d_logits"]), use_grad_penalty=grad_penalty)
    loss.set_keys(expert_observation="obs")
    td = TensorDict({"obs": torch.randn(BATCH, N_OBS), "action": torch.randn(BATCH, N_ACT),
                     "collector_observation": torch.randn(BATCH, N_OBS),
                     "collector_action": torch.randn(BATCH, N_ACT)}, batch_size=[BATCH])
    _run_loss(benchmark, loss, td, False, backward)


@_loss_params
def test_diffusion_bc_speed(benchmark, backward) -> None:
    _skip("DiffusionBCLoss", False, backward)
    torch.manual_seed(0)
    actor = _modules.DiffusionActor(N_ACT, obs_dim=N_OBS, num_steps=100)
    td = TensorDict({"observation": torch.randn(BATCH, N_OBS), "action": torch.rand(BATCH, N_ACT) * 2 - 1}, [BATCH])
    _run_loss(benchmark, _objectives.DiffusionBCLoss(actor), td, False, backward)


@_loss_params
def test_act_speed(benchmark, backward) -> None:
    _skip("ACTLoss", False, backward)
    torch.manual_seed(0)
    model = sub("modules.models").ACTModel(N_OBS, N_ACT, T, hidden_dim=N_HIDDEN, nheads=4, num_encoder_layers=2,
                                           num_decoder_layers=2, latent_dim=16)
    actor = Mod(model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"])
    td = TensorDict({"observation": torch.randn(BATCH, N_OBS), ("vla_action", "chunk"): torch.randn(BATCH, T, N_ACT)},
                    [BATCH])
    _run_loss(benchmark, _objectives.ACTLoss(actor), td, False, backward)


@_loss_params
def test_exponential_quadratic_cost_speed(benchmark, backward) -> None:
    _skip("ExponentialQuadraticCost", False, backward)
    torch.manual_seed(0)
    root = torch.randn(BATCH, N_OBS, N_OBS) * 0.3
    td = TensorDict({("observation", "mean"): torch.randn(BATCH, N_OBS).requires_grad_(backward is not None),
                     ("observation", "var"): root @ root.transpose(-2, -1) + 0.1 * torch.eye(N_OBS)}, [BATCH])
    _run_loss(benchmark, _objectives.ExponentialQuadraticCost(weights=torch.eye(N_OBS)), td, False, backward)
