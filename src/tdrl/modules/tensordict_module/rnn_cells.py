"""Python implementations of LSTM / GRU cells and layers (same parameters and maths as ``torch.nn``).

They trade cuDNN/ATen's fused kernels for plain tensor ops, which work under ``vmap`` and functional calls
and are easy to read; ``LSTMModule(python_based=True)`` / ``GRUModule(python_based=True)`` use them.
Parameter names match ``nn.LSTM``/``nn.GRU``, so state dicts are interchangeable.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

__all__ = ["LSTMCell", "GRUCell", "LSTM", "GRU"]


def lstm_cell(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
              b_ih: torch.Tensor | None, b_hh: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step (gate order ``i, f, g, o`` as in ``nn.LSTM``).

    Args:
        x: input ``[N, in]``.
        h: hidden state ``[N, H]``.
        c: cell state ``[N, H]``.
        w_ih: input weights ``[4H, in]``.
        w_hh: recurrent weights ``[4H, H]``.
        b_ih: input bias or ``None``.
        b_hh: recurrent bias or ``None``.

    Returns:
        ``(h', c')``.

    Examples:
        >>> import torch
        >>> h, c = lstm_cell(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, 4), torch.zeros(16, 3),
        ...                  torch.zeros(16, 4), None, None)
        >>> h.shape
        torch.Size([2, 4])
    """
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(x: torch.Tensor, h: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, b_ih: torch.Tensor | None,
             b_hh: torch.Tensor | None) -> torch.Tensor:
    """One GRU step (gate order ``r, z, n`` as in ``nn.GRU``).

    Args:
        x: input ``[N, in]``.
        h: hidden state ``[N, H]``.
        w_ih: input weights ``[3H, in]``.
        w_hh: recurrent weights ``[3H, H]``.
        b_ih: input bias or ``None``.
        b_hh: recurrent bias or ``None``.

    Returns:
        ``h'``.

    Examples:
        >>> import torch
        >>> gru_cell(torch.zeros(2, 3), torch.ones(2, 4), torch.zeros(12, 3), torch.zeros(12, 4), None, None)
        tensor([[0.5000, 0.5000, 0.5000, 0.5000],
                [0.5000, 0.5000, 0.5000, 0.5000]])
    """
    i_r, i_z, i_n = F.linear(x, w_ih, b_ih).chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h


