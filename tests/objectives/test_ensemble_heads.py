"""The Q network's state-only prefix runs once for several action sets (DDPG and IQL: a value head reads the
trunk output the actor computed): same values and gradients as the separate full calls, compiled == eager,
and no sharing where the prefix is not pure."""

from __future__ import annotations

import copy

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor
from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq
from torch import nn

from tdrl.data import Bounded, Unbounded
from tdrl.modules import MLP, TanhNormal
from tdrl.objectives import DDPGLoss, IQLLoss, REDQLoss, SACLoss, TD3BCLoss, TD3Loss
from tdrl.objectives.deprecated import REDQLoss_deprecated

OBS, ACT, HID, B = 5, 2, 6, 7


def _trunk() -> Mod:
    return Mod(MLP(in_features=OBS, out_features=HID, depth=1, num_cells=8), ["obs"], ["hidden"])


def _q(trunk: Mod) -> Seq:
    head = Mod(MLP(in_features=HID + ACT, out_features=1, depth=1, num_cells=8), ["hidden", "action"], ["state_action_value"])
    return Seq(trunk, head)


def _actor(trunk: Mod, **kwargs) -> ProbSeq:
    return ProbSeq(
        trunk,
        Mod(MLP(in_features=HID, out_features=2 * ACT, depth=1, num_cells=8), ["hidden"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal, **kwargs),
    )


def _det_actor(trunk: Mod) -> Seq:
    return Seq(trunk, Mod(nn.Sequential(nn.Linear(HID, ACT), nn.Tanh()), ["hidden"], ["action"]))


def _data() -> TensorDict:
    g = torch.Generator().manual_seed(1)
    return TensorDict(
        {
            "obs": torch.randn(B, OBS, generator=g),
            "action": torch.rand(B, ACT, generator=g) * 1.8 - 0.9,
            "next": {
                "obs": torch.randn(B, OBS, generator=g),
                "reward": torch.randn(B, 1, generator=g),
                "done": torch.zeros(B, 1, dtype=torch.bool),
                "terminated": torch.zeros(B, 1, dtype=torch.bool),
            },
        },
        [B],
    )


def _sac():
    t = _trunk()
    return SACLoss(_actor(t), _q(t), action_spec=Unbounded((ACT,))), "qvalue_network"


def _td3():
    t = _trunk()
    return TD3Loss(_det_actor(t), _q(t), bounds=(-1.0, 1.0)), "qvalue_network"


def _td3_bc():
    t = _trunk()
    return TD3BCLoss(_det_actor(t), _q(t), action_spec=Bounded(-1.0, 1.0, (ACT,))), "qvalue_network"


def _redq():
    t = _trunk()
    return REDQLoss(_actor(t), _q(t), action_spec=Unbounded((ACT,)), num_qvalue_nets=4), "qvalue_network"


def _redq_deprecated():
    t = _trunk()
    actor = _actor(t, return_log_prob=True)
    return REDQLoss_deprecated(actor, _q(t), action_spec=Unbounded((ACT,)), num_qvalue_nets=4), "qvalue_network"


def _ddpg():
    t = _trunk()
    return DDPGLoss(_det_actor(t), _q(t)), "value_network"


def _iql():
    t = _trunk()
    value = Seq(t, Mod(nn.Linear(HID, 1), ["hidden"], ["state_value"]))
    return IQLLoss(_actor(t), _q(_trunk()), value), "value_network"


BUILDERS = {
    "iql": _iql,
    "sac": _sac,
    "td3": _td3,
    "td3_bc": _td3_bc,
    "redq": _redq,
    "redq_deprecated": _redq_deprecated,
    "ddpg": _ddpg,
}


def _sharing(loss, name) -> bool:
    if isinstance(loss, IQLLoss):
        return loss._v_split is not None
    if isinstance(loss, DDPGLoss):
        return loss._shared_trunk
    return loss._splits[name] is not None


def _without_sharing(loss, name):
    plain = copy.deepcopy(loss)
    if isinstance(plain, IQLLoss):
        plain.__dict__["_v_split"] = None
        return plain
    plain._splits[name] = None
    if isinstance(plain, DDPGLoss):
        plain.__dict__["_shared_trunk"] = False
    return plain


def _run(loss, term=None):
    torch.manual_seed(3)
    td = _data()
    out = loss(td)
    if term is None:
        return out, td
    loss.zero_grad(set_to_none=True)
    out[term].backward()
    return {n: p.grad.clone() for n, p in loss.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("which", sorted(BUILDERS))
def test_shared_prefix_gives_the_values_and_gradients_of_separate_calls(which: str) -> None:
    torch.manual_seed(0)
    loss, name = BUILDERS[which]()
    assert _sharing(loss, name)
    plain = _without_sharing(loss, name)
    assert not _sharing(plain, name)
    shared_out, shared_td = _run(loss)
    plain_out, plain_td = _run(plain)
    assert set(shared_out.keys()) == set(plain_out.keys())
    for key in plain_out.keys():
        torch.testing.assert_close(shared_out[key], plain_out[key], msg=key)
    torch.testing.assert_close(shared_td["td_error"], plain_td["td_error"])
    for term in [k for k in plain_out.keys() if k.startswith("loss")]:
        mine, ref = _run(loss, term), _run(plain, term)
        # The shared path may leave a .grad None where the single stacked call gave zeros (REDQ).
        assert set(mine) <= set(ref), term
        for pname, g in ref.items():
            expected = mine.get(pname, torch.zeros_like(g))
            torch.testing.assert_close(expected, g, msg=f"{term}/{pname}")


def test_actor_loss_does_not_train_the_critic() -> None:
    torch.manual_seed(0)
    for which in ("sac", "td3", "redq", "ddpg"):
        loss, name = BUILDERS[which]()
        grads = _run(loss, "loss_actor")
        critic_only = {n for n in grads if n.startswith(name)} - {
            n for n in grads if n.startswith("actor_network")
        }
        # DDPG's critic shares the trunk with the actor (the same tensors): only the head must stay untouched.
        assert all(grads[n].abs().sum() == 0 for n in critic_only), which


@pytest.mark.parametrize("which", ["sac", "redq", "ddpg", "iql"])
def test_compiled_shared_prefix_matches_eager(which: str) -> None:
    torch._inductor.config.fallback_random = True
    torch._dynamo.reset()  # earlier tests' compiles count towards the shared code objects' recompile limit
    torch.manual_seed(0)
    loss, _ = BUILDERS[which]()
    twin = copy.deepcopy(loss)
    eager_out, _ = _run(loss)
    compiled = torch.compile(twin, fullgraph=True)
    torch.manual_seed(3)
    out = compiled(_data())
    for key in eager_out.keys():
        torch.testing.assert_close(out[key], eager_out[key], msg=key, rtol=1e-4, atol=1e-5)


def test_no_sharing_through_dropout_or_batch_norm() -> None:
    for layer in (nn.Dropout(0.5), nn.BatchNorm1d(OBS)):
        trunk = Seq(Mod(layer, ["obs"], ["obs_n"]), Mod(nn.Linear(OBS, HID), ["obs_n"], ["hidden"]))
        loss = SACLoss(_actor(_trunk()), _q(trunk), action_spec=Unbounded((ACT,)))
        assert loss._splits["qvalue_network"] is None
        loss(_data())


def test_split_follows_renamed_action_key() -> None:
    t = _trunk()
    head = Mod(nn.Linear(HID + ACT, 1), ["hidden", "act"], ["state_action_value"])
    actor = ProbSeq(
        t,
        Mod(nn.Linear(HID, 2 * ACT), ["hidden"], ["param"]),
        Mod(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["act"], distribution_class=TanhNormal),
    )
    loss = SACLoss(actor, Seq(t, head), action_spec=Unbounded((ACT,)))
    assert loss._splits["qvalue_network"] is None  # no module reads "action"
    loss.set_keys(action="act")
    prefix, suffix = loss._splits["qvalue_network"]
    assert "act" in suffix.in_keys and "act" not in prefix.in_keys


def test_on_policy_losses_share_a_trunk_only_without_dropout() -> None:
    from tdrl.objectives import ClipPPOLoss

    for layer, shared in ((nn.Identity(), True), (nn.Dropout(0.5), False)):
        trunk = Seq(Mod(layer, ["obs"], ["obs_n"]), Mod(nn.Linear(OBS, HID), ["obs_n"], ["hidden"]))
        value = Seq(trunk, Mod(nn.Linear(HID, 1), ["hidden"], ["state_value"]))
        loss = ClipPPOLoss(_actor(trunk), value)
        assert (loss._prefix is not None) is shared


def test_cql_split_follows_renamed_action_key() -> None:
    from tdrl.objectives import CQLLoss

    t = _trunk()
    head = Mod(nn.Linear(HID + ACT, 1), ["hidden", "act"], ["state_action_value"])
    loss = CQLLoss(_actor(t), Seq(t, head), action_spec=Unbounded((ACT,)))
    assert loss._splits["qvalue_network"] is None
    loss.set_keys(action="act")
    assert loss._splits["qvalue_network"] is not None
