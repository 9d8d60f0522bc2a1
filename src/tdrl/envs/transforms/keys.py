"""Key-level transforms: ``ExcludeTransform``, ``SelectTransform`` and ``RenameTransform``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.envs.transforms._base import Transform

__all__ = ["ExcludeTransform", "RenameTransform", "SelectTransform"]

_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")


def _flatten_keys(keys: tuple) -> list[NestedKey]:
    if len(keys) == 1 and isinstance(keys[0], list):
        keys = tuple(keys[0])
    return [unravel_key(k) for k in keys]


def _under(key: NestedKey, prefixes: list[NestedKey]) -> bool:
    path = (key,) if isinstance(key, str) else key
    for p in prefixes:
        pp = (p,) if isinstance(p, str) else p
        if path[: len(pp)] == pp:
            return True
    return False


class ExcludeTransform(Transform):
    """Removes entries from the env's outputs (or, with ``inverse=True``, from its inputs).

    Args:
        *excluded_keys: the entries to drop.

    Keyword Args:
        inverse: drop them from the step input (before the base env) instead.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> ExcludeTransform("b")(TensorDict({"a": torch.zeros(1), "b": torch.zeros(1)}, [])).keys()
        _StringKeys(dict_keys(['a']))
    """

    def __init__(self, *excluded_keys: NestedKey, inverse: bool = False) -> None:
        keys = _flatten_keys(excluded_keys)
        for protected in ("done", "reward", "terminated"):
            if protected in keys:
                raise ValueError(f"ExcludeTransform cannot exclude {protected!r}: envs always carry it")
        super().__init__()
        self.excluded_keys = keys
        self.inverse = inverse

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict if self.inverse else next_tensordict.exclude(*self.excluded_keys)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.exclude(*self.excluded_keys) if self.inverse else tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_output_spec(self, output_spec: Any) -> Any:
        if self.inverse:
            return output_spec
        output_spec = output_spec.clone()
        for part in _OUTPUT_PARTS:
            if part in output_spec.keys():
                sub = output_spec[part]
                for key in self.excluded_keys:
                    if key in sub.keys(True):
                        del sub[key]
                output_spec[part] = sub
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        if not self.inverse:
            return input_spec
        input_spec = input_spec.clone()
        state = input_spec["full_state_spec"]
        for key in self.excluded_keys:
            if key in state.keys(True):
                del state[key]
        input_spec["full_state_spec"] = state
        return input_spec

    def __repr__(self) -> str:
        return f"ExcludeTransform(keys={self.excluded_keys}, inverse={self.inverse})"


class SelectTransform(Transform):
    """Keeps only the given entries in the env's outputs (plus rewards and dones by default).

    Args:
        *selected_keys: the entries to keep.

    Keyword Args:
        keep_rewards: also keep the reward entries.
        keep_dones: also keep the done entries.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"a": torch.zeros(1), "b": torch.zeros(1), "reward": torch.zeros(1)}, [])
        >>> sorted(SelectTransform("a")(td).keys())
        ['a', 'reward']
    """

    def __init__(self, *selected_keys: NestedKey, keep_rewards: bool = True, keep_dones: bool = True) -> None:
        super().__init__()
        self.selected_keys = _flatten_keys(selected_keys)
        self.keep_rewards = keep_rewards
        self.keep_dones = keep_dones
        self._reward_keys: list[NestedKey] = ["reward"]
        self._done_keys: list[NestedKey] = ["done", "terminated", "truncated"]
        self._input_keys: list[NestedKey] = []

    def _kept(self) -> list[NestedKey]:
        keys = list(self.selected_keys)
        if self.keep_rewards:
            keys += self._reward_keys
        if self.keep_dones:
            keys += self._done_keys
        return keys + self._input_keys

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.select(*self._kept(), strict=False)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        self._reward_keys = list(output_spec["full_reward_spec"].keys(True, True))
        self._done_keys = list(output_spec["full_done_spec"].keys(True, True))
        obs = output_spec["full_observation_spec"]
        for key in list(obs.keys(True, True)):
            if not _under(key, self.selected_keys) and key in obs.keys(True, True):
                del obs[key]
        output_spec["full_observation_spec"] = obs
        if not self.keep_rewards:
            reward = output_spec["full_reward_spec"]
            for key in list(reward.keys(True, True)):
                if not _under(key, self.selected_keys):
                    del reward[key]
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        # Inputs the policy writes (actions, states) survive selection so that steps keep working.
        self._input_keys = [
            k
            for part in ("full_action_spec", "full_state_spec")
            if part in input_spec.keys()
            for k in input_spec[part].keys(True, True)
        ]
        return input_spec

    def __repr__(self) -> str:
        return f"SelectTransform(keys={self.selected_keys})"


class RenameTransform(Transform):
    """Renames entries (and their specs); ``in_keys_inv``/``out_keys_inv`` rename inputs back.

    Args:
        in_keys: the entries to rename.
        out_keys: their new names.
        in_keys_inv: base-env names of inputs renamed by the inverse.
        out_keys_inv: outer names of those inputs.
        create_copy: keep the original entries too.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> sorted(RenameTransform(["a"], ["b"])(TensorDict({"a": torch.zeros(1)}, [])).keys())
        ['b']
    """

    invertible = True

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        create_copy: bool = False,
    ) -> None:
        super().__init__(
            in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv
        )
        if len(self.in_keys) != len(self.out_keys):
            raise ValueError(
                f"RenameTransform: {len(self.in_keys)} in_keys but {len(self.out_keys)} out_keys"
            )
        if len(self.in_keys_inv) != len(self.out_keys_inv):
            raise ValueError("RenameTransform: in_keys_inv and out_keys_inv must have the same length")
        self.create_copy = create_copy

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, next_tensordict)
                continue
            next_tensordict.set(out_key, value)
        if not self.create_copy:
            drop = [k for k in self.in_keys if k not in self.out_keys]
            next_tensordict = next_tensordict.exclude(*drop)
        return next_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is not None:
                tensordict.set(in_key, value)
        if not self.create_copy:
            drop = [k for k in self.out_keys_inv if k not in self.in_keys_inv]
            tensordict = tensordict.exclude(*drop)
        return tensordict

    def _rename(self, spec: Any, pairs: list[tuple[NestedKey, NestedKey]]) -> Any:
        for src, dst in pairs:
            if src in spec.keys(True, True):
                spec[dst] = spec[src].clone()
                if not self.create_copy:
                    del spec[src]
        return spec

    def transform_output_spec(self, output_spec: Any) -> Any:
        output_spec = output_spec.clone()
        pairs = list(zip(self.in_keys, self.out_keys))
        for part in _OUTPUT_PARTS:
            if part in output_spec.keys():
                output_spec[part] = self._rename(output_spec[part], pairs)
        return output_spec

    def transform_input_spec(self, input_spec: Any) -> Any:
        input_spec = input_spec.clone()
        pairs = list(zip(self.in_keys_inv, self.out_keys_inv))
        for part in ("full_action_spec", "full_state_spec"):
            if part in input_spec.keys():
                input_spec[part] = self._rename(input_spec[part], pairs)
        return input_spec

    def __repr__(self) -> str:
        return f"RenameTransform(in_keys={self.in_keys}, out_keys={self.out_keys})"
