"""``MultiAction``: one outer step runs a stack of actions (a macro action, an action chunk) in the env."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform

__all__ = ["MultiAction"]


class MultiAction(Transform):
    """The policy writes a stack of actions (along batch dim ``dim`` after the env's batch dims); one outer
    step runs them one after the other in the env. The outer step's rewards are the stack of the inner
    steps' rewards (``stack_rewards``, zeros for the steps skipped after a done), its observations the
    last ones (or their stack with ``stack_observations``).

    After a sub-env is done inside the chunk, its remaining actions are not run (a ``"_step"`` mask).
    Transforms before this one run at every inner step, those after it once per outer step. The chunk
    length may vary from one step to the next: the specs give the stack dim size ``-1``.

    Keyword Args:
        dim: position of the stack dim after the batch dims (default 1: right after them).
        stack_rewards: stack the inner rewards (default True) or keep the last one.
        stack_observations: stack the inner observations (default False: the last ones).
        action_key: the env's one-step action entry (default: every action entry of the env).
        chunk_key: the entry holding the stacked actions (default ``action_key``).

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), MultiAction())
        >>> td = env.reset().set("action", torch.zeros(3, 1))
        >>> env.step(td)["next", "reward"].shape
        torch.Size([3, 1])
    """

    def __init__(
        self,
        *,
        dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        action_key: NestedKey | None = None,
        chunk_key: NestedKey | None = None,
    ) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"MultiAction: dim must be an int >= 1 (a dim after the batch dims), got {dim!r}")
        if action_key is None and chunk_key is not None:
            action_key = "action"
        if chunk_key is None:
            chunk_key = action_key
        super().__init__(
            in_keys_inv=None if action_key is None else [action_key],
            out_keys_inv=None if chunk_key is None else [chunk_key],
        )
        self.dim = dim
        self.stack_rewards = stack_rewards
        self.stack_observations = stack_observations
        self._rewards: list[TensorDictBase] = []
        self._obs: list[TensorDictBase] = []

    @classmethod
    def from_vla(cls, *, action_key: NestedKey = "action", **kwargs: Any) -> MultiAction:
        """A ``MultiAction`` reading the chunk from ``("vla_action", "chunk")``.

        Examples:
            >>> MultiAction.from_vla(stack_rewards=False).out_keys_inv
            [('vla_action', 'chunk')]
        """
        return cls(action_key=action_key, chunk_key=("vla_action", "chunk"), **kwargs)

    def _keys(self, action_keys: list[NestedKey]) -> tuple[list[NestedKey], list[NestedKey]]:
        actions = self.in_keys_inv or list(action_keys)
        chunks = self.out_keys_inv or actions
        if len(actions) != len(chunks):
            raise ValueError(
                f"MultiAction: action_key and chunk_key lists differ in length ({len(actions)} vs {len(chunks)})"
            )
        return actions, chunks

    def _stack(self, parts: list[TensorDictBase], ndim: int) -> TensorDictBase:
        return torch.stack(parts, ndim + self.dim - 1)

    # ------------------------------------------------------------------ stepping
    def _chunks(self, tensordict: TensorDictBase, action_keys: list, chunk_keys: list) -> tuple[list, int]:
        stack_dim = tensordict.ndim + self.dim - 1
        chunks = []
        for action_key, chunk_key in zip(action_keys, chunk_keys):
            chunk = tensordict.get(chunk_key, None)
            if chunk is None:
                raise KeyError(
                    f"MultiAction expected stacked actions at {chunk_key!r} before env.step; got keys "
                    f"{list(tensordict.keys(True, True))}"
                )
            chunks.append((action_key, chunk.unbind(stack_dim)))
        lengths = {len(parts) for _, parts in chunks}
        if len(lengths) != 1:
            raise ValueError(f"MultiAction: the action chunks have different lengths {sorted(lengths)}")
        n = lengths.pop()
        if n == 0:
            raise ValueError("MultiAction: the action chunk is empty")
        return chunks, n

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        action_keys, chunk_keys = self._keys(parent.action_keys)
        chunks, n = self._chunks(tensordict, action_keys, chunk_keys)
        reward_keys = list(parent.reward_keys)
        obs_keys = list(parent.observation_keys)
        self._rewards, self._obs = [], []
        td = tensordict
        active = None  # sub-envs still running (None: all)
        for i in range(n - 1):
            td = td.exclude(*chunk_keys)
            for action_key, parts in chunks:
                td.set(action_key, parts[i])
            if active is not None:
                td.set("_step", active.clone())
            td = parent.step(td)
            nxt = td.get("next")
            if self.stack_rewards:
                rewards = nxt.select(*reward_keys).clone()
                if active is not None:
                    rewards = torch.where(active, rewards, rewards.new_zeros(()))
                self._rewards.append(rewards)
            if self.stack_observations:
                self._obs.append(nxt.select(*obs_keys).clone())
            td = parent.step_mdp(td)
            if parent.any_done(td):
                done = td.pop("_reset").reshape(td.batch_size)
                active = ~done if active is None else active & ~done
                if not bool(active.any()):
                    break
        out = td.exclude(*chunk_keys)
        for action_key, parts in chunks:
            out.set(action_key, parts[-1] if active is None or bool(active.any()) else parts[len(self._rewards)])
        if active is not None:
            out.set("_step", active)
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        ndim = next_tensordict.ndim
        active = tensordict.get("_step", None) if tensordict is not None else None
        if self.stack_rewards:
            last = next_tensordict.select(*parent.reward_keys)
            if active is not None:
                last = torch.where(active.reshape(next_tensordict.batch_size), last, last.new_zeros(()))
            next_tensordict.update(self._stack([*self._rewards, last], ndim))
        if self.stack_observations:
            last = next_tensordict.select(*parent.observation_keys)
            next_tensordict.update(self._stack([*self._obs, last], ndim))
        self._rewards, self._obs = [], []
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("MultiAction acts on an env's steps only; it has no meaning on plain data")

    # ------------------------------------------------------------------ specs
    def _stacked(self, spec: Any, ndim: int) -> Any:
        for _ in range(self.dim):
            spec = spec.unsqueeze(ndim)
        # The chunk length is free: the stack dim is ragged (-1), which the env's input checks accept at
        # any size (they check the entry's presence only).
        shape = list(spec.shape)
        shape[ndim + self.dim - 1] = -1
        spec.shape = torch.Size(shape)
        return spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        action_spec = input_spec["full_action_spec"]
        action_keys, chunk_keys = self._keys(list(action_spec.keys(True, True)))
        ndim = input_spec.ndim
        for action_key, chunk_key in zip(action_keys, chunk_keys):
            leaf = self._stacked(action_spec[action_key], ndim)
            if unravel_key(chunk_key) != unravel_key(action_key):
                del action_spec[action_key]
            action_spec[chunk_key] = leaf
        input_spec["full_action_spec"] = action_spec
        return input_spec

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        ndim = output_spec.ndim
        for name, flag in (("full_reward_spec", self.stack_rewards), ("full_observation_spec", self.stack_observations)):
            if flag and name in output_spec.keys():
                spec = output_spec[name]
                for key in list(spec.keys(True, True)):
                    spec[key] = self._stacked(spec[key], ndim)
                output_spec[name] = spec
        return output_spec
