"""``copy.deepcopy(loss)`` gives an independent loss that trains its own parameters."""

import copy

import pytest
import torch

from ._cases import CASES, losses_of, renamed


def _grads(loss, td):
    loss.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    out = losses_of(loss(td.clone()))
    sum(v for k, v in out.items() if k.startswith("loss") and v.requires_grad).backward()
    return {n: p.grad for n, p in loss.named_parameters()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_deepcopy_trains_its_own_parameters(case):
    loss, td = case.make(), case.data()
    if not list(loss.parameters()):  # ExponentialQuadraticCost: differentiated in its inputs, nothing to train
        pytest.skip(f"{case.name} has no parameters")
    if case.rename:
        td = renamed(td, case.rename)
        loss.set_keys(**case.rename)
    twin = copy.deepcopy(loss)
    own = {id(p) for p in loss.parameters()}
    assert not own & {id(p) for p in twin.parameters()}, "the copy shares parameters with the original"
    ref, got = _grads(loss, td), _grads(twin, td)
    assert ref.keys() == got.keys()
    for name, grad in ref.items():
        if grad is None:
            assert got[name] is None, name
        else:
            assert got[name] is not None, f"{name}: no gradient in the copy"
            torch.testing.assert_close(got[name], grad, msg=name)


def _shared_trunk_losses():
    from tensordict.nn import TensorDictModule as Mod
    from tensordict.nn import TensorDictSequential as Seq

    from tdrl.data import Unbounded
    from tdrl.objectives import ClipPPOLoss, DDPGLoss, SACLoss

    from ._cases import ACT, OBS, _Cat, actor

    def trunk():
        return Mod(torch.nn.Linear(OBS, OBS), ["observation"], ["observation"])

    t = trunk()
    ddpg = DDPGLoss(Seq(t, Mod(torch.nn.Linear(OBS, ACT), ["observation"], ["action"])),
                    Seq(t, Mod(_Cat(OBS + ACT, 1), ["observation", "action"], ["state_action_value"])))
    t = trunk()
    ppo_actor = actor()
    ppo_actor.module.insert(0, t)
    ppo = ClipPPOLoss(ppo_actor, Seq(t, Mod(torch.nn.Linear(OBS, 1), ["observation"], ["state_value"])))
    t = trunk()
    sac_actor = actor()
    sac_actor.module.insert(0, t)
    sac = SACLoss(sac_actor, Seq(t, Mod(_Cat(OBS + ACT, 1), ["observation", "action"], ["state_action_value"])),
                  action_spec=Unbounded((ACT,)), separate_losses=True)
    return {"ddpg": ddpg, "ppo": ppo, "sac_separate_losses": sac}


@pytest.mark.parametrize("which", ["ddpg", "ppo", "sac_separate_losses"])
def test_deepcopy_keeps_a_shared_trunk_shared(which):
    """A trunk used by actor and critic stays one set of tensors in the copy (not two, one of them dead), and
    an ensemble's expansion of the actor's trunk keeps following it."""
    loss = _shared_trunk_losses()[which]
    twin = copy.deepcopy(loss)
    assert len(list(twin.parameters())) == len(list(loss.parameters()))
    assert [n for n, _ in twin.named_parameters()] == [n for n, _ in loss.named_parameters()]
    trunk = twin.actor_network.module[0].module
    critic = getattr(twin, "value_network", None) or getattr(twin, "critic_network", None) or twin.qvalue_network
    assert critic.module[0].module is trunk
    with torch.no_grad():
        trunk.weight.add_(1.0)
    if which == "sac_separate_losses":
        expanded = twin.qvalue_network_params.get(("module", "0", "module", "weight"))
        torch.testing.assert_close(expanded[0], trunk.weight)
    else:
        assert twin.actor_network_params.get(("module", "0", "module", "weight")) is trunk.weight
