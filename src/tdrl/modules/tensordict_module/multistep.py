"""``MultiStepActorWrapper``: run an actor that outputs a chunk of future actions, one action per env step."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import TensorDictModuleBase
from tensordict.utils import NestedKey, expand_as_right

__all__ = ["MultiStepActorWrapper"]


def _with_last(key: NestedKey, last: str) -> NestedKey:
    key = unravel_key(key)
    return (*key[:-1], last) if isinstance(key, tuple) else last


def _last(key: NestedKey) -> str:
    key = unravel_key(key)
    return key[-1] if isinstance(key, tuple) else key


def _is_vla_chunk(key: NestedKey) -> bool:
    key = unravel_key(key)
    return isinstance(key, tuple) and key[-2:] == ("vla_action", "chunk")


def _action_key_of_chunk(chunk_key: NestedKey) -> NestedKey:
    # "action_chunk" -> "action", ("agent", "action_chunk") -> ("agent", "action"), (..., "vla_action", "chunk")
    # -> "action"; any other key is its own action key.
    if _is_vla_chunk(chunk_key):
        return "action"
    last = _last(chunk_key)
    if last.endswith("_chunk") and last != "_chunk":
        return _with_last(chunk_key, last[: -len("_chunk")])
    return unravel_key(chunk_key)


def _as_key_list(keys: NestedKey | list[NestedKey] | None) -> list[NestedKey] | None:
    if keys is None:
        return None
    return [unravel_key(k) for k in (keys if isinstance(keys, list) else [keys])]


class MultiStepActorWrapper(TensorDictModuleBase):
    """Executes an action chunk (macro) produced by ``actor`` one element per call.

    The actor writes actions with an extra time dimension placed right after the tensordict's batch
    dimensions (``[*batch, n_steps, *action_shape]``). The wrapper calls the actor where ``init_key`` is set
    (after a reset, e.g. from an ``InitTracker`` transform) or once the chunk is consumed, caches the chunk and
    writes its ``counter``-th element to the action key at each call. The cache is ``<action>_orig`` when the
    actor writes the action key itself, else the chunk key; the position is ``<init_key parent>/counter``.

    Args:
        actor: the chunk-producing actor.
        n_steps: chunk length; checked against the actor's output when given. ``None``: any length, the
            chunk is cycled through.

    Keyword Args:
        action_keys: the env action keys. Defaults to those inferred from ``chunk_keys``.
        chunk_keys: the actor outputs holding chunks. Defaults to ``(..., "vla_action", "chunk")`` keys, then
            keys ending in ``"_chunk"``, then the actor's out_keys ending in ``"action"``.
        init_key: the reset indicator. Defaults to ``"is_init"``.
        keep_dim: keep a time dimension of size 1 in the written action. Defaults to ``False``.
        replan_interval: re-query the actor after this many actions (in ``[1, n_steps]``); default: after the
            whole chunk.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> chunk = TensorDictModule(lambda obs: obs.unsqueeze(-2) + torch.arange(3.0).view(3, 1),
        ...                          ["observation"], ["action"])
        >>> actor = MultiStepActorWrapper(chunk, n_steps=3)
        >>> td = TensorDict(observation=torch.zeros(2, 1), is_init=torch.ones(2, 1, dtype=torch.bool),
        ...                 batch_size=[2])
        >>> actions = []
        >>> for _ in range(4):
        ...     td = actor(td)
        ...     actions.append(td["action"][0, 0].item())
        ...     td["is_init"] = torch.zeros(2, 1, dtype=torch.bool)
        >>> actions
        [0.0, 1.0, 2.0, 0.0]
    """

    def __init__(
        self,
        actor: TensorDictModuleBase,
        n_steps: int | None = None,
        *,
        action_keys: list[NestedKey] | None = None,
        chunk_keys: list[NestedKey] | None = None,
        init_key: NestedKey | None = None,
        keep_dim: bool = False,
        replan_interval: int | None = None,
    ) -> None:
        if isinstance(init_key, list):
            raise ValueError(f"MultiStepActorWrapper: only a single init_key can be passed, got {init_key}.")
        if replan_interval is not None:
            replan_interval = int(replan_interval)
            if replan_interval < 1 or (n_steps is not None and replan_interval > n_steps):
                raise ValueError(
                    f"MultiStepActorWrapper: replan_interval must be in [1, n_steps={n_steps}], "
                    f"got {replan_interval}."
                )
        super().__init__()
        self.actor = actor
        self.n_steps = n_steps
        self.keep_dim = keep_dim
        self.replan_interval = replan_interval
        self.init_key = unravel_key("is_init" if init_key is None else init_key)
        self.counter_key = _with_last(self.init_key, "counter")
        self.chunk_keys, self.action_keys = self._resolve_keys(
            _as_key_list(chunk_keys), _as_key_list(action_keys)
        )
        self.cache_keys = [
            chunk if chunk != action else _with_last(action, _last(action) + "_orig")
            for action, chunk in zip(self.action_keys, self.chunk_keys)
        ]

    def _resolve_keys(
        self, chunk_keys: list[NestedKey] | None, action_keys: list[NestedKey] | None
    ) -> tuple[list[NestedKey], list[NestedKey]]:
        out_keys = [unravel_key(k) for k in self.actor.out_keys]
        default_actions = [k for k in out_keys if _last(k) == "action"]
        if chunk_keys is None:
            chunk_keys = (
                [k for k in out_keys if _is_vla_chunk(k)]
                or [k for k in out_keys if _last(k).endswith("_chunk")]
                or (action_keys if action_keys is not None and not default_actions else default_actions)
            )
        if action_keys is None:
            action_keys = [_action_key_of_chunk(k) for k in chunk_keys]
        if len(action_keys) != len(chunk_keys) or not action_keys:
            raise ValueError(
                f"MultiStepActorWrapper: action_keys {action_keys} and chunk_keys {chunk_keys} must "
                "be non-empty and of the same length."
            )
        return chunk_keys, action_keys

    @property
    def in_keys(self) -> list[NestedKey]:
        return list(self.actor.in_keys) + [self.init_key]

    @property
    def out_keys(self) -> list[NestedKey]:
        out_keys = [unravel_key(k) for k in self.actor.out_keys]
        for key in [*self.action_keys, *self.cache_keys, self.counter_key]:
            if key not in out_keys:
                out_keys.append(key)
        return out_keys

    def _refresh(self, tensordict: TensorDictBase) -> torch.Tensor:
        is_init = tensordict.get(self.init_key, None)
        if is_init is None:
            raise KeyError(
                f"MultiStepActorWrapper: the reset indicator {self.init_key!r} is missing from the "
                "input; add an InitTracker transform to the env."
            )
        counter = tensordict.get(self.counter_key, None)
        if counter is None:
            counter = is_init.int()
        interval = self.replan_interval if self.replan_interval is not None else self.n_steps
        if interval is not None:
            is_init = is_init | (counter >= interval)
        if is_init.any():
            counter = counter.masked_fill(is_init, 0)
            # All-set (always so for an unbatched tensordict): the actor sees the whole input, unfiltered.
            everywhere = bool(is_init.all())
            output = self.actor(
                tensordict.copy() if everywhere else tensordict[is_init.reshape(tensordict.shape)]
            )
            for chunk_key, cache_key in zip(self.chunk_keys, self.cache_keys):
                computed = output.get(chunk_key)
                cached = tensordict.get(cache_key, None)
                if cached is None:
                    if not everywhere:
                        raise RuntimeError(
                            "MultiStepActorWrapper: no cached chunk and a partial "
                            f"{self.init_key!r} signal; the first call needs it set everywhere."
                        )
                else:
                    computed = torch.masked_scatter(cached, expand_as_right(is_init, cached), computed)
                tensordict.set(cache_key, computed)
        counter = counter + 1
        tensordict.set(self.counter_key, counter)
        return counter

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        counter = self._refresh(tensordict)
        for action_key, cache_key in zip(self.action_keys, self.cache_keys):
            chunk = tensordict.get(cache_key)
            dim = tensordict.get(cache_key[:-1]).ndim if isinstance(cache_key, tuple) else tensordict.ndim
            length = chunk.shape[dim]
            if self.n_steps is not None and length != self.n_steps:
                raise RuntimeError(
                    f"MultiStepActorWrapper: the chunk {cache_key!r} has {length} steps at dim "
                    f"{dim} (shape {tuple(chunk.shape)}), expected n_steps={self.n_steps}."
                )
            if self.replan_interval is not None and length < self.replan_interval:
                raise RuntimeError(
                    f"MultiStepActorWrapper: replan_interval={self.replan_interval} exceeds the "
                    f"chunk length {length} of {cache_key!r}."
                )
            position = (counter - 1).long().reshape(chunk.shape[:dim])
            if self.n_steps is None and self.replan_interval is None:
                position = position.remainder(length)
            index = position.reshape(*chunk.shape[:dim], 1, *([1] * (chunk.ndim - dim - 1)))
            action = chunk.gather(dim, index.expand(*chunk.shape[:dim], 1, *chunk.shape[dim + 1 :]))
            tensordict.set(action_key, action if self.keep_dim else action.squeeze(dim))
        return tensordict
