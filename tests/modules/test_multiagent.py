"""Tests for MultiAgentMLP and the VDN / QMIX mixers."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.modules import MLP, MultiAgentMLP, QMixer, VDNMixer


def per_agent_reference(net: MultiAgentMLP, x: torch.Tensor) -> torch.Tensor:
    outs = []
    for i in range(net.n_agents):
        mlp = MLP(in_features=x.shape[-1] * (net.n_agents if net.centralized else 1),
                  out_features=net.n_agent_outputs, depth=1, num_cells=8)
        params = net.params if net.share_params else net.params[i]
        TensorDict.from_module(mlp).data.copy_(params.data)
        outs.append(mlp(x.flatten(-2) if net.centralized else x[..., i, :]))
    return torch.stack(outs, -2)


@pytest.mark.parametrize("centralized", [False, True])
@pytest.mark.parametrize("share_params", [False, True])
def test_multi_agent_mlp_matches_per_agent_mlps(centralized, share_params):
    net = MultiAgentMLP(4, 2, n_agents=3, centralized=centralized, share_params=share_params, depth=1, num_cells=8)
    x = torch.randn(5, 3, 4)
    out = net(x)
    assert out.shape == (5, 3, 2)
    torch.testing.assert_close(out, per_agent_reference(net, x))
    if not share_params:
        assert not torch.allclose(out[:, 0], out[:, 1])
    params = list(net.parameters())
    assert params and all(p.device.type == "cpu" for p in params)
    out.sum().backward()
    assert all(p.grad is not None for p in params)


def test_multi_agent_mlp_errors_and_reset():
    with pytest.raises(TypeError, match="centralized and share_params"):
        MultiAgentMLP(4, 2, n_agents=3, share_params=True)
    net = MultiAgentMLP(4, 2, n_agents=3, centralised=False, share_params=False, depth=1, num_cells=8)
    with pytest.raises(ValueError, match="n_agents=3"):
        net(torch.randn(5, 2, 4))
    before = net.params.clone()
    net.reset_parameters()
    assert not (before == net.params).all()


def test_mixers():
    values = torch.randn(6, 3, 1)
    torch.testing.assert_close(VDNMixer(n_agents=3, device="cpu")(values), values.sum(-2))
    mixer = QMixer(state_shape=(5,), mixing_embed_dim=8, n_agents=3, device="cpu")
    state = torch.randn(6, 5)
    q_tot = mixer(values, state)
    assert q_tot.shape == (6, 1)
    bumped = values.clone()
    bumped[:, 1] += 1.0
    assert (mixer(bumped, state) >= q_tot).all()  # monotonic in each agent's value
    with pytest.raises(ValueError, match="takes 2 input"):
        mixer(values)
    with pytest.raises(ValueError, match=r"\[\.\.\., 3, 1\]"):
        mixer(torch.randn(6, 2, 1), state)


@pytest.mark.parametrize("centralized,share_params", [(False, False), (True, True)])
def test_multi_agent_conv_net(centralized, share_params):
    from tdrl.modules import ConvNet, MultiAgentConvNet

    net = MultiAgentConvNet(2, centralized=centralized, share_params=share_params, in_features=3, num_cells=[4],
                            kernel_sizes=3, strides=1)
    x = torch.randn(5, 2, 3, 6, 6)
    out = net(x)
    assert out.shape == (5, 2, 4 * 4 * 4)
    ref = ConvNet(in_features=3 * (2 if centralized else 1), num_cells=[4], kernel_sizes=3, strides=1,
                  activation_class=torch.nn.ELU)
    TensorDict.from_module(ref).data.copy_((net.params if share_params else net.params[1]).data)
    expected = ref(x.flatten(1, 2)) if centralized else ref(x[:, 1])
    torch.testing.assert_close(out[:, 1], expected)
