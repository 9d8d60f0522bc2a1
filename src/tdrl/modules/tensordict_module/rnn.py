"""Recurrent TensorDict modules: ``LSTMModule`` and ``GRUModule`` with ``is_init`` resets.

Two modes (see :class:`set_recurrent_mode`):

- *sequential* (default; collectors): every batch element is one time step. The hidden state is read from
  ``recurrent_state*`` (zeros when absent), reset to zero where ``is_init`` is ``True``, and the new state is
  written to ``("next", "recurrent_state*")``.
- *recurrent* (losses, value estimators): the last batch dimension is time. Each row starts from the state
  stored at its first step; wherever ``is_init`` is ``True`` (including mid-row, for several trajectories
  packed in one row) the state restarts from zero. Output states are zero except at the last step of each
  trajectory, which holds its final state (TorchRL's layout).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from typing import Any, Literal

import torch
from tensordict import TensorDictBase, unravel_key_list
from tensordict.nn import TensorDictModuleBase, dispatch
from tensordict.utils import NestedKey
from torch import nn

from tdrl.data import Unbounded
from tdrl.envs.transforms import TensorDictPrimer
from tdrl.modules.tensordict_module.rnn_cells import GRU, LSTM, GRUCell, LSTMCell

# GRUCell / LSTMCell live in rnn_cells.py; re-exported for TorchRL's path torchrl.modules.tensordict_module.rnn.
__all__ = ["LSTMModule", "GRUModule", "set_recurrent_mode", "recurrent_mode", "GRUCell", "LSTMCell"]

_MODE_STACK: list[bool | None] = [None]


def recurrent_mode() -> bool | None:
    """The recurrent mode set by the innermost :class:`set_recurrent_mode`, or ``None`` outside any.

    Returns:
        ``True`` (recurrent), ``False`` (sequential) or ``None`` (use each module's default).

    Examples:
        >>> recurrent_mode() is None
        True
    """
    return _MODE_STACK[-1]


class set_recurrent_mode(contextlib.ContextDecorator):
    """Context manager / decorator selecting how RNN modules read time.

    Args:
        mode: ``True``/``"recurrent"`` (last batch dim is time), ``False``/``"sequential"`` (single steps) or
            ``None`` (each module's ``default_recurrent_mode``). Defaults to ``True``.

    Examples:
        >>> with set_recurrent_mode(True):
        ...     recurrent_mode()
        True
    """

    def __init__(self, mode: bool | Literal["recurrent", "sequential"] | None = True) -> None:
        if isinstance(mode, str):
            if mode.lower() not in ("recurrent", "sequential"):
                raise ValueError(f"set_recurrent_mode: mode must be a bool, 'recurrent' or 'sequential', got {mode!r}.")
            mode = mode.lower() == "recurrent"
        self.mode = mode

    def __enter__(self) -> set_recurrent_mode:
        _MODE_STACK.append(self.mode)
        return self

    def __exit__(self, *exc: Any) -> None:
        _MODE_STACK.pop()


def _segments(is_init: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Splits ``[N, T]`` rows into trajectories starting at ``t=0`` and at every ``is_init``.

    Returns ``(starts, lengths, segment_of_step, position_in_segment)`` over the flattened ``N*T`` steps.
    """
    start = is_init.clone()
    start[:, 0] = True
    flat = start.reshape(-1)
    starts = flat.nonzero().squeeze(-1)
    lengths = torch.diff(starts, append=starts.new_tensor([flat.numel()]))
    seg = flat.long().cumsum(0) - 1
    pos = torch.arange(flat.numel(), device=flat.device) - starts[seg]
    return starts, lengths, seg, pos


class _RecurrentModule(TensorDictModuleBase):
    """Key handling, mode handling and the forward logic shared by :class:`LSTMModule` and :class:`GRUModule`."""

    DEFAULT_IN_KEYS: list[NestedKey]
    DEFAULT_OUT_KEYS: list[NestedKey]
    rnn: nn.Module

    def _set_keys(self, in_key: NestedKey | None, in_keys: Sequence[NestedKey] | None, out_key: NestedKey | None,
                  out_keys: Sequence[NestedKey] | None) -> None:
        name = type(self).__name__
        if (in_key is None) == (in_keys is None):
            raise ValueError(f"{name}: pass exactly one of in_key / in_keys (got {in_key!r} and {in_keys!r}).")
        if (out_key is None) == (out_keys is None):
            raise ValueError(f"{name}: pass exactly one of out_key / out_keys (got {out_key!r} and {out_keys!r}).")
        in_keys = unravel_key_list([in_key, *self.DEFAULT_IN_KEYS] if in_key is not None else list(in_keys))
        out_keys = unravel_key_list([out_key, *self.DEFAULT_OUT_KEYS] if out_key is not None else list(out_keys))
        n = 1 + len(self.DEFAULT_IN_KEYS)
        if len(in_keys) != n and not (len(in_keys) == n + 1 and in_keys[-1] == "is_init"):
            raise ValueError(f"{name} expects in_keys [input, {', '.join(map(repr, self.DEFAULT_IN_KEYS))}] "
                             f"(optionally followed by 'is_init'), got {in_keys}.")
        if len(out_keys) != n:
            raise ValueError(f"{name} expects {n} out_keys [output, *next states], got {out_keys}.")
        self.in_keys = in_keys if in_keys[-1] == "is_init" else [*in_keys, "is_init"]
        self.out_keys = out_keys

    @property
    def recurrent_mode(self) -> bool:
        """Whether the module reads the last batch dimension as time (context first, then the default)."""
        mode = recurrent_mode()
        return bool(self._recurrent_mode) if mode is None else mode

    @recurrent_mode.setter
    def recurrent_mode(self, value: bool) -> None:
        raise RuntimeError("recurrent_mode is read-only; use `with set_recurrent_mode(...)`, "
                           "default_recurrent_mode=..., or module.set_recurrent_mode(mode) (returns a copy).")

    def set_recurrent_mode(self, mode: bool = True) -> _RecurrentModule:
        """Returns a shallow copy (sharing parameters) whose default recurrent mode is ``mode``.

        Args:
            mode: the default mode of the copy.

        Returns:
            The copy.
        """
        out = copy.copy(self)
        out._recurrent_mode = mode
        return out

    def _state_sizes(self) -> list[int]:
        return [self.rnn.hidden_size]

    @property
    def _num_states(self) -> int:
        return self.rnn.num_layers * (2 if self.rnn.bidirectional else 1)

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """Returns the ``TensorDictPrimer`` that registers (and resets) this module's recurrent states in an env.

        Returns:
            A primer with one ``Unbounded((num_layers * directions, size))`` spec per state.
        """
        primers = {}
        for in_key, out_key, size in zip(self.in_keys[1:], self.out_keys[1:], self._state_sizes()):
            in_tuple = in_key if isinstance(in_key, tuple) else (in_key,)
            out_tuple = out_key if isinstance(out_key, tuple) else (out_key,)
            if out_tuple != ("next", *in_tuple):
                raise RuntimeError(f"make_tensordict_primer needs out_keys named ('next', <in_key>); got in_keys "
                                   f"{self.in_keys} and out_keys {self.out_keys}.")
            primers[in_key] = Unbounded(shape=(self._num_states, size))
        return TensorDictPrimer(primers, expand_specs=True)

    def _run(self, x: Any, states: list[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        """Runs the wrapped RNN; ``states`` are ``[N, num_states, H]``."""
        hidden = [s.transpose(0, 1).contiguous() for s in states]
        y, out = self.rnn(x, tuple(hidden) if len(hidden) > 1 else hidden[0])
        out = list(out) if isinstance(out, tuple) else [out]
        return y, [h.transpose(0, 1) for h in out]

    def _read_states(self, tensordict: TensorDictBase, n: int, t: int, like: torch.Tensor) -> list[torch.Tensor]:
        states = [tensordict.get(key, None) for key in self.in_keys[1:-1]]
        if all(s is None for s in states):
            return [like.new_zeros(n, t, self._num_states, size) for size in self._state_sizes()]
        if any(s is None for s in states):
            missing = [k for k, s in zip(self.in_keys[1:-1], states) if s is None]
            raise KeyError(f"{type(self).__name__}: recurrent states {missing} missing while others are present.")
        return [s.reshape(n, t, *s.shape[-2:]) for s in states]

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        shape = tensordict.shape
        if self.recurrent_mode:
            if not shape:
                raise ValueError(f"{type(self).__name__} in recurrent mode needs a time batch dimension; got a "
                                 "tensordict with batch_size [].")
            n, t = shape[:-1].numel(), shape[-1]
        else:
            n, t = shape.numel(), 1
        x = tensordict.get(self.in_keys[0])
        x = x.reshape(n, t, x.shape[-1])
        is_init = tensordict.get(self.in_keys[-1], None)
        if is_init is None:
            is_init = torch.zeros(n, t, dtype=torch.bool, device=x.device)
        else:
            is_init = is_init.reshape(n, t)
        states = self._read_states(tensordict, n, t, x)
        if self.python_based:
            y, outs = self._run_stepwise(x, states, is_init)
        else:
            y, outs = self._run_packed(x, states, is_init)
        tensordict.set(self.out_keys[0], y.reshape(*shape, y.shape[-1]))
        for key, out in zip(self.out_keys[1:], outs):
            tensordict.set(key, out.reshape(*shape, *out.shape[-2:]))
        return tensordict

    def _run_packed(self, x: torch.Tensor, states: list[torch.Tensor],
                    is_init: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One fused RNN call over whole rows, or over packed trajectories when a row holds several."""
        n, t = is_init.shape
        reset0 = is_init[:, 0, None, None]
        init = [torch.where(reset0, torch.zeros_like(s[:, 0]), s[:, 0]) for s in states]
        if t > 1 and bool(is_init[:, 1:].any()):
            y, finals, ends = self._run_segments(x, states, is_init)
        else:
            y, finals = self._run(x, init)
            ends = torch.arange(t - 1, n * t, t, device=x.device)
        outs = [final.new_zeros(n * t, *final.shape[1:]).index_copy(0, ends, final) for final in finals]
        return y, outs

    def _run_stepwise(self, x: torch.Tensor, states: list[torch.Tensor],
                      is_init: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Step-by-step loop with in-loop resets: static shapes only, so it compiles without graph breaks."""
        n, t = is_init.shape
        hidden = [s[:, 0] for s in states]
        ys, steps = [], [[] for _ in states]
        for k in range(t):
            reset = is_init[:, k, None, None]
            hidden = [torch.where(reset, torch.zeros_like(h), h) for h in hidden]
            y, hidden = self._run(x[:, k : k + 1], hidden)
            ys.append(y[:, 0])
            for acc, h in zip(steps, hidden):
                acc.append(h)
        # Keep each trajectory's final state at its last step, zeros elsewhere (TorchRL's layout).
        ends = torch.cat([is_init[:, 1:], torch.ones_like(is_init[:, :1])], 1)[..., None, None]
        outs = [torch.where(ends, torch.stack(acc, 1), 0.0).reshape(n * t, *acc[0].shape[1:]) for acc in steps]
        return torch.stack(ys, 1), outs

    def _run_segments(self, x: torch.Tensor, states: list[torch.Tensor],
                      is_init: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        n, t, features = x.shape
        starts, lengths, seg, pos = _segments(is_init)
        padded = x.new_zeros(starts.numel(), int(lengths.max()), features)
        padded[seg, pos] = x.reshape(n * t, features)
        reset = is_init.reshape(-1)[starts, None, None]
        init = [s.reshape(n * t, *s.shape[-2:])[starts] for s in states]
        init = [torch.where(reset, torch.zeros_like(s), s) for s in init]
        packed = nn.utils.rnn.pack_padded_sequence(padded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        y_packed, finals = self._run(packed, init)
        y_padded, _ = nn.utils.rnn.pad_packed_sequence(y_packed, batch_first=True, total_length=padded.shape[1])
        y = y_padded[seg, pos].reshape(n, t, -1)
        return y, finals, starts + lengths - 1


class LSTMModule(_RecurrentModule):
    """An ``nn.LSTM`` reading and writing its hidden states ``(h, c)`` in the tensordict.

    Default keys: in ``[in_key, "recurrent_state_h", "recurrent_state_c", "is_init"]``, out
    ``[out_key, ("next", "recurrent_state_h"), ("next", "recurrent_state_c")]``. States have shape
    ``[*batch, num_layers * directions, size]``. See the module docstring for the two modes.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        num_layers: stacked layers. Defaults to ``1``.
        bias: use biases. Defaults to ``True``.
        batch_first: must be ``True``.
        dropout: dropout between layers.
        proj_size: LSTM projection size (``h`` then has this size).
        bidirectional: bidirectional LSTM (meaningful in recurrent mode only).
        python_based: use the step-by-step python :class:`~tdrl.modules.LSTM` (vmap/functional friendly).
        recurrent_backend: accepted for TorchRL compatibility (``"auto"``, ``"pad"``, ``"scan"``, ``"triton"``);
            trajectories are always split and packed.
        recurrent_compute_dtype: accepted for TorchRL compatibility.
        recurrent_recompute: accepted for TorchRL compatibility.
        recurrent_matmul_precision: accepted for TorchRL compatibility.

    Keyword Args:
        in_key: the input key (the default state keys are appended). Exclusive with ``in_keys``.
        in_keys: all input keys.
        out_key: the output key (the default next-state keys are appended). Exclusive with ``out_keys``.
        out_keys: all output keys.
        device: device of the parameters.
        lstm: an existing ``nn.LSTM(batch_first=True)`` to wrap instead of building one.
        default_recurrent_mode: mode used outside ``set_recurrent_mode``. Defaults to sequential.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="features")
        >>> td = TensorDict(obs=torch.zeros(4, 3), is_init=torch.ones(4, 1, dtype=torch.bool), batch_size=[4])
        >>> td = lstm(td)
        >>> td["features"].shape, td["next", "recurrent_state_h"].shape
        (torch.Size([4, 8]), torch.Size([4, 1, 8]))
    """

    DEFAULT_IN_KEYS = ["recurrent_state_h", "recurrent_state_c"]
    DEFAULT_OUT_KEYS = [("next", "recurrent_state_h"), ("next", "recurrent_state_c")]

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0,
        proj_size: int = 0,
        bidirectional: bool = False,
        python_based: bool = False,
        recurrent_backend: Literal["auto", "pad", "scan", "triton"] = "pad",
        recurrent_compute_dtype: torch.dtype = torch.float32,
        recurrent_recompute: Literal["none", "full"] = "none",
        recurrent_matmul_precision: str = "auto",
        *,
        in_key: NestedKey | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        device: Any = None,
        lstm: nn.LSTM | None = None,
        default_recurrent_mode: bool | None = None,
    ) -> None:
        super().__init__()
        if lstm is None:
            if not hidden_size:
                raise ValueError("LSTMModule: hidden_size must be given (or pass lstm=...).")
            if not batch_first:
                raise ValueError("LSTMModule requires batch_first=True.")
            lstm_class = LSTM if python_based else nn.LSTM
            lstm = lstm_class(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers, bias=bias,
                              dropout=dropout, proj_size=proj_size, device=device, batch_first=True,
                              bidirectional=bidirectional)
        elif input_size is not None or hidden_size is not None:
            raise ValueError("LSTMModule: pass either an lstm instance or input_size/hidden_size, not both.")
        elif not lstm.batch_first:
            raise ValueError("LSTMModule: the wrapped nn.LSTM must have batch_first=True.")
        self.lstm = lstm
        self.recurrent_backend = recurrent_backend
        self.python_based = python_based
        self._recurrent_mode = default_recurrent_mode
        self._set_keys(in_key, in_keys, out_key, out_keys)

    @property
    def rnn(self) -> nn.Module:
        return self.lstm

    def _state_sizes(self) -> list[int]:
        return [self.lstm.proj_size or self.lstm.hidden_size, self.lstm.hidden_size]


class GRUModule(_RecurrentModule):
    """An ``nn.GRU`` reading and writing its hidden state in the tensordict.

    Default keys: in ``[in_key, "recurrent_state", "is_init"]``, out ``[out_key, ("next", "recurrent_state")]``.
    The state has shape ``[*batch, num_layers * directions, hidden_size]``. See the module docstring for modes.

    Args:
        input_size: input features.
        hidden_size: hidden features.
        num_layers: stacked layers. Defaults to ``1``.
        bias: use biases. Defaults to ``True``.
        batch_first: must be ``True``.
        dropout: dropout between layers.
        bidirectional: bidirectional GRU (meaningful in recurrent mode only).
        python_based: use the step-by-step python :class:`~tdrl.modules.GRU` (vmap/functional friendly).
        recurrent_backend: accepted for TorchRL compatibility.
        recurrent_compute_dtype: accepted for TorchRL compatibility.
        recurrent_recompute: accepted for TorchRL compatibility.
        recurrent_matmul_precision: accepted for TorchRL compatibility.

    Keyword Args:
        in_key: the input key. Exclusive with ``in_keys``.
        in_keys: all input keys.
        out_key: the output key. Exclusive with ``out_keys``.
        out_keys: all output keys.
        device: device of the parameters.
        gru: an existing ``nn.GRU(batch_first=True)`` to wrap.
        default_recurrent_mode: mode used outside ``set_recurrent_mode``. Defaults to sequential.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> gru = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="features")
        >>> td = TensorDict(obs=torch.zeros(2, 5, 3), batch_size=[2, 5])
        >>> with set_recurrent_mode(True):
        ...     td = gru(td)
        >>> td["features"].shape, td["next", "recurrent_state"].shape
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 1, 8]))
    """

    DEFAULT_IN_KEYS = ["recurrent_state"]
    DEFAULT_OUT_KEYS = [("next", "recurrent_state")]

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0,
        bidirectional: bool = False,
        python_based: bool = False,
        recurrent_backend: Literal["auto", "pad", "scan", "triton"] = "pad",
        recurrent_compute_dtype: torch.dtype = torch.float32,
        recurrent_recompute: Literal["none", "full"] = "none",
        recurrent_matmul_precision: str = "auto",
        *,
        in_key: NestedKey | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        device: Any = None,
        gru: nn.GRU | None = None,
        default_recurrent_mode: bool | None = None,
    ) -> None:
        super().__init__()
        if gru is None:
            if not hidden_size:
                raise ValueError("GRUModule: hidden_size must be given (or pass gru=...).")
            if not batch_first:
                raise ValueError("GRUModule requires batch_first=True.")
            gru_class = GRU if python_based else nn.GRU
            gru = gru_class(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers, bias=bias,
                            dropout=dropout, device=device, batch_first=True, bidirectional=bidirectional)
        elif input_size is not None or hidden_size is not None:
            raise ValueError("GRUModule: pass either a gru instance or input_size/hidden_size, not both.")
        elif not gru.batch_first:
            raise ValueError("GRUModule: the wrapped nn.GRU must have batch_first=True.")
        self.gru = gru
        self.recurrent_backend = recurrent_backend
        self.python_based = python_based
        self._recurrent_mode = default_recurrent_mode
        self._set_keys(in_key, in_keys, out_key, out_keys)

    @property
    def rnn(self) -> nn.Module:
        return self.gru
