"""Hot-path shortcuts that run part of a network (``objectives/_repeat.py``, DQN's greedy head): the
shortcut and the plain path give the same losses and gradients, eager and compiled."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from tensordict.nn import ProbabilisticTensorDictModule as ProbMod
from tensordict.nn import ProbabilisticTensorDictSequential as ProbSeq
from torch import nn

from tdrl.data import Unbounded
from tdrl.modules import QValueActor, TanhNormal
from tdrl.objectives import CQLLoss, DQNLoss
from tdrl.objectives._repeat import dist_split, gather_rows, split_before_key

B, OBS, ACT = 6, 3, 2


def _trunk() -> TensorDictModule:
    return TensorDictModule(nn.Sequential(nn.Linear(OBS, 8), nn.Tanh()), ["obs"], ["hidden"])


def _cql() -> CQLLoss:
    torch.manual_seed(0)
    trunk = _trunk()
    actor = ProbSeq(
        trunk,
        TensorDictModule(nn.Linear(8, 2 * ACT), ["hidden"], ["param"]),
        TensorDictModule(NormalParamExtractor(), ["param"], ["loc", "scale"]),
        ProbMod(in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal),
    )
    head = TensorDictModule(lambda h, a: torch.cat([h, a], -1), ["hidden", "action"], ["ha"])
    q = TensorDictSequential(trunk, head, TensorDictModule(nn.Linear(8 + ACT, 1), ["ha"], ["state_action_value"]))
    return CQLLoss(actor, q, action_spec=Unbounded(shape=(ACT,)), num_random=3)


def _offpolicy(action: torch.Tensor) -> TensorDict:
    torch.manual_seed(1)
    return TensorDict(
        {
            "obs": torch.randn(B, OBS),
            "action": action,
            "next": {"obs": torch.randn(B, OBS), "reward": torch.randn(B, 1), "done": torch.zeros(B, 1, dtype=torch.bool)},
        },
        [B],
    )


def _losses_and_grads(loss, td: TensorDict, fn=None):
    loss.zero_grad()
    torch.manual_seed(2)
    out = (loss if fn is None else fn)(td.clone())
    sum(v for k, v in out.items() if k.startswith("loss")).backward()
    grads = {n: p.grad.clone() for n, p in loss.named_parameters() if p.grad is not None}
    return out.detach(), grads


def _assert_same(a, b) -> None:
    (out_a, grads_a), (out_b, grads_b) = a, b
    for key in out_a.keys():
        torch.testing.assert_close(out_a[key], out_b[key], msg=key, rtol=1e-5, atol=1e-6)
    assert grads_a.keys() == grads_b.keys() and grads_a, set(grads_a) ^ set(grads_b)
    for key in grads_a:
        torch.testing.assert_close(grads_a[key], grads_b[key], msg=key, rtol=1e-5, atol=1e-6)


def test_split_helpers() -> None:
    loss = _cql()
    prefix, suffix = split_before_key(loss.qvalue_network, "action")
    assert prefix.out_keys == ["hidden"] and "action" in suffix.in_keys
    det, prob = dist_split(loss.actor_network)
    assert "loc" in det.out_keys and prob.in_keys == ["loc", "scale"]
    # No split: a single module, or a first module that reads the action already.
    assert split_before_key(TensorDictSequential(TensorDictModule(nn.Linear(5, 1), ["obs"], ["q"])), "action") is None
    reads_action = TensorDictSequential(
        TensorDictModule(nn.Linear(5, 4), ["action"], ["h"]), TensorDictModule(nn.Linear(4, 1), ["h"], ["q"])
    )
    assert split_before_key(reads_action, "action") is None
    assert dist_split(_trunk()) is None
    rows = gather_rows(TensorDict(x=torch.arange(3.0), batch_size=[3]), ["x"], torch.tensor([2, 0, 0]))
    assert rows["x"].tolist() == [2.0, 0.0, 0.0] and rows.batch_size == torch.Size([3])


def test_cql_repeated_rows_match_plain_path() -> None:
    loss = _cql()
    assert loss._actor_split is not None and loss._splits["qvalue_network"] is not None
    td = _offpolicy(torch.rand(B, ACT) * 2 - 1)
    fast = _losses_and_grads(loss, td)
    loss.__dict__["_actor_split"] = None
    loss._splits["qvalue_network"] = None
    _assert_same(fast, _losses_and_grads(loss, td))


@pytest.mark.slow
def test_cql_repeated_rows_compiled_match_eager() -> None:
    torch._inductor.config.fallback_random = True
    td = _offpolicy(torch.rand(B, ACT) * 2 - 1)
    loss = _cql()  # fresh losses with the same seed, not deep copies (see the lossperf report)
    _assert_same(_losses_and_grads(_cql(), td), _losses_and_grads(loss, td, torch.compile(loss, fullgraph=True)))


@pytest.mark.parametrize("action_space", ["one-hot", "categorical"])
def test_dqn_greedy_head_matches_full_network(action_space: str) -> None:
    torch.manual_seed(0)
    net = QValueActor(nn.Linear(OBS, 4), in_keys=["obs"], action_space=action_space)
    loss = DQNLoss(net, action_space=action_space)
    assert loss._greedy_head is not None
    action = torch.randint(4, (B,))
    td = _offpolicy(nn.functional.one_hot(action, 4) if action_space == "one-hot" else action)
    with torch.no_grad():
        loss.target_value_network_params.apply(lambda p: p.add_(0.1))  # target differs from online
    fast_td, plain_td = td.clone(), td.clone()
    fast = _losses_and_grads(loss, td)
    loss(fast_td)
    loss.__dict__["_greedy_head"] = None
    _assert_same(fast, _losses_and_grads(loss, td))
    loss(plain_td)
    torch.testing.assert_close(fast_td["td_error"], plain_td["td_error"])
