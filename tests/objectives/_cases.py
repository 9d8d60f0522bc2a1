"""Tiny loss instances and matching batches for the loss contract suite."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from tensordict import TensorDict
from tensordict.nn import (
    CompositeDistribution,
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
from torch import nn

from tdrl.data import Unbounded
from tdrl.modules import (
    BatchRenorm1d,
    DecisionTransformer,
    DistributionalQValueActor,
    DTActor,
    IndependentNormal,
    OneHotCategorical,
    OnlineDTActor,
    ProbabilisticActor,
    TanhNormal,
)
from tdrl.objectives import (
    A2CLoss,
    BCLoss,
    ClipPPOLoss,
    CQLLoss,
    CrossQLoss,
    DDPGLoss,
    DiscreteCQLLoss,
    DiscreteIQLLoss,
    DiscreteSACLoss,
    DistributionalDQNLoss,
    DQNLoss,
    DreamerActorLoss,
    DreamerModelLoss,
    DreamerV3ActorLoss,
    DreamerV3Loss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    DreamerValueLoss,
    DTLoss,
    GAILLoss,
    IQLLoss,
    KLPENPPOLoss,
    OnlineDTLoss,
    PPOLoss,
    REDQLoss,
    ReinforceLoss,
    RNDLoss,
    SACLoss,
    TD3BCLoss,
    TD3Loss,
    TQCLoss,
)
from tdrl.objectives.deprecated import REDQLoss_deprecated

OBS, ACT, B, T = 3, 2, 8, 4


class _Cat(nn.Module):
    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.lin = nn.Linear(i, o)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.cat(xs, -1))


def actor() -> ProbSeq:
    return ProbSeq(
        Mod(nn.Linear(OBS, 2 * ACT), ["observation"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal),
    )


def critic() -> Mod:
    return Mod(nn.Linear(OBS, 1), ["observation"], ["state_value"])


def qvalue() -> Mod:
    return Mod(_Cat(OBS + ACT, 1), ["observation", "action"], ["state_action_value"])


def offpolicy_td(action: torch.Tensor | None = None) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(B, OBS),
            "action": torch.rand(B, ACT) * 1.8 - 0.9 if action is None else action,
            ("next", "observation"): torch.randn(B, OBS),
            ("next", "reward"): torch.randn(B, 1),
            ("next", "done"): torch.zeros(B, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(B, 1, dtype=torch.bool),
        },
        [B],
    )


def onpolicy_td() -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(B, T, OBS),
            "action": torch.rand(B, T, ACT) * 1.8 - 0.9,
            "action_log_prob": torch.randn(B, T),
            "sample_log_prob": torch.randn(B, T),
            "advantage": torch.randn(B, T, 1),
            "value_target": torch.randn(B, T, 1),
            "loc": torch.zeros(B, T, ACT),
            "scale": torch.ones(B, T, ACT),
            ("next", "observation"): torch.randn(B, T, OBS),
            ("next", "reward"): torch.randn(B, T, 1),
            ("next", "done"): torch.zeros(B, T, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(B, T, 1, dtype=torch.bool),
        },
        [B, T],
    )


@dataclass
class Case:
    """A loss factory, its batch factory and which parameter groups each ``loss_*`` term may train."""

    name: str
    make: Callable[[], object]
    data: Callable[[], TensorDict]
    grads: dict[str, set[str]]
    stochastic: bool = False
    has_target: bool = False
    rename: dict[str, str] = field(default_factory=dict)
    # Losses without a ``reduction`` option (Dreamer's) skip the reduction check.
    reductions: bool = True
    # Shape of each ``loss_*`` term (TorchRL's DreamerModelLoss returns ``[1]``).
    loss_shape: tuple[int, ...] = ()
    # An input entry set to NaN by the check_finite test, and one the missing-key message must list.
    finite_key: tuple[str, ...] | str = ("next", "observation")
    listed_key: str = "observation"
    # Compiled (fullgraph) vs eager: "exact" values; "rng": inductor reorders several random draws, so only
    # shapes and finiteness are compared (test_dreamer_compile.py checks the values with fixed noise);
    # "eager": not compiled (DreamerActorLoss rolls an env out and toggles requires_grad, as in TorchRL;
    # GAIL's gradient penalty calls autograd.grad).
    compiled: str = "exact"


def losses_of(out):
    """The loss TensorDict of a loss's output (Dreamer's losses return ``(losses, data)``, as TorchRL)."""
    return out[0] if isinstance(out, tuple) else out


def _dqn() -> DQNLoss:
    net = Seq(
        Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]),
    )
    return DQNLoss(net, action_space="one-hot")


def _dqn_td() -> TensorDict:
    return offpolicy_td(nn.functional.one_hot(torch.randint(ACT, (B,)), ACT))


def _sac() -> SACLoss:
    return SACLoss(actor(), qvalue(), action_spec=Unbounded((ACT,)))


def _sac_v1() -> SACLoss:
    return SACLoss(actor(), qvalue(), critic(), action_spec=Unbounded((ACT,)), delay_actor=True)


def det_actor() -> Mod:
    return Mod(nn.Sequential(nn.Linear(OBS, ACT), nn.Tanh()), ["observation"], ["action"])


def _ddpg() -> DDPGLoss:
    return DDPGLoss(det_actor(), qvalue())


def _td3() -> TD3Loss:
    return TD3Loss(det_actor(), qvalue(), bounds=(-1.0, 1.0))


def _onpolicy(cls):
    def make():
        loss = cls(actor(), critic())
        loss.set_keys(**{k: "action_log_prob" for k in ("sample_log_prob",) if hasattr(loss.tensor_keys, k)})
        return loss

    return make


CASES = [
    Case("dqn", _dqn, _dqn_td, {"loss": {"value_network"}}, has_target=True, rename={"reward": "rew"}),
    Case(
        "ppo",
        _onpolicy(PPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"advantage": "adv"},
    ),
    Case(
        "clip_ppo",
        _onpolicy(ClipPPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"value_target": "vt"},
    ),
    Case(
        "klpen_ppo",
        _onpolicy(KLPENPPOLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
    ),
    Case(
        "a2c",
        _onpolicy(A2CLoss),
        onpolicy_td,
        {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}},
        stochastic=True,
        rename={"advantage": "adv"},
    ),
    Case(
        "reinforce",
        _onpolicy(ReinforceLoss),
        onpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_value": {"critic_network"}},
        rename={"value_target": "vt"},
    ),
    Case(
        "sac",
        _sac,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        stochastic=True,
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "sac_v1",
        _sac_v1,
        offpolicy_td,
        {
            "loss_actor": {"actor_network"},
            "loss_qvalue": {"qvalue_network"},
            "loss_alpha": {"log_alpha"},
            "loss_value": {"value_network"},
        },
        stochastic=True,
        has_target=True,
    ),
]


CASES += [
    Case(
        "ddpg",
        _ddpg,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_value": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "td3",
        _td3,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}},
        stochastic=True,
        has_target=True,
        rename={"done": "d", "terminated": "term"},
    ),
]


CASES += [
    Case(
        "iql",
        lambda: IQLLoss(actor(), qvalue(), critic()),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_value": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
    Case(
        "cql",
        lambda: CQLLoss(actor(), qvalue(), action_spec=Unbounded((ACT,))),
        offpolicy_td,
        {
            "loss_actor": {"actor_network"},
            "loss_actor_bc": {"actor_network"},
            "loss_qvalue": {"qvalue_network"},
            "loss_cql": {"qvalue_network"},
            "loss_alpha": {"log_alpha"},
        },
        stochastic=True,
        has_target=True,
    ),
]


CASES.append(
    Case(
        "redq",
        lambda: REDQLoss(actor(), qvalue(), action_spec=Unbounded((ACT,)), num_qvalue_nets=4),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        stochastic=True,
        has_target=True,
    )
)


CASES.append(
    Case(
        "td3_bc",
        lambda: TD3BCLoss(det_actor(), qvalue(), bounds=(-1.0, 1.0)),
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}},
        stochastic=True,
        has_target=True,
    )
)


def _discrete_sac() -> DiscreteSACLoss:
    actor = ProbSeq(Mod(nn.Linear(OBS, ACT), ["observation"], ["logits"]),
                    ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
    return DiscreteSACLoss(actor, Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]), num_actions=ACT,
                           action_space="one-hot")


CASES.append(
    Case(
        "discrete_sac",
        _discrete_sac,
        _dqn_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        has_target=True,
        rename={"reward": "rew"},
    )
)


def _discrete_iql() -> DiscreteIQLLoss:
    actor = ProbSeq(Mod(nn.Linear(OBS, ACT), ["observation"], ["logits"]),
                    ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
    return DiscreteIQLLoss(actor, Mod(nn.Linear(OBS, ACT), ["observation"], ["state_action_value"]), critic(),
                           action_space="one-hot")


CASES += [
    Case(
        "discrete_iql",
        _discrete_iql,
        _dqn_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_value": {"value_network"}},
        has_target=True,
    ),
    Case(
        "discrete_cql",
        lambda: DiscreteCQLLoss(Mod(nn.Linear(OBS, ACT), ["observation"], ["action_value"]), action_space="one-hot"),
        _dqn_td,
        {"loss_qvalue": {"value_network"}, "loss_cql": {"value_network"}},
        has_target=True,
        rename={"reward": "rew"},
    ),
]


def _distributional_dqn() -> DistributionalDQNLoss:
    net = DistributionalQValueActor(
        nn.Sequential(nn.Linear(OBS, 5 * ACT), nn.Unflatten(-1, (5, ACT))), torch.linspace(-1, 1, 5),
        in_keys=["observation"], action_space="one-hot",
    )
    return DistributionalDQNLoss(net, gamma=0.9)


def _redq_deprecated() -> REDQLoss_deprecated:
    policy = ProbSeq(
        Mod(nn.Linear(OBS, 2 * ACT), ["observation"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal, return_log_prob=True),
    )
    return REDQLoss_deprecated(policy, qvalue(), action_spec=Unbounded((ACT,)), num_qvalue_nets=4)


class _Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(OBS, 2 * ACT + 3)

    def forward(self, obs: torch.Tensor):
        loc, scale, logits = self.lin(obs).split([ACT, ACT, 3], -1)
        return loc, nn.functional.softplus(scale) + 1e-2, logits


def _composite_ppo() -> ClipPPOLoss:
    policy = ProbSeq(
        Mod(_Heads(), ["observation"],
            [("params", "cont", "loc"), ("params", "cont", "scale"), ("params", "disc", "logits")]),
        ProbMod(in_keys=["params"], out_keys=["cont", "disc"], distribution_class=CompositeDistribution,
                distribution_kwargs={"distribution_map": {"cont": IndependentNormal, "disc": torch.distributions.Categorical}},
                return_log_prob=True),
    )
    return ClipPPOLoss(policy, critic(), entropy_coeff={"cont_entropy": 0.01, "disc_entropy": 0.05})


def _composite_td() -> TensorDict:
    td = onpolicy_td()
    td["cont"] = td.pop("action")
    td["disc"] = torch.randint(3, (B, T))
    td["cont_log_prob"] = torch.randn(B, T) - 1
    td["disc_log_prob"] = torch.randn(B, T) - 1
    return td


class RunningScale(nn.Module):
    """Minimal running return normaliser (``update``/``scale``), the interface of ``advantage_norm``."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("sq", torch.ones(()))

    def update(self, value_target: torch.Tensor) -> None:
        self.sq.mul_(0.9).add_(0.1 * value_target.detach().pow(2).mean())

    def scale(self) -> torch.Tensor:
        return self.sq.sqrt()


