"""Multi-agent networks (per-agent or shared parameters: ``MultiAgentMLP``, ``MultiAgentConvNet``) and mixers."""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.modules.models.conv import ConvNet
from tdrl.modules.models.mlp import MLP

__all__ = ["MultiAgentNetBase", "MultiAgentMLP", "MultiAgentConvNet", "Mixer", "VDNMixer", "QMixer"]


class MultiAgentNetBase(nn.Module, abc.ABC):
    """Per-agent (``share_params=False``, evaluated with ``vmap``) or shared copies of one network.

    Subclasses set ``_agent_dim`` (the negative input dimension indexing agents) and build one agent's network in
    :meth:`_build_single_net`. A centralised network sees all agents' inputs (the agent dimension merged into the
    next one) and, with shared parameters, gives every agent the same output.
    """

    _agent_dim: int

    def _setup(self, *, n_agents: int, centralized: bool | None, share_params: bool | None, device: Any,
               use_td_params: bool) -> None:
        if centralized is None or share_params is None:
            raise TypeError(f"{type(self).__name__}: centralized and share_params must be given.")
        self.n_agents, self.centralized, self.share_params = n_agents, centralized, share_params
        self.use_td_params = use_td_params
        nets = [self._build_single_net(device=device) for _ in range(1 if share_params else n_agents)]
        if any(isinstance(p, nn.UninitializedParameter) for p in nets[0].parameters()):
            raise ValueError(f"{type(self).__name__}: input sizes must be given (per-agent lazy layers cannot be "
                             "stacked).")
        self.params = (TensorDict.from_module(nets[0], as_module=True) if share_params
                       else TensorDict.from_modules(*nets, as_module=True))
        # A parameter-free template run with `params` swapped in; kept out of the module registry.
        object.__setattr__(self, "_template", self._build_single_net(device="meta"))

    @abc.abstractmethod
    def _build_single_net(self, *, device: Any) -> nn.Module:
        """Builds one agent's network."""

    def _call(self, params: TensorDictBase, x: torch.Tensor) -> torch.Tensor:
        # functional_call rather than params.to_module(template): when a loss has swapped target parameters into
        # this module, Dynamo cannot guard a second, nested to_module swap (fullgraph compilation fails).
        flat = dict(params.flatten_keys(".").items())
        return torch.func.functional_call(self._template, flat, (x,))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, -1)
        if x.ndim < -self._agent_dim or x.shape[self._agent_dim] != self.n_agents:
            raise ValueError(f"{type(self).__name__} expects n_agents={self.n_agents} at dim {self._agent_dim} of its "
                             f"input, got shape {tuple(x.shape)}.")
        agent_dim = x.ndim + self._agent_dim
        if self.centralized:
            x = x.flatten(agent_dim, agent_dim + 1)
        if not self.share_params:
            in_dim = None if self.centralized else agent_dim
            return torch.vmap(self._call, in_dims=(0, in_dim), out_dims=agent_dim, randomness="different")(
                self.params, x)
        out = self._call(self.params, x)
        if self.centralized:
            out = out.unsqueeze(agent_dim)
            out = out.expand(*out.shape[:agent_dim], self.n_agents, *out.shape[agent_dim + 1:])
        return out

    def get_stateful_net(self, copy: bool = True) -> nn.Module:
        """Returns one agent's network class holding the parameters (with a leading agent dim unless shared).

        Args:
            copy: return a copy (``True``) or a module whose parameters are this module's tensors.

        Returns:
            The network.
        """
        net = self._build_single_net(device="meta")
        (self.params.data.clone() if copy else self.params).to_module(net)
        return net

    def reset_parameters(self) -> None:
        """Re-draws every agent's parameters with the network's default initialisation."""
        for i in range(1 if self.share_params else self.n_agents):
            fresh = TensorDict.from_module(self._build_single_net(device=None))
            target = self.params if self.share_params else self.params[i]
            target.data.copy_(fresh.data.to(target.device))


