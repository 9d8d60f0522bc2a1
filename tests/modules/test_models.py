"""Tests for tdrl.modules.models: MLP, ConvNet, dueling and DDPG nets, noisy layers."""

from __future__ import annotations

import pytest
import torch
from tensordict.nn import InteractionType, set_interaction_type
from torch import nn

from tdrl.modules import (
    MLP,
    ConvNet,
    DdpgCnnActor,
    DdpgCnnQNet,
    DdpgMlpActor,
    DdpgMlpQNet,
    DuelingCnnDQNet,
    DuelingMlpDQNet,
    NoisyLazyLinear,
    NoisyLinear,
    reset_noise,
)
from tests.modules._golden import GOLDEN, det, golden


class TestMLP:
    @pytest.mark.parametrize("in_features", [3, None])
    @pytest.mark.parametrize("num_cells,depth", [([8, 16], None), (8, 3), (None, None), (None, 2)])
    def test_shapes_and_depth(self, in_features, num_cells, depth):
        net = MLP(in_features=in_features, out_features=5, num_cells=num_cells, depth=depth)
        assert net(torch.zeros(2, 7, 3)).shape == (2, 7, 5)
        linears = [m for m in net if isinstance(m, (nn.Linear, nn.LazyLinear))]
        expected_depth = len(num_cells) if isinstance(num_cells, list) else (depth or 0)
        assert len(linears) == expected_depth + 1 == net.depth + 1
        if num_cells is None and depth:
            assert net.num_cells == [32] * depth

    def test_out_features_shape_reshapes(self):
        net = MLP(in_features=4, out_features=(2, 3), num_cells=[8])
        assert net(torch.zeros(5, 4)).shape == (5, 2, 3)

    def test_several_inputs_concatenated(self):
        net = MLP(in_features=5, out_features=1, num_cells=[8])
        assert net(torch.zeros(4, 3), torch.zeros(4, 2)).shape == (4, 1)

    def test_layout_matches_torchrl(self):
        net = MLP(in_features=3, out_features=2, num_cells=[5, 4])
        assert list(net.state_dict().keys()) == GOLDEN["mlp_keys"]
        with torch.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(det(*p.shape, scale=0.7, phase=float(i)))
        torch.testing.assert_close(net(det(2, 3)), golden("mlp_out"))

    def test_options(self):
        net = MLP(in_features=3, out_features=2, num_cells=[4, 4], activation_class=nn.ReLU, dropout=0.5,
                  norm_class=nn.LayerNorm, norm_kwargs=[{"normalized_shape": 4}, {"normalized_shape": 4}])
        kinds = [type(m).__name__ for m in net]
        assert kinds == ["Linear", "Dropout", "LayerNorm", "ReLU"] * 2 + ["Linear"]
        net = MLP(in_features=3, out_features=2, num_cells=[4], activate_last_layer=True,
                  activation_kwargs=[{}, {}], bias_last_layer=False)
        assert isinstance(net[-1], nn.Tanh) and net[2].bias is None

    def test_single_bias_last_layer(self):
        net = MLP(in_features=3, out_features=4, num_cells=[8], single_bias_last_layer=True)
        assert net[2].bias is None and net[3].bias.shape == (1,)
        assert net(torch.zeros(2, 3)).shape == (2, 4)

    def test_layer_class_noisy_and_lazy(self):
        net = MLP(out_features=3, num_cells=[4], layer_class=NoisyLinear)
        assert net(torch.zeros(2, 5)).shape == (2, 3)
        assert all(isinstance(m, NoisyLinear) for m in (net[0], net[2]))

    @pytest.mark.parametrize(
        "kwargs,match",
        [
            ({"in_features": 3}, "out_features"),
            ({"in_features": 3, "out_features": 2, "num_cells": 4}, "depth"),
            ({"in_features": 3, "out_features": 2, "num_cells": [4, 4], "depth": 3}, "conflicts"),
            ({"out_features": 2, "num_cells": [4], "layer_class": nn.Bilinear}, "lazy"),
            ({"in_features": 3, "out_features": 2, "num_cells": [4], "activation_kwargs": [{}, {}, {}]}, "entries"),
        ],
    )
    def test_bad_arguments(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            MLP(**kwargs)


class TestConvNet:
    def test_shapes_and_batch_dims(self):
        net = ConvNet(in_features=3, num_cells=[8, 16], kernel_sizes=[3, 3], strides=[2, 1])
        assert net(torch.zeros(4, 3, 16, 16)).shape == (4, 16 * 5 * 5)
        assert net(torch.zeros(2, 4, 3, 16, 16)).shape == (2, 4, 16 * 5 * 5)

    def test_lazy_and_pooling(self):
        net = ConvNet(num_cells=[4], kernel_sizes=3, aggregator_class=nn.AdaptiveAvgPool2d,
                      aggregator_kwargs={"output_size": (1, 1)}, squeeze_output=True)
        assert net(torch.zeros(2, 3, 8, 8)).shape == (2, 4)

    def test_bad_depth(self):
        with pytest.raises(ValueError, match="lengths"):
            ConvNet(num_cells=[8, 8], kernel_sizes=[3, 3, 3])
        with pytest.raises(ValueError, match="at least 1"):
            ConvNet(num_cells=[], kernel_sizes=[])


def test_dueling_nets():
    assert DuelingCnnDQNet(6)(torch.zeros(2, 4, 84, 84)).shape == (2, 6)
    net = DuelingMlpDQNet(3, mlp_kwargs_feature={"num_cells": [16], "out_features": 16})
    out = net(torch.zeros(5, 7))
    assert out.shape == (5, 3)
    feats = net.features(torch.zeros(5, 7))
    adv = net.advantage(feats)
    torch.testing.assert_close(out, net.value(feats) + adv - adv.mean(-1, keepdim=True))


def test_ddpg_nets():
    actor = DdpgMlpActor(action_dim=2)
    assert actor(torch.zeros(3, 5)).shape == (3, 2)
    assert actor.mlp[-1].weight.abs().max() <= 3e-3
    assert DdpgMlpQNet()(torch.zeros(3, 5), torch.zeros(3, 2)).shape == (3, 1)
    action, hidden = DdpgCnnActor(action_dim=2)(torch.zeros(1, 3, 64, 64))
    assert action.shape == (1, 2) and hidden.ndim == 2
    assert DdpgCnnQNet()(torch.zeros(1, 3, 64, 64), torch.zeros(1, 2)).shape == (1, 1)


class TestNoisyLinear:
    def test_noise_follows_exploration_type(self):
        layer = NoisyLinear(4, 3)
        x = torch.randn(2, 4)
        clean = x @ layer.weight_mu.T + layer.bias_mu
        torch.testing.assert_close(layer(x), clean)
        with set_interaction_type(InteractionType.RANDOM):
            noisy = layer(x)
        assert not torch.allclose(noisy, clean)
        with set_interaction_type(InteractionType.DETERMINISTIC):
            torch.testing.assert_close(layer(x), clean)

    def test_training_mode_option(self):
        layer = NoisyLinear(4, 3, use_exploration_type=False)
        x = torch.randn(2, 4)
        clean = x @ layer.weight_mu.T + layer.bias_mu
        assert not torch.allclose(layer(x), clean)
        layer.eval()
        torch.testing.assert_close(layer(x), clean)

    def test_reset_noise_and_factorisation(self):
        net = nn.Sequential(NoisyLinear(4, 3), nn.ReLU(), NoisyLinear(3, 2, bias=False))
        before = net[0].weight_epsilon.clone()
        net.apply(reset_noise)
        assert not torch.equal(before, net[0].weight_epsilon)
        eps = net[0].weight_epsilon
        assert torch.linalg.matrix_rank(eps) == 1
        ratio = eps / net[0].bias_epsilon[:, None]  # epsilon = outer(f(e_out), f(e_in)), bias = f(e_out)
        torch.testing.assert_close(ratio, ratio[:1].expand_as(ratio))
        assert net[2].bias is None

    def test_lazy(self):
        layer = NoisyLazyLinear(5)
        out = layer(torch.zeros(2, 3))
        assert out.shape == (2, 5) and type(layer) is NoisyLinear and layer.in_features == 3
        assert layer.weight_sigma.shape == (5, 3)


def test_batch_renorm():
    from tdrl.modules import BatchRenorm1d

    x = torch.randn(256, 3) * torch.tensor([1.0, 5.0, 0.1]) + torch.tensor([0.0, 3.0, -2.0])
    norm = BatchRenorm1d(3, warmup_steps=2, momentum=0.5)
    out = norm(x)  # warm-up: plain batch norm
    torch.testing.assert_close(out.mean(0), torch.zeros(3), atol=1e-5, rtol=0)
    for _ in range(20):
        norm(x)
    torch.testing.assert_close(norm.running_mean, x.mean(0), atol=1e-3, rtol=1e-3)
    train_out = norm(x)
    norm.eval()
    torch.testing.assert_close(norm(x), train_out, atol=1e-2, rtol=1e-2)  # renorm: train ~ eval once converged
    with pytest.raises(ValueError, match=r"\[N, 3"):
        norm(torch.randn(4, 2))


def test_conv3d_net():
    from tdrl.modules import Conv3dNet

    net = Conv3dNet(in_features=2, num_cells=[4, 8], kernel_sizes=3)
    assert net(torch.zeros(3, 5, 2, 7, 7, 7)).shape == (3, 5, 8 * 3 * 3 * 3)
    assert isinstance(net[0], nn.Conv3d) and len(Conv3dNet(depth=2).num_cells) == 2
    pooled = Conv3dNet(num_cells=[4], aggregator_class=nn.AdaptiveAvgPool3d, aggregator_kwargs={"output_size": 1},
                       squeeze_output=True)
    assert pooled(torch.zeros(2, 1, 5, 5, 5)).shape == (2, 4)
    with pytest.raises(ValueError, match="spatial dims"):
        net(torch.zeros(2, 7, 7))