def _no_advantage_td() -> TensorDict:
    return onpolicy_td().exclude("advantage", "value_target", "loc", "scale")


_ON_GRADS = {"loss_objective": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_critic": {"critic_network"}}

CASES += [
    Case("distributional_dqn", _distributional_dqn, _dqn_td, {"loss": {"value_network"}}, has_target=True,
         rename={"reward": "rew"}),
    Case(
        "redq_deprecated",
        _redq_deprecated,
        offpolicy_td,
        {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}},
        stochastic=True,
        has_target=True,
    ),
    Case("clip_ppo_composite", _composite_ppo, _composite_td, _ON_GRADS, stochastic=True, rename={"advantage": "adv"}),
    Case(
        "clip_ppo_options",
        lambda: _onpolicy_options(),
        onpolicy_td,
        _ON_GRADS,
        stochastic=True,
        has_target=True,
    ),
    Case(
        "a2c_advantage_norm",
        lambda: _a2c_norm(),
        _no_advantage_td,
        _ON_GRADS,
        stochastic=True,
    ),
]


def _onpolicy_options() -> ClipPPOLoss:
    loss = ClipPPOLoss(actor(), critic(), clip_epsilon=(0.1, 0.3), max_importance_ratio=2.0, delay_actor=True)
    return loss.set_keys(sample_log_prob="action_log_prob")


