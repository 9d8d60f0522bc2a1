"""What TorchRL's ``multiagent_ppo`` tutorial does with the losses, on synthetic multi-agent data: a
``ClipPPOLoss`` built on a critic writing ``("agents", "state_value")`` and keyed afterwards with ``set_keys``,
GAE called with ``params=`` / ``target_params=`` on done flags expanded to the agents, and the same batch through
``MAPPOLoss`` with ``MultiAgentGAE`` on the team-shared flags."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule

from tdrl.data import Bounded, Composite
from tdrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal, ValueOperator
from tdrl.objectives import ClipPPOLoss, MAPPOLoss, SACLoss, ValueEstimators

N, OBS, ACT, B, T = 3, 4, 2, 5, 6


def _nets():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        MultiAgentMLP(OBS, 2 * ACT, N, centralised=False, share_params=True, depth=1, num_cells=16),
        NormalParamExtractor(),
    )
    actor = ProbabilisticActor(
        TensorDictModule(net, [("agents", "observation")], [("agents", "loc"), ("agents", "scale")]),
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -torch.ones(N, ACT), "high": torch.ones(N, ACT)},
        return_log_prob=True,
    )
    critic = TensorDictModule(
        MultiAgentMLP(OBS, 1, N, centralised=True, share_params=True, depth=1, num_cells=16),
        [("agents", "observation")],
        [("agents", "state_value")],
    )
    return actor, critic


def _batch(actor) -> TensorDict:
    g = torch.Generator().manual_seed(1)
    done = torch.zeros(B, T, 1, dtype=torch.bool)
    done[:, -1] = True
    td = TensorDict(
        {
            "agents": {"observation": torch.randn(B, T, N, OBS, generator=g)},
            "next": {
                "agents": {
                    "observation": torch.randn(B, T, N, OBS, generator=g),
                    "reward": torch.randn(B, T, N, 1, generator=g),
                },
                "done": done,
                "terminated": done.clone(),
            },
        },
        [B, T],
    )
    with torch.no_grad():
        actor(td)
    return td


def test_clip_ppo_keyed_after_construction_with_expanded_done() -> None:
    actor, critic = _nets()
    loss = ClipPPOLoss(
        actor_network=actor,
        critic_network=critic,
        clip_epsilon=0.2,
        entropy_coeff=1e-4,
        normalize_advantage=False,
    )
    loss.set_keys(
        reward=("agents", "reward"),
        action=("agents", "action"),
        value=("agents", "state_value"),
        done=("agents", "done"),
        terminated=("agents", "terminated"),
    )
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.9)
    td = _batch(actor)
    shape = td.get_item_shape(("next", "agents", "reward"))
    td.set(("next", "agents", "done"), td.get(("next", "done")).unsqueeze(-1).expand(shape))
    td.set(("next", "agents", "terminated"), td.get(("next", "terminated")).unsqueeze(-1).expand(shape))
    with torch.no_grad():
        loss.value_estimator(
            td, params=loss.critic_network_params, target_params=loss.target_critic_network_params
        )
    assert td["advantage"].shape == (B, T, N, 1)
    out = loss(td.reshape(-1))
    (out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]).backward()
    assert all(p.grad is not None for p in loss.actor_network_params.values(True, True))
    # MultiAgentGAE on the team-shared flags gives the same advantage as GAE on the flags expanded by hand.
    mappo = MAPPOLoss(actor, critic, normalize_advantage=False)
    mappo.set_keys(reward=("agents", "reward"), action=("agents", "action"), value=("agents", "state_value"))
    mappo.make_value_estimator(ValueEstimators.MAGAE, gamma=0.99, lmbda=0.9)
    shared = _batch(actor)
    with torch.no_grad():
        mappo.value_estimator(shared)
    torch.testing.assert_close(shared["advantage"], td["advantage"])


def test_wrong_value_key_still_fails_on_first_use() -> None:
    actor, critic = _nets()
    loss = ClipPPOLoss(actor, critic)  # keys not set yet: the estimator is built when first needed
    with pytest.raises(KeyError, match="state_value"):
        loss.value_estimator  # noqa: B018


def test_sac_auto_target_entropy_follows_a_nested_action_key() -> None:
    """TorchRL's multiagent ``sac.py``: ``SACLoss(action_spec=<full action spec>)`` built before
    ``set_keys(action=("agents", "action"))``; the "auto" target entropy is ``-dim(action)`` of one agent
    (-2.0, TorchRL 0.14.1's value), not an error at construction."""
    actor, _ = _nets()
    spec = Composite(agents=Composite(action=Bounded(-1.0, 1.0, (N, ACT)), shape=(N,)))
    qvalue = ValueOperator(
        torch.nn.Linear(OBS + ACT, 1),
        in_keys=[("agents", "observation"), ("agents", "action")],
        out_keys=[("agents", "state_action_value")],
    )
    loss = SACLoss(actor, qvalue, action_spec=spec)
    with pytest.raises(KeyError, match="'action' is not in the action spec"):
        _ = loss.target_entropy
    loss.set_keys(action=("agents", "action"), state_action_value=("agents", "state_action_value"))
    assert float(loss.target_entropy) == -2.0
    assert float(loss.state_dict()["_target_entropy"]) == -2.0