class MultiAgentMLP(MultiAgentNetBase):
    """An :class:`MLP` per agent (or shared): ``[*batch, n_agents, n_agent_inputs]`` -> ``[*batch, n_agents, out]``.

    Args:
        n_agent_inputs: input features per agent (must be given: lazy layers cannot be stacked).
        n_agent_outputs: output features per agent.
        n_agents: number of agents.

    Keyword Args:
        centralized: whether each agent's network sees all agents' inputs (also accepted as ``centralised``).
        share_params: whether all agents use the same parameters.
        device: device of the parameters.
        depth: hidden layers (see :class:`MLP`).
        num_cells: hidden sizes (see :class:`MLP`).
        activation_class: activation. Defaults to ``nn.Tanh``.
        use_td_params: accepted for TorchRL compatibility (parameters are always a ``TensorDictParams``).
        **kwargs: other :class:`MLP` arguments.

    Examples:
        >>> import torch
        >>> net = MultiAgentMLP(4, 2, n_agents=3, centralized=False, share_params=False, depth=1, num_cells=8)
        >>> net(torch.zeros(5, 3, 4)).shape
        torch.Size([5, 3, 2])
    """

    _agent_dim = -2

    def __init__(
        self,
        n_agent_inputs: int | None,
        n_agent_outputs: int,
        n_agents: int,
        *,
        centralized: bool | None = None,
        share_params: bool | None = None,
        device: Any = None,
        depth: int | None = None,
        num_cells: Sequence[int] | int | None = None,
        activation_class: type[nn.Module] | None = nn.Tanh,
        use_td_params: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        centralized = kwargs.pop("centralised", centralized)
        self.n_agent_inputs, self.n_agent_outputs = n_agent_inputs, n_agent_outputs
        self.depth, self.num_cells, self.activation_class = depth, num_cells, activation_class
        self._mlp_kwargs = kwargs
        self.n_agents, self.centralized = n_agents, centralized
        self._setup(n_agents=n_agents, centralized=centralized, share_params=share_params, device=device,
                    use_td_params=use_td_params)

    def _build_single_net(self, *, device: Any) -> nn.Module:
        n_in = self.n_agent_inputs
        if self.centralized and n_in is not None:
            n_in = n_in * self.n_agents
        return MLP(in_features=n_in, out_features=self.n_agent_outputs, depth=self.depth, num_cells=self.num_cells,
                   activation_class=self.activation_class, device=device, **self._mlp_kwargs)


class MultiAgentConvNet(MultiAgentNetBase):
    """A :class:`ConvNet` per agent (or shared): ``[*batch, n_agents, C, H, W]`` -> ``[*batch, n_agents, F]``.

    Args:
        n_agents: number of agents.
        centralized: whether each agent's network sees all agents' images (stacked along channels).
        share_params: whether all agents use the same parameters.

    Keyword Args:
        in_features: input channels per agent (must be given).
        device: device of the parameters.
        num_cells: channels per layer (see :class:`ConvNet`).
        kernel_sizes: kernel sizes. Defaults to ``5``.
        strides: strides. Defaults to ``2``.
        paddings: paddings. Defaults to ``0``.
        activation_class: activation. Defaults to ``nn.ELU``.
        use_td_params: accepted for TorchRL compatibility.
        **kwargs: other :class:`ConvNet` arguments.

    Examples:
        >>> import torch
        >>> net = MultiAgentConvNet(2, centralized=False, share_params=True, in_features=3, num_cells=[4])
        >>> net(torch.zeros(5, 2, 3, 9, 9)).shape
        torch.Size([5, 2, 36])
    """

    _agent_dim = -4

    def __init__(
        self,
        n_agents: int,
        centralized: bool | None = None,
        share_params: bool | None = None,
        *,
        in_features: int | None = None,
        device: Any = None,
        num_cells: Sequence[int] | None = None,
        kernel_sizes: Sequence[int] | int = 5,
        strides: Sequence[int] | int = 2,
        paddings: Sequence[int] | int = 0,
        activation_class: type[nn.Module] = nn.ELU,
        use_td_params: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.in_features, self.num_cells = in_features, num_cells
        self.kernel_sizes, self.strides, self.paddings = kernel_sizes, strides, paddings
        self.activation_class = activation_class
        self._conv_kwargs = kwargs
        self.n_agents, self.centralized = n_agents, centralized
        self._setup(n_agents=n_agents, centralized=centralized, share_params=share_params, device=device,
                    use_td_params=use_td_params)

    def _build_single_net(self, *, device: Any) -> nn.Module:
        n_in = self.in_features
        if self.centralized and n_in is not None:
            n_in = n_in * self.n_agents
        return ConvNet(in_features=n_in, num_cells=self.num_cells, kernel_sizes=self.kernel_sizes,
                       strides=self.strides, paddings=self.paddings, activation_class=self.activation_class,
                       device=device, **self._conv_kwargs)


class Mixer(nn.Module, abc.ABC):
    """Base class of value mixers: ``[*B, n_agents, 1]`` chosen-action values (and a state) -> ``[*B, 1]``.

    Args:
        n_agents: number of agents.
        needs_state: whether :meth:`mix` uses the global state (second input).
        state_shape: shape of the state (without batch dims).
        device: device of the parameters.
    """

    def __init__(self, n_agents: int, needs_state: bool, state_shape: Sequence[int], device: Any) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.needs_state = needs_state
        self.state_shape = torch.Size(state_shape)
        self.device = device

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        expected = 2 if self.needs_state else 1
        if len(inputs) != expected:
            raise ValueError(f"{type(self).__name__} takes {expected} input(s) (chosen_action_value"
                             f"{', state' if self.needs_state else ''}), got {len(inputs)}.")
        values = inputs[0]
        state = inputs[1] if self.needs_state else None
        if values.shape[-2:] != (self.n_agents, 1):
            raise ValueError(f"{type(self).__name__} expects chosen_action_value [..., {self.n_agents}, 1], got "
                             f"{tuple(values.shape)}.")
        if state is not None and state.shape[len(state.shape) - len(self.state_shape):] != self.state_shape:
            raise ValueError(f"{type(self).__name__} expects a state ending with {tuple(self.state_shape)}, got "
                             f"{tuple(state.shape)}.")
        return self.mix(values, state)

    @abc.abstractmethod
    def mix(self, chosen_action_value: torch.Tensor, state: torch.Tensor | None) -> torch.Tensor:
        """Mixes ``[*B, n_agents, 1]`` values into ``[*B, 1]``."""


class VDNMixer(Mixer):
    """Value decomposition (Sunehag et al., 2017, https://arxiv.org/abs/1706.05296): the sum of agents' values.

    Args:
        n_agents: number of agents.
        device: unused (no parameters).

    Examples:
        >>> import torch
        >>> VDNMixer(n_agents=3, device="cpu")(torch.ones(4, 3, 1))
        tensor([[3.],
                [3.],
                [3.],
                [3.]])
    """

    def __init__(self, n_agents: int, device: Any) -> None:
        super().__init__(n_agents=n_agents, needs_state=False, state_shape=(), device=device)

    def mix(self, chosen_action_value: torch.Tensor, state: torch.Tensor | None) -> torch.Tensor:
        return chosen_action_value.sum(-2)


class QMixer(Mixer):
    """QMIX (Rashid et al., 2018, https://arxiv.org/abs/1803.11485): a monotonic state-conditioned mixer.

    Args:
        state_shape: shape of the global state.
        mixing_embed_dim: hidden size of the mixing network.
        n_agents: number of agents.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> mixer = QMixer(state_shape=(5,), mixing_embed_dim=8, n_agents=3, device="cpu")
        >>> mixer(torch.zeros(4, 3, 1), torch.zeros(4, 5)).shape
        torch.Size([4, 1])
    """

    def __init__(self, state_shape: Sequence[int], mixing_embed_dim: int, n_agents: int, device: Any) -> None:
        super().__init__(n_agents=n_agents, needs_state=True, state_shape=state_shape, device=device)
        self.embed_dim = mixing_embed_dim
        self.state_dim = int(math.prod(state_shape))
        self.hyper_w_1 = nn.Linear(self.state_dim, mixing_embed_dim * n_agents, device=device)
        self.hyper_w_final = nn.Linear(self.state_dim, mixing_embed_dim, device=device)
        self.hyper_b_1 = nn.Linear(self.state_dim, mixing_embed_dim, device=device)
        self.V = nn.Sequential(nn.Linear(self.state_dim, mixing_embed_dim, device=device), nn.ReLU(),
                               nn.Linear(mixing_embed_dim, 1, device=device))

    def mix(self, chosen_action_value: torch.Tensor, state: torch.Tensor | None) -> torch.Tensor:
        batch = chosen_action_value.shape[:-2]
        state = state.reshape(-1, self.state_dim)
        values = chosen_action_value.reshape(-1, 1, self.n_agents)
        # abs() keeps the mixing weights non-negative: Q_tot is monotonic in every agent's value.
        w1 = self.hyper_w_1(state).abs().view(-1, self.n_agents, self.embed_dim)
        b1 = self.hyper_b_1(state).view(-1, 1, self.embed_dim)
        hidden = nn.functional.elu(torch.bmm(values, w1) + b1)
        w_final = self.hyper_w_final(state).abs().view(-1, self.embed_dim, 1)
        q_tot = torch.bmm(hidden, w_final) + self.V(state).view(-1, 1, 1)
        return q_tot.view(*batch, 1)