def _a2c_norm() -> A2CLoss:
    return A2CLoss(actor(), critic(), advantage_norm=RunningScale()).set_keys(sample_log_prob="action_log_prob")


def renamed(td: TensorDict, rename: dict[str, str]) -> TensorDict:
    """``td`` with every entry named like a key in ``rename`` moved to its new name (also under next)."""
    td = td.clone()
    for old, new in rename.items():
        for prefix in ((), ("next",)):
            key = (*prefix, old)
            if key in td.keys(True):
                td.rename_key_(key, (*prefix, new))
    return td


class _RenormQ(nn.Module):
    """``[obs, action] -> Q`` through batch renormalisation (the CrossQ critic)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(BatchRenorm1d(OBS + ACT, warmup_steps=1), nn.Linear(OBS + ACT, 8), nn.ReLU(),
                                 nn.Linear(8, 1))

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, action], -1))


def _crossq() -> CrossQLoss:
    return CrossQLoss(actor(), Mod(_RenormQ(), ["observation", "action"], ["state_action_value"]),
                      action_spec=Unbounded((ACT,)))


def _tqc() -> TQCLoss:
    critic = Mod(_Cat(OBS + ACT, 5), ["observation", "action"], ["state_action_value"])
    return TQCLoss(actor(), critic, num_qvalue_nets=3, top_quantiles_to_drop_per_net=1, action_spec=Unbounded((ACT,)))


def _rnd_td() -> TensorDict:
    td = offpolicy_td()
    del td["action"]
    return td


_SAC_GRADS = {"loss_actor": {"actor_network"}, "loss_qvalue": {"qvalue_network"}, "loss_alpha": {"log_alpha"}}

CASES += [
    Case("crossq", _crossq, offpolicy_td, _SAC_GRADS, stochastic=True, rename={"reward": "rew"}),
    Case("tqc", _tqc, offpolicy_td, _SAC_GRADS, stochastic=True, has_target=True, rename={"done": "d", "terminated": "t"}),
    Case("bc_deterministic", lambda: BCLoss(det_actor(), loss_function="l2"), offpolicy_td,
         {"loss_bc": {"actor_network"}}),
    Case("bc_stochastic", lambda: BCLoss(actor()), offpolicy_td, {"loss_bc": {"actor_network"}}),
    # RNDLoss holds plain modules (TorchRL's state_dict layout), so no parameter group is listed here;
    # test_rnd.py checks that only the predictor receives gradients.
    Case("rnd", lambda: RNDLoss(nn.Linear(OBS, 4), nn.Linear(OBS, 4), update_fraction=1.0), _rnd_td,
         {"loss_predictor": set()}),
]


_DT_KEYS = ["observation", "action", "return_to_go"]


def _dt_config() -> DecisionTransformer.DTConfig:
    return DecisionTransformer.DTConfig(n_embd=8, n_layer=1, n_head=2, n_inner=16, n_positions=3 * T)


def _dt_td() -> TensorDict:
    td = onpolicy_td().select("observation", "action", ("next", "observation"))
    td["return_to_go"] = torch.randn(B, T, 1)
    return td


def _dt() -> DTLoss:
    return DTLoss(Mod(DTActor(OBS, ACT, transformer_config=_dt_config()), _DT_KEYS, ["action"]))


def _online_dt() -> OnlineDTLoss:
    net = Mod(OnlineDTActor(OBS, ACT, transformer_config=_dt_config()), _DT_KEYS, ["loc", "scale"])
    actor = ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=Unbounded((ACT,)))
    return OnlineDTLoss(actor)


class _Disc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(OBS + ACT, 1)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.lin(torch.cat([obs, action], -1)))


def _gail(**kwargs) -> GAILLoss:
    return GAILLoss(Mod(_Disc(), ["observation", "action"], ["d_logits"]), **kwargs)


def _gail_td() -> TensorDict:
    td = offpolicy_td()
    td["collector_observation"] = torch.randn(B, OBS) + 1
    td["collector_action"] = torch.randn(B, ACT)
    return td


CASES += [
    Case("dt", _dt, _dt_td, {"loss": {"actor_network"}}),
    Case("online_dt", _online_dt, _dt_td,
         {"loss_log_likelihood": {"actor_network"}, "loss_entropy": {"actor_network"}, "loss_alpha": {"log_alpha"}},
         stochastic=True),
    Case("gail", _gail, _gail_td, {"loss": {"discriminator_network"}},
         rename={"collector_observation": "c_obs"}),
    Case("gail_gp", lambda: _gail(use_grad_penalty=True), _gail_td, {"loss": {"discriminator_network"}},
         stochastic=True, compiled="eager"),  # the gradient penalty calls autograd.grad
]

# The multi-agent losses (their own file: multi-agent data layout).
try:
    from ._cases_marl import MARL_CASES  # noqa: E402
except ImportError:  # imported as a top-level module (benchmarks/gpu/gpu_checks.py puts this folder on sys.path)
    from _cases_marl import MARL_CASES  # type: ignore[no-redef]  # noqa: E402

CASES += MARL_CASES

# Behaviour cloning of diffusion and ACT policies, and PILCO's expected cost (their own file).
try:
    from . import _cases_imitation as _im  # noqa: E402
except ImportError:  # imported as a top-level module (see above)
    import _cases_imitation as _im  # type: ignore[no-redef]  # noqa: E402

CASES += [
    Case("diffusion_bc", _im.diffusion_loss, _im.diffusion_td, {"loss_diffusion_bc": {"actor_network"}},
         stochastic=True, rename={"action": "act"}, finite_key="observation"),
    Case("act", _im.act_loss, _im.act_td, {"loss_act": {"actor_network"}}, stochastic=True,
         rename={"observation": "obs"}, finite_key="observation", listed_key="vla_action"),
    Case("exponential_quadratic_cost", _im.cost_loss, _im.cost_td, {"loss_cost": set()},
         finite_key=("observation", "mean")),
]


def _dreamer_loss(name: str, cls: type):
    """One of the losses of the Dreamer scenario (world model, imagination env and networks built together)."""
    from ._dreamer_scenario import build_dreamer

    torch.manual_seed(0)
    loss = getattr(build_dreamer("tdrl", "tdlambda"), name)
    assert type(loss) is cls
    return loss


def _dreamer_start() -> TensorDict:
    from ._dreamer_scenario import BELIEF, STATE

    g = torch.Generator().manual_seed(0)
    return TensorDict({"state": torch.randn(6, STATE, generator=g), "belief": torch.randn(6, BELIEF, generator=g)},
                      [6])


def _dreamer_fake() -> TensorDict:
    from ._dreamer_scenario import BELIEF, STATE

    g = torch.Generator().manual_seed(1)
    return TensorDict({"state": torch.randn(6, 5, STATE, generator=g), "belief": torch.randn(6, 5, BELIEF, generator=g),
                       "lambda_target": torch.randn(6, 5, 1, generator=g)}, [6, 5])


def _dreamer_batch() -> TensorDict:
    from ._dreamer_scenario import batch

    return batch()


# Dreamer's losses keep plain modules (TorchRL's state_dict layout), so no parameter group is listed;
# test_dreamer_golden.py checks which networks each one trains.
CASES += [
    Case("dreamer_model", lambda: _dreamer_loss("model_loss", DreamerModelLoss), _dreamer_batch,
         {"loss_model_kl": set(), "loss_model_reco": set(), "loss_model_reward": set()}, stochastic=True,
         reductions=False, loss_shape=(1,), finite_key=("next", "pixels"), listed_key="action", compiled="rng"),
    Case("dreamer_actor", lambda: _dreamer_loss("actor_loss", DreamerActorLoss), _dreamer_start, {"loss_actor": set()},
         stochastic=True, reductions=False, finite_key="state", listed_key="belief", compiled="eager"),
    Case("dreamer_value", lambda: _dreamer_loss("value_loss", DreamerValueLoss), _dreamer_fake, {"loss_value": set()},
         reductions=False, finite_key="lambda_target", listed_key="lambda_target"),
]


def _dreamer_v3_loss(name: str, cls: type):
    """One of the losses of the DreamerV3 scenario (world model, imagination env and networks built together)."""
    from ._dreamer_v3_scenario import build

    torch.manual_seed(0)
    loss = getattr(build("tdrl"), name)
    assert type(loss) is cls
    return loss


def _dreamer_v3_start() -> TensorDict:
    from ._dreamer_v3_scenario import BELIEF, STATE

    g = torch.Generator().manual_seed(0)
    return TensorDict({"state": torch.randn(6, STATE, generator=g), "belief": torch.randn(6, BELIEF, generator=g)},
                      [6])


def _dreamer_v3_fake() -> TensorDict:
    from ._dreamer_v3_scenario import BELIEF, STATE

    g = torch.Generator().manual_seed(1)
    return TensorDict({"state": torch.randn(6, 5, STATE, generator=g), "belief": torch.randn(6, 5, BELIEF, generator=g),
                       "lambda_target": torch.randn(6, 5, 1, generator=g)}, [6, 5])


def _dreamer_v3_batch() -> TensorDict:
    from ._dreamer_v3_scenario import batch

    return batch()


# The world model and the actor are plain modules (TorchRL's state_dict layout); the critic is functional (the
# composite DreamerV3Loss holds it inside its value loss, so the suite sees no parameter group there).
# test_dreamer_v3_golden.py checks which networks each term trains.
CASES += [
    Case("dreamer_v3_model", lambda: _dreamer_v3_loss("model_loss", DreamerV3ModelLoss), _dreamer_v3_batch,
         {k: set() for k in ("loss_model_dynamic", "loss_model_representation", "loss_model_reco",
                             "loss_model_reward", "loss_model_continue")},
         stochastic=True, reductions=False, loss_shape=(1,), finite_key=("next", "observation"), listed_key="action",
         compiled="rng"),
    Case("dreamer_v3_actor", lambda: _dreamer_v3_loss("actor_loss", DreamerV3ActorLoss), _dreamer_v3_start, {"loss_actor": set()},
         stochastic=True, reductions=False, finite_key="state", listed_key="belief", compiled="eager"),
    Case("dreamer_v3_value", lambda: _dreamer_v3_loss("value_loss", DreamerV3ValueLoss), _dreamer_v3_fake, {"loss_value": {"value_model"}},
         has_target=True, finite_key="lambda_target", listed_key="lambda_target"),
    Case("dreamer_v3", lambda: _dreamer_v3_loss("loss", DreamerV3Loss), _dreamer_v3_batch,
         {"loss_model_reco": set(), "loss_actor": set(), "loss_value": set(), "loss_replay_value": set()},
         stochastic=True, reductions=False, finite_key=("next", "observation"), listed_key="action", compiled="eager"),
]
