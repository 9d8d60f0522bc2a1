"""Loss scenarios built identically on TorchRL 0.14.1 and on tdrl, for golden-value checks.

Each builder takes the library's namespace (``torchrl`` or ``tdrl``: same public names) so the recorder
(``record_torchrl_golden.py``, TorchRL interpreter) and the test (``test_golden_torchrl_extra.py``) run the
very same construction code. Nothing here imports either library.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

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
from torch import distributions as d
from torch import nn


def mlp(i: int, o: int, depth: int, h: int = 16) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(i, h), nn.Tanh()]
        i = h
    layers.append(nn.Linear(i, o))
    return nn.Sequential(*layers)


def nets(lib: SimpleNamespace, dist: str = "TanhNormal"):
    """Actor (``dist``: ``"TanhNormal"`` or ``"IndependentNormal"``), critic and value nets sharing a trunk
    (the layout of TorchRL's benchmarks)."""
    torch.manual_seed(0)
    kwargs = {"safe_tanh": False} if dist == "TanhNormal" else {}
    common = Mod(mlp(3, 8, 1), ["obs"], ["hidden"])
    actor = ProbSeq(
        common,
        Mod(mlp(8, 4, 1), ["hidden"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=getattr(lib.modules, dist),
                distribution_kwargs=kwargs, return_log_prob=True),
    )

    class Cat(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = mlp(10, 1, 1)

        def forward(self, *x: torch.Tensor) -> torch.Tensor:
            return self.net(torch.cat(x, -1))

    q = Seq(common, Mod(Cat(), ["hidden", "action"], ["state_action_value"]))
    v = Seq(common, Mod(mlp(8, 1, 1), ["hidden"], ["state_value"]))
    return actor, q, v


def off_td() -> TensorDict:
    g = torch.Generator().manual_seed(1)
    b = 6
    done = torch.tensor([[False]] * 5 + [[True]])
    return TensorDict({
        "obs": torch.randn(b, 3, generator=g), "action": torch.rand(b, 2, generator=g) * 1.8 - 0.9,
        "done": torch.zeros(b, 1, dtype=torch.bool),
        "next": {"obs": torch.randn(b, 3, generator=g), "reward": torch.randn(b, 1, generator=g), "done": done,
                 "terminated": done}}, [b])


def on_td(with_advantage: bool = True) -> TensorDict:
    g = torch.Generator().manual_seed(2)
    b, t = 4, 3
    td = TensorDict({
        "obs": torch.randn(b, t, 3, generator=g), "action": torch.rand(b, t, 2, generator=g) * 1.8 - 0.9,
        "action_log_prob": torch.randn(b, t, generator=g), "advantage": torch.randn(b, t, 1, generator=g),
        "value_target": torch.randn(b, t, 1, generator=g), "state_value": torch.randn(b, t, 1, generator=g),
        "loc": torch.randn(b, t, 2, generator=g), "scale": torch.rand(b, t, 2, generator=g) + 0.5,
        "done": torch.zeros(b, t, 1, dtype=torch.bool), "terminated": torch.zeros(b, t, 1, dtype=torch.bool),
        "next": {"obs": torch.randn(b, t, 3, generator=g), "reward": torch.randn(b, t, 1, generator=g),
                 "done": torch.zeros(b, t, 1, dtype=torch.bool),
                 "terminated": torch.zeros(b, t, 1, dtype=torch.bool)}}, [b, t])
    if not with_advantage:
        del td["advantage"], td["value_target"], td["state_value"]
    return td


class RunningScale(nn.Module):
    """A small running return normaliser with ``update``/``scale`` (the interface ``advantage_norm`` uses)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("m2", torch.zeros(()))

    def update(self, value_target: torch.Tensor) -> None:
        x = value_target.detach().reshape(-1)
        n, mean = x.numel(), x.mean()
        total = self.count + n
        delta = mean - self.mean
        self.m2 += ((x - mean) ** 2).sum() + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.count.copy_(total)

    def scale(self) -> torch.Tensor:
        return (self.m2 / self.count.clamp_min(1)).sqrt().clamp_min(1e-4)


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = mlp(3, 7, 1)

    def forward(self, obs: torch.Tensor):
        loc, scale, logits = self.net(obs).split([2, 2, 3], -1)
        return loc, nn.functional.softplus(scale) + 1e-2, logits


def composite(lib: SimpleNamespace, independent: bool = False, cls: str = "ClipPPOLoss", **kwargs):
    """A PPO loss (``cls``) over a two-head action (Normal ``"cont"`` + Categorical ``"disc"``), per-head log-probs;
    ``independent`` makes the continuous head one event (``IndependentNormal``) instead of per-dimension."""
    torch.manual_seed(0)
    actor = ProbSeq(
        Mod(Heads(), ["obs"], [("params", "cont", "loc"), ("params", "cont", "scale"), ("params", "disc", "logits")]),
        ProbMod(in_keys=["params"], out_keys=["cont", "disc"], distribution_class=CompositeDistribution,
                distribution_kwargs={"distribution_map": {"cont": lib.modules.IndependentNormal if independent else d.Normal,
                                                    "disc": d.Categorical}},
                return_log_prob=True),
    )
    critic = Mod(mlp(3, 1, 1), ["obs"], ["state_value"])
    td = on_td()
    g = torch.Generator().manual_seed(3)
    td["cont"] = td.pop("action")
    td["disc"] = torch.randint(3, td.shape, generator=g)
    td["cont_log_prob"] = torch.randn(*td.shape, *(() if independent else (2,)), generator=g) - 1
    td["disc_log_prob"] = torch.randn(*td.shape, generator=g) - 1
    del td["action_log_prob"]
    # Parameters of the behaviour distribution (KLPENPPOLoss rebuilds it from them).
    td["params", "cont", "loc"] = torch.randn(*td.shape, 2, generator=g)
    td["params", "cont", "scale"] = torch.rand(*td.shape, 2, generator=g) + 0.5
    td["params", "disc", "logits"] = torch.randn(*td.shape, 3, generator=g)
    return getattr(lib.objectives, cls)(actor, critic, **kwargs), td


def _masked(td: TensorDict) -> TensorDict:
    mask = torch.ones(td.shape, dtype=torch.bool)
    mask[:, -1] = False
    td["shifted_valid"] = mask
    return td


def _distributional(lib: SimpleNamespace):
    torch.manual_seed(0)
    support = torch.linspace(-2, 2, 5)
    net = lib.modules.DistributionalQValueActor(
        nn.Sequential(mlp(3, 5 * 2, 1), nn.Unflatten(-1, (5, 2))), support, in_keys=["obs"], action_space="one-hot"
    )
    td = off_td()
    g = torch.Generator().manual_seed(4)
    td["action"] = nn.functional.one_hot(torch.randint(2, (td.shape[0],), generator=g), 2)
    return lib.objectives.DistributionalDQNLoss(net, gamma=0.9), td


def _sac(lib: SimpleNamespace, **kwargs):
    actor, q, v = nets(lib)
    return lib.objectives.SACLoss(actor, q, action_spec=lib.data.Unbounded((2,)), **kwargs), off_td()


def _ppo(cls_name: str, data: Callable[[], TensorDict] = on_td, dist: str = "TanhNormal", **kwargs):
    def build(lib: SimpleNamespace):
        actor, _, v = nets(lib, dist)
        return getattr(lib.objectives, cls_name)(actor, v, **kwargs), data()

    return build


# name -> (builder, number of consecutive forward calls to record)
SCENARIOS: dict[str, tuple[Callable, int]] = {
    "distributional_dqn": (_distributional, 1),
    "ppo_plain": (_ppo("PPOLoss"), 1),
    "ppo_plain_norm_masked": (_ppo("PPOLoss", lambda: _masked(on_td()), normalize_advantage=True), 1),
    # IndependentNormal: the KL has a closed form (TanhNormal's would be a Monte-Carlo estimate).
    "klpen": (_ppo("KLPENPPOLoss", dist="IndependentNormal"), 3),
    "klpen_tanh": (_ppo("KLPENPPOLoss"), 3),  # TanhNormal: closed-form KL of the pre-tanh normals
    "klpen_small_kl": (_ppo("KLPENPPOLoss", dist="IndependentNormal", dtarg=100.0, beta=0.5), 3),
    "clip_ppo_asym": (_ppo("ClipPPOLoss", clip_epsilon=(0.05, 0.3)), 1),
    "clip_ppo_max_ratio": (_ppo("ClipPPOLoss", max_importance_ratio=1.2), 1),
    "clip_ppo_delay_max_ratio": (_ppo("ClipPPOLoss", delay_actor=True, max_importance_ratio=1.2), 1),
    "ppo_plain_max_ratio": (_ppo("PPOLoss", max_importance_ratio=1.2), 1),
    "clip_ppo_advnorm": (_ppo("ClipPPOLoss", lambda: on_td(False), advantage_norm=RunningScale()), 2),
    "a2c_advnorm": (_ppo("A2CLoss", lambda: on_td(False), advantage_norm=RunningScale()), 2),
    "a2c_advnorm_given": (_ppo("A2CLoss", advantage_norm=RunningScale()), 1),
    "clip_ppo_composite": (lambda lib: composite(lib), 1),
    "clip_ppo_composite_coeffs": (lambda lib: composite(lib, True, entropy_coeff={"cont_entropy": 0.02,
                                                                             "disc_entropy": 0.1}), 1),
    "ppo_plain_composite": (lambda lib: composite(lib, cls="PPOLoss"), 1),
    "klpen_composite": (lambda lib: composite(lib, True, cls="KLPENPPOLoss"), 2),
    "sac_none_non_tensor": (lambda lib: _sac(lib, reduction="none", scalar_output_mode="non_tensor"), 1),
}


def _flat(td) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """``(tensor entries, non-tensor entries)`` of an output TensorDict, nested keys joined by dots."""
    tensors, others = {}, {}
    for key in td.keys(True):
        name = key if isinstance(key, str) else ".".join(key)
        value = td.get(key)
        if isinstance(value, torch.Tensor) and not type(value).__name__.startswith("NonTensor"):
            tensors[name] = value.detach().clone()
        elif type(value).__name__ == "NonTensorData":
            others[name] = torch.as_tensor(value.data).detach().clone()
    return tensors, others


def run(lib: SimpleNamespace, name: str, state_dict: dict | None = None, scenarios: dict | None = None,
        plain_loss: bool = False) -> dict:
    """Builds scenario ``name`` of ``scenarios`` (default :data:`SCENARIOS`; loading ``state_dict`` when
    given), runs its forward calls and the backward pass of every loss term (``loss_*``, and a plain
    ``loss`` entry with ``plain_loss``); returns what the golden file stores."""
    from tensordict.nn import set_composite_lp_aggregate

    build, calls = (SCENARIOS if scenarios is None else scenarios)[name]

    def fresh(sd: dict | None):
        loss, td = build(lib)
        if sd is not None:
            missing, unexpected = loss.load_state_dict(sd, strict=False)
            if unexpected or missing:
                raise AssertionError(f"{name}: state_dict mismatch, missing {missing}, unexpected {unexpected}")
        return loss, td

    with set_composite_lp_aggregate(False):
        loss, td = fresh(state_dict)
        sd = {k: v.detach().clone() for k, v in loss.state_dict().items()}
        outs, non_tensor, betas, td_error = [], [], [], None
        for i in range(calls):
            data = td.clone()
            torch.manual_seed(5 + i)
            tensors, others = _flat(loss(data))
            outs.append(tensors)
            non_tensor.append(others)
            if hasattr(loss, "beta"):
                betas.append(loss.beta.detach().clone())
            td_error = data.get("td_error", None)
        grads = {}
        for term in [k for k in outs[0] if k.startswith("loss_") or (plain_loss and k == "loss")]:
            loss, td = fresh(sd)
            torch.manual_seed(5)
            value = loss(td.clone())[term]
            if value.requires_grad:  # a fixed temperature's loss_alpha has no graph
                value.sum().backward()
            grads[term] = {n: torch.stack([p.grad.sum(), p.grad.abs().sum()])
                           for n, p in loss.named_parameters() if p.grad is not None}
    return {"sd": sd, "outs": outs, "non_tensor": non_tensor, "beta": betas, "td_error": td_error, "grads": grads}
