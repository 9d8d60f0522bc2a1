"""Golden values from TorchRL 0.14.1: same networks, weights, data and seeds must give the same loss
values, per-term gradients and TD errors.

``golden_torchrl_0_14_1.pt`` was produced once with the TorchRL anchor venv by building these exact
networks and losses there (state_dict, outputs, per-term gradient sums and the written ``td_error``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    set_composite_lp_aggregate,
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

import tdrl.objectives as O
from tdrl.data import Bounded, Unbounded
from tdrl.modules import OneHotCategorical, QValueActor, TanhNormal
from tdrl.objectives.deprecated import REDQLoss_deprecated

from ._golden_scenarios import mlp as _mlp

GOLDEN = torch.load(Path(__file__).with_name("golden_torchrl_0_14_1.pt"), weights_only=True)


class _Cat(nn.Module):
    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.net = _mlp(i, o, 1)

    def forward(self, *x: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat(x, -1))


def _nets():
    torch.manual_seed(0)
    common = Mod(_mlp(3, 8, 1), ["obs"], ["hidden"])
    actor = ProbSeq(
        common,
        Mod(_mlp(8, 4, 1), ["hidden"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal,
                distribution_kwargs={"safe_tanh": False}, return_log_prob=True),
    )
    q = Seq(common, Mod(_Cat(10, 1), ["hidden", "action"], ["state_action_value"]))
    v = Seq(common, Mod(_mlp(8, 1, 1), ["hidden"], ["state_value"]))
    det = Seq(common, Mod(nn.Sequential(nn.Linear(8, 2), nn.Tanh()), ["hidden"], ["action"]))
    return actor, q, v, det


def _off_td(discrete: bool = False) -> TensorDict:
    g = torch.Generator().manual_seed(1)
    b = 6
    act = (nn.functional.one_hot(torch.randint(2, (b,), generator=g), 2) if discrete
           else torch.rand(b, 2, generator=g) * 1.8 - 0.9)
    done = torch.tensor([[False]] * 5 + [[True]])
    return TensorDict({
        "obs": torch.randn(b, 3, generator=g), "action": act, "done": torch.zeros(b, 1, dtype=torch.bool),
        "next": {"obs": torch.randn(b, 3, generator=g), "reward": torch.randn(b, 1, generator=g), "done": done,
                 "terminated": done}}, [b])


def _on_td() -> TensorDict:
    g = torch.Generator().manual_seed(2)
    b, t = 4, 3
    return TensorDict({
        "obs": torch.randn(b, t, 3, generator=g), "action": torch.rand(b, t, 2, generator=g) * 1.8 - 0.9,
        "action_log_prob": torch.randn(b, t, generator=g), "advantage": torch.randn(b, t, 1, generator=g),
        "value_target": torch.randn(b, t, 1, generator=g), "state_value": torch.randn(b, t, 1, generator=g),
        "done": torch.zeros(b, t, 1, dtype=torch.bool),
        "next": {"obs": torch.randn(b, t, 3, generator=g), "reward": torch.randn(b, t, 1, generator=g),
                 "done": torch.zeros(b, t, 1, dtype=torch.bool)}}, [b, t])


def _discrete(name: str):
    torch.manual_seed(0)
    actor = ProbSeq(Mod(_mlp(3, 2, 1), ["obs"], ["logits"]),
                    ProbMod(in_keys=["logits"], out_keys=["action"], distribution_class=OneHotCategorical))
    if name == "discrete_sac":
        qnet = Mod(_mlp(3, 2, 1), ["obs"], ["action_value"])
        return O.DiscreteSACLoss(actor, qnet, action_space="one-hot", num_actions=2), _off_td(True)
    qnet = Mod(_mlp(3, 2, 1), ["obs"], ["state_action_value"])
    vnet = Mod(_mlp(3, 1, 1), ["obs"], ["state_value"])
    return O.DiscreteIQLLoss(actor, qnet, vnet, action_space="one-hot"), _off_td(True)


def _build(name: str):
    actor, q, v, det = _nets()
    if name in ("discrete_sac", "discrete_iql"):
        return _discrete(name)
    if name == "discrete_cql":
        torch.manual_seed(0)
        net = QValueActor(_mlp(3, 2, 1), in_keys=["obs"], action_space="one-hot")
        return O.DiscreteCQLLoss(net, action_space="one-hot"), _off_td(True)
    if name in ("dqn", "dqn_double"):
        torch.manual_seed(0)
        net = QValueActor(_mlp(3, 2, 1), in_keys=["obs"], action_space="one-hot")
        return O.DQNLoss(net, action_space="one-hot", double_dqn=name == "dqn_double"), _off_td(True)
    builders = {
        "ppo": lambda: (O.ClipPPOLoss(actor, v), _on_td()),
        "ppo_clipvalue": lambda: (O.ClipPPOLoss(actor, v, clip_value=0.1, normalize_advantage=True), _on_td()),
        "a2c": lambda: (O.A2CLoss(actor, v), _on_td()),
        "reinforce": lambda: (O.ReinforceLoss(actor, v), _on_td()),
        "sac": lambda: (O.SACLoss(actor, q, action_spec=Unbounded((2,))), _off_td()),
        "sac_v1": lambda: (O.SACLoss(actor, q, v, action_spec=Unbounded((2,))), _off_td()),
        "ddpg": lambda: (O.DDPGLoss(det, q), _off_td()),
        "td3": lambda: (O.TD3Loss(det, q, action_spec=Bounded(low=-1, high=1, shape=(2,))), _off_td()),
        "td3_bc": lambda: (O.TD3BCLoss(det, q, action_spec=Bounded(low=-1, high=1, shape=(2,))), _off_td()),
        "iql": lambda: (O.IQLLoss(actor, q, v), _off_td()),
        "cql": lambda: (O.CQLLoss(actor, q, action_spec=Unbounded((2,))), _off_td()),
        "cql_lagrange": lambda: (
            O.CQLLoss(actor, q, action_spec=Unbounded((2,)), with_lagrange=True, max_q_backup=True,
                      deterministic_backup=False, num_random=3),
            _off_td(),
        ),
        "redq_deprec": lambda: (
            REDQLoss_deprecated(actor, q, action_spec=Unbounded((2,)), num_qvalue_nets=4), _off_td()
        ),
        "redq": lambda: (O.REDQLoss(actor, q, action_spec=Unbounded((2,)), num_qvalue_nets=4), _off_td()),
    }
    return builders[name]()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_matches_torchrl(name: str) -> None:
    ref = GOLDEN[name]
    with set_composite_lp_aggregate(False):
        loss, td = _build(name)
        missing, unexpected = loss.load_state_dict(ref["sd"], strict=False)
        # TorchRL's REDQ creates its target-entropy buffer lazily (after the first forward).
        assert not unexpected and set(missing) <= {"target_entropy_buffer"}, (missing, unexpected)
        torch.manual_seed(5)
        out = loss(td)
        assert set(out.keys()) == set(ref["out"].keys())
        for key, value in ref["out"].items():
            torch.testing.assert_close(out[key].detach(), value, rtol=1e-4, atol=1e-5, msg=key)
        if ref["td_error"] is not None:
            torch.testing.assert_close(td["td_error"], ref["td_error"], rtol=1e-4, atol=1e-5)
        for term, grads in ref["grads"].items():
            loss.zero_grad(set_to_none=True)
            torch.manual_seed(5)
            loss(td.clone())[term].backward()
            mine = {n: torch.stack([p.grad.sum(), p.grad.abs().sum()])
                    for n, p in loss.named_parameters() if p.grad is not None}
            assert set(mine) <= set(grads), term
            for pname, g in grads.items():
                if pname not in mine:
                    # TorchRL gives an all-zero gradient where tdrl's graph does not reach (.grad None).
                    assert float(g[1]) == 0.0, f"{term}/{pname}: TorchRL has a non-zero gradient, tdrl none"
                    continue
                torch.testing.assert_close(mine[pname], g, rtol=1e-4, atol=1e-5, msg=f"{term}/{pname}")