class LSTMCell(nn.LSTMCell):
    """``nn.LSTMCell`` computed with plain tensor ops.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        bias: use biases.
        device: parameter device.
        dtype: parameter dtype.

    Examples:
        >>> import torch
        >>> cell = LSTMCell(3, 4)
        >>> h, c = cell(torch.zeros(2, 3))
        >>> ref = torch.nn.LSTMCell(3, 4)
        >>> _ = ref.load_state_dict(cell.state_dict())
        >>> torch.allclose(h, ref(torch.zeros(2, 3))[0])
        True
    """

    def forward(self, input: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        if hx is None:
            zeros = input.new_zeros(*input.shape[:-1], self.hidden_size)
            hx = (zeros, zeros)
        return lstm_cell(input, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class GRUCell(nn.GRUCell):
    """``nn.GRUCell`` computed with plain tensor ops.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        bias: use biases.
        device: parameter device.
        dtype: parameter dtype.

    Examples:
        >>> import torch
        >>> cell = GRUCell(3, 4)
        >>> ref = torch.nn.GRUCell(3, 4)
        >>> _ = ref.load_state_dict(cell.state_dict())
        >>> x = torch.randn(2, 3)
        >>> torch.allclose(cell(x), ref(x), atol=1e-6)
        True
    """

    def forward(self, input: torch.Tensor, hx: torch.Tensor | None = None) -> torch.Tensor:
        if hx is None:
            hx = input.new_zeros(*input.shape[:-1], self.hidden_size)
        return gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


def _run_layers(module: nn.Module, input: Any, states: list[torch.Tensor], step: Any) -> tuple[Any, list]:
    """Time loop shared by :class:`LSTM` and :class:`GRU`; handles ``PackedSequence`` and ``batch_first``."""
    packed = isinstance(input, PackedSequence)
    if packed:
        x, lengths = pad_packed_sequence(input, batch_first=True)
    else:
        x = input if module.batch_first else input.transpose(0, 1)
        lengths = None
    n, t = x.shape[:2]
    valid = None if lengths is None else torch.arange(t)[None, :] < lengths[:, None]
    finals: list[list[torch.Tensor]] = [[] for _ in states]
    for layer in range(module.num_layers):
        weights = [getattr(module, f"{name}_l{layer}", None) for name in ("weight_ih", "weight_hh", "bias_ih",
                                                                             "bias_hh")]
        layer_states = [s[layer] for s in states]
        outputs = []
        for k in range(t):
            new = step(x[:, k], layer_states, weights)
            if valid is not None:
                keep = valid[:, k, None].to(x.device)
                new = [torch.where(keep, a, b) for a, b in zip(new, layer_states)]
            layer_states = new
            outputs.append(layer_states[0])
        x = torch.stack(outputs, 1)
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = F.dropout(x, module.dropout, training=True)
        for i, s in enumerate(layer_states):
            finals[i].append(s)
    final = [torch.stack(f, 0) for f in finals]
    if packed:
        return pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False), final
    return (x if module.batch_first else x.transpose(0, 1)), final


class _PythonRNNBase(nn.Module):
    """Parameters laid out as ``torch.nn.LSTM``/``GRU`` (same names and init), without subclassing them.

    Not deriving from ``nn.RNNBase`` keeps these modules traceable by ``torch.compile`` (Dynamo refuses RNNBase).
    """

    _gates: int
    _name: str

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, bias: bool, batch_first: bool,
                 dropout: float, bidirectional: bool, proj_size: int, device: Any, dtype: torch.dtype | None,
                 use_scan: bool) -> None:
        super().__init__()
        if bidirectional or proj_size:
            raise ValueError(f"{self._name} (python implementation) supports neither bidirectional nor proj_size; "
                             f"use torch.nn.{self._name}.")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size, self.use_scan = False, 0, use_scan
        factory = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else hidden_size
            self.register_parameter(f"weight_ih_l{layer}",
                                    nn.Parameter(torch.empty(self._gates * hidden_size, n_in, **factory)))
            self.register_parameter(f"weight_hh_l{layer}",
                                    nn.Parameter(torch.empty(self._gates * hidden_size, hidden_size, **factory)))
            for name in ("bias_ih", "bias_hh"):
                param = nn.Parameter(torch.empty(self._gates * hidden_size, **factory)) if bias else None
                self.register_parameter(f"{name}_l{layer}", param)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform ``(-1/sqrt(H), 1/sqrt(H))`` initialisation, as ``torch.nn`` RNNs."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for param in self.parameters():
            nn.init.uniform_(param, -bound, bound)

    def _zeros(self, input: Any) -> torch.Tensor:
        ref = input.data if isinstance(input, PackedSequence) else input
        n = input.batch_sizes[0] if isinstance(input, PackedSequence) else input.shape[0 if self.batch_first else 1]
        return ref.new_zeros(self.num_layers, int(n), self.hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, batch_first={self.batch_first}"


class LSTM(_PythonRNNBase):
    """An LSTM (unidirectional, no projection) computed step by step with plain tensor ops.

    Parameter names and initialisation match ``torch.nn.LSTM`` (state dicts are interchangeable); unlike it,
    this module compiles with ``torch.compile`` and runs under ``vmap``.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        num_layers: stacked layers.
        batch_first: ``[N, T, F]`` inputs. Defaults to ``True``.
        bias: use biases.
        dropout: dropout between layers (training mode).
        bidirectional: must be ``False``.
        proj_size: must be ``0``.
        device: parameter device.
        dtype: parameter dtype.
        use_scan: accepted for TorchRL compatibility; the time loop is always a Python loop.

    Examples:
        >>> import torch
        >>> lstm = LSTM(3, 4, num_layers=2)
        >>> ref = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
        >>> _ = ref.load_state_dict(lstm.state_dict())
        >>> x = torch.randn(2, 5, 3)
        >>> torch.allclose(lstm(x)[0], ref(x)[0], atol=1e-6)
        True
    """

    _gates = 4
    _name = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, batch_first: bool = True,
                 bias: bool = True, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: torch.dtype | None = None, use_scan: bool = False) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
                         device, dtype, use_scan)

    def forward(self, input: Any, hx: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[Any, tuple]:
        if hx is None:
            hx = (self._zeros(input), self._zeros(input))

        def step(x: torch.Tensor, states: list[torch.Tensor], weights: list) -> list[torch.Tensor]:
            return list(lstm_cell(x, states[0], states[1], *weights))

        y, (h, c) = _run_layers(self, input, list(hx), step)
        return y, (h, c)


class GRU(_PythonRNNBase):
    """A GRU (unidirectional) computed step by step with plain tensor ops.

    Parameter names and initialisation match ``torch.nn.GRU``; this module compiles and runs under ``vmap``.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        num_layers: stacked layers.
        bias: use biases.
        batch_first: ``[N, T, F]`` inputs. Defaults to ``True``.
        dropout: dropout between layers (training mode).
        bidirectional: must be ``False``.
        device: parameter device.
        dtype: parameter dtype.
        use_scan: accepted for TorchRL compatibility; the time loop is always a Python loop.

    Examples:
        >>> import torch
        >>> gru = GRU(3, 4)
        >>> ref = torch.nn.GRU(3, 4, batch_first=True)
        >>> _ = ref.load_state_dict(gru.state_dict())
        >>> x = torch.randn(2, 5, 3)
        >>> torch.allclose(gru(x)[1], ref(x)[1], atol=1e-6)
        True
    """

    _gates = 3
    _name = "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = True, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: torch.dtype | None = None, use_scan: bool = False) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0, device,
                         dtype, use_scan)

    def forward(self, input: Any, hx: torch.Tensor | None = None) -> tuple[Any, torch.Tensor]:
        if hx is None:
            hx = self._zeros(input)

        def step(x: torch.Tensor, states: list[torch.Tensor], weights: list) -> list[torch.Tensor]:
            return [gru_cell(x, states[0], *weights)]

        y, (h,) = _run_layers(self, input, [hx], step)
        return y, h
