from __future__ import annotations

import pickle

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from tdrl.collectors import Collector
from tdrl.envs import GymEnv
from tdrl.weight_update import (
    MultiProcessedWeightUpdater,
    MultiProcessWeightSyncScheme,
    NoWeightSyncScheme,
    SharedMemWeightSyncScheme,
    VanillaWeightUpdater,
    WeightStrategy,
)


def _net():
    return torch.nn.Linear(3, 1)


def _zeros(net):
    return TensorDict.from_module(net).detach().clone().zero_()


@pytest.mark.parametrize("strategy", ["tensordict", "state_dict"])
def test_mp_scheme_round_trip(strategy):
    sender, receiver, dest = MultiProcessWeightSyncScheme(strategy), MultiProcessWeightSyncScheme(strategy), _net()
    inbox = []
    sender.init_on_sender("policy", model=_net(), senders=[inbox.append, inbox.append])
    receiver.init_on_receiver("policy", model=dest, worker_idx=0)
    sender.send(_zeros(_net()), worker_ids=1)
    assert len(inbox) == 1
    receiver.receive(inbox[0])
    assert float(dest.weight.detach().abs().sum()) == 0
    sender.send()  # the sender model's weights
    receiver.receive(inbox[1])
    assert torch.equal(dest.weight, sender.model.weight)
    assert pickle.loads(pickle.dumps(sender))._senders == []  # pipes never travel


def test_shared_scheme_writes_in_place_and_skips_same_storage():
    net = _net()
    scheme = SharedMemWeightSyncScheme()
    weights = TensorDict.from_module(net)
    scheme.init_on_sender("policy", worker_weights=[weights, weights])
    scheme.send(_zeros(net))
    assert float(net.bias.detach()) == 0
    scheme.send(TensorDict.from_module(net))  # the very same tensors: nothing to copy


def test_no_scheme_and_errors():
    NoWeightSyncScheme().send(_net())
    with pytest.raises(RuntimeError, match="init_on_sender"):
        MultiProcessWeightSyncScheme().send(_net())
    scheme = MultiProcessWeightSyncScheme()
    scheme.init_on_sender("policy", senders=[lambda p: None])
    with pytest.raises(ValueError, match="no weights given"):
        scheme.send()
    with pytest.raises(ValueError, match="strategy"):
        WeightStrategy("pickle")
    with pytest.raises(KeyError, match="missing"):
        WeightStrategy().apply_weights(_net(), {"weight": torch.zeros(1, 3)})
    with pytest.raises(TypeError, match="nn.Module, a TensorDict"):
        WeightStrategy().extract_weights(3)


def test_updaters():
    net, server = _net(), _net()
    hooks = []
    updater = VanillaWeightUpdater(weight_getter=lambda: TensorDict.from_module(server),
                                   policy_weights=TensorDict.from_module(net))
    updater.register_post_hook(lambda: hooks.append(1))
    updater.push_weights()
    assert torch.equal(net.weight, server.weight) and hooks == [1]
    nets = [_net(), _net()]
    multi = MultiProcessedWeightUpdater(get_server_weights=None,
                                        policy_weights={i: TensorDict.from_module(n) for i, n in enumerate(nets)})
    multi.push_weights(_zeros(net), worker_ids=0)
    assert float(nets[0].bias.detach()) == 0 and float(nets[1].bias.detach()) != 0
    multi.push_weights()  # no server weights: nothing to do
    with pytest.raises(KeyError, match="unknown worker id 5"):
        multi.push_weights(_zeros(net), worker_ids=5)


@pytest.mark.parametrize("how", ["scheme", "updater"])
def test_single_collector_weight_sync(how):
    policy = TensorDictModule(_net(), in_keys=["observation"], out_keys=["action"])
    kwargs = (
        {"weight_sync_schemes": {"policy": MultiProcessWeightSyncScheme()}} if how == "scheme"
        else {"weight_updater": VanillaWeightUpdater(policy_weights=TensorDict.from_module(policy))}
    )
    with Collector(GymEnv("Pendulum-v1"), policy, frames_per_batch=5, **kwargs) as c:
        assert not (c.next()["action"] == 0).all()
        c.update_policy_weights_(_zeros(policy))
        assert (c.next()["action"] == 0).all()
