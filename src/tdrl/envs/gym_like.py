"""Gym-like envs: ``GymLikeEnv`` (the base of wrappers of ``reset``/``step`` APIs that return tuples) and
readers of their ``info`` dicts (TorchRL path: ``torchrl.envs.gym_like``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Composite, TensorSpec, Unbounded
from tdrl.envs.common import _EnvWrapper

__all__ = ["GymLikeEnv", "default_info_dict_reader"]


class default_info_dict_reader:  # noqa: N801 - TorchRL's name
    """Writes entries of gymnasium's ``info`` dict into the tensordict of each reset/step.

    Args:
        keys: the info keys to read (all non-private ones when ``None``).
        spec: their specs (a ``Composite``, a dict or a list aligned with ``keys``); inferred from one step
            when not given.
        ignore_private: skip keys starting with ``_`` (gymnasium's per-sub-env masks).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> reader = default_info_dict_reader(["x"])
        >>> td = TensorDict(batch_size=[])
        >>> _ = reader({"x": 1.5}, td)
        >>> td["x"]
        tensor([1.5000], dtype=torch.float64)
    """

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        spec: Composite | dict | Sequence[TensorSpec] | None = None,
        ignore_private: bool = True,
    ) -> None:
        self.keys = list(keys) if keys is not None else None
        self.ignore_private = ignore_private
        if spec is not None and not isinstance(spec, Composite):
            if isinstance(spec, dict):
                spec = Composite(spec)
            else:
                if self.keys is None or len(self.keys) != len(spec):
                    raise ValueError(
                        "default_info_dict_reader: a list of specs needs keys of the same length"
                    )
                spec = Composite(dict(zip(self.keys, spec)))
        self._info_spec = spec

    @property
    def info_spec(self) -> Composite | None:
        """The specs of the entries read (``None`` until known)."""
        return self._info_spec

    def _selected(self, info: dict[str, Any]) -> list[str]:
        if self.keys is not None:
            return self.keys
        # final_obs/final_info are the vector envs' SAME_STEP bookkeeping, read by the wrapper itself.
        return [
            k
            for k in info
            if not (self.ignore_private and k.startswith("_")) and k not in ("final_obs", "final_info")
        ]

    def infer_spec(self, info: dict[str, Any], batch_size: torch.Size) -> Composite:
        """Builds ``info_spec`` from a sample ``info`` dict (``Unbounded`` leaves, trailing dim >= 1)."""
        entries = {}
        for key in self._selected(info):
            if key not in info:
                raise KeyError(f"info key {key!r} not found in the env's info dict (keys: {sorted(info)})")
            value = self._as_tensor(info[key], batch_size)
            entries[key] = Unbounded(shape=value.shape, dtype=value.dtype)
        self._info_spec = Composite(entries, shape=batch_size)
        return self._info_spec

    @staticmethod
    def _as_tensor(value: Any, batch_size: torch.Size) -> torch.Tensor:
        tensor = torch.as_tensor(np.asarray(value))
        if tensor.ndim == len(batch_size):
            tensor = tensor.unsqueeze(-1)
        return tensor

    def __call__(self, info: dict[str, Any], tensordict: TensorDictBase) -> TensorDictBase:
        spec = self._info_spec
        batch = tensordict.batch_size
        for key in self._selected(info) if spec is None else list(spec.keys()):
            if key in info:
                value = self._as_tensor(info[key], batch)
                if spec is not None:
                    leaf = spec[key]
                    value = value.to(leaf.dtype).reshape(leaf.shape)
            elif spec is not None:
                # Keys that only some steps report (e.g. at episode end) are zero-filled.
                value = spec[key].zero()
            else:
                continue
            tensordict.set(key, value)
        return tensordict


class GymLikeEnv(_EnvWrapper):
    """Base of wrappers of envs with a gym-like API: ``reset() -> (obs, info)``, ``step(a) -> tuple``.

    A subclass writes the specs (``_make_specs``) and says how to read the library's outputs:
    ``_output_transform(step_output) -> (obs, reward, terminated, truncated, done, info)`` and
    ``_reset_output_transform(reset_output) -> (obs, info)``. The steps between are public and can be
    overridden one by one: ``read_action`` (tensor to the library's action), ``read_obs`` (observation to
    a dict of tensors under the observation spec's keys), ``read_reward``, ``read_done``. ``_step`` repeats
    the action ``frame_skip`` times (rewards summed, stopping at a done), then runs the info readers added
    with ``set_info_dict_reader``. ``GymWrapper`` is one of these, with a faster ``_step`` of its own.

    Examples:
        >>> import numpy as np
        >>> from tdrl.data import Bounded, Categorical, Composite, Unbounded
        >>> class Counter:  # a library env: counts the actions given
        ...     def reset(self):
        ...         self.n = 0
        ...         return np.zeros(1, np.float32), {}
        ...     def step(self, action):
        ...         self.n += int(action)
        ...         return np.full(1, self.n, np.float32), 1.0, self.n >= 3, False, {}
        >>> class CounterEnv(GymLikeEnv):
        ...     def _make_specs(self, env):
        ...         self.observation_spec = Composite(observation=Unbounded((1,)))
        ...         self.action_spec = Categorical(2)
        ...         self.reward_spec = Unbounded((1,))
        ...     def _output_transform(self, out):
        ...         obs, reward, terminated, truncated, info = out
        ...         return obs, reward, terminated, truncated, terminated or truncated, info
        ...     def _reset_output_transform(self, out):
        ...         return out
        ...     def _set_seed(self, seed):
        ...         pass
        >>> env = CounterEnv(env=Counter())
        >>> td = env.reset()
        >>> td["action"] = torch.tensor(1)
        >>> env.step(td)["next", "observation"]
        tensor([1.])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__.setdefault("info_dict_reader", [])
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------------ library outputs (subclass hooks)
    def _output_transform(self, step_outputs_tuple: tuple) -> tuple:
        """``(obs, reward, terminated, truncated, done, info)`` from the library's ``step`` output."""
        raise TypeError(f"{type(self).__name__} must implement _output_transform(step_outputs_tuple)")

    def _reset_output_transform(self, reset_outputs_tuple: tuple) -> tuple:
        """``(obs, info)`` from the library's ``reset`` output."""
        raise TypeError(f"{type(self).__name__} must implement _reset_output_transform(reset_outputs_tuple)")

    # ------------------------------------------------------------------ readers
    def read_action(self, action: torch.Tensor) -> Any:
        """The library's action (a numpy array, an int for one-hot/categorical actions of an unbatched env)."""
        return self.full_action_spec[self.action_key].to_numpy(action.detach().cpu(), safe=False)

    def read_done(
        self, terminated: Any = None, truncated: Any = None, done: Any = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor, bool]:
        """``(terminated, truncated, done, stop_frame_skip)`` as bool tensors of the done spec's shape."""
        shape = self.full_done_spec["done"].shape

        def flag(value: Any) -> torch.Tensor | None:
            if value is None:
                return None
            return torch.as_tensor(np.asarray(value, dtype=bool)).reshape(shape)

        term, trunc, done_t = flag(terminated), flag(truncated), flag(done)
        if done_t is None:
            parts = [f for f in (term, trunc) if f is not None]
            if not parts:
                raise ValueError(f"{type(self).__name__}: the step reported no done, terminated or truncated")
            done_t = parts[0] if len(parts) == 1 else parts[0] | parts[1]
        return term, trunc, done_t, bool(done_t.any())

    def read_reward(self, reward: Any) -> torch.Tensor:
        """The reward, encoded by the reward spec (its shape and dtype)."""
        return self.full_reward_spec[self.reward_key].encode(reward, ignore_device=True)

    def read_obs(self, observations: Any) -> dict[Any, Any]:
        """A dict of observations under the observation spec's keys (a non-dict goes to the first key)."""
        spec = self.observation_spec
        if not isinstance(observations, dict):
            key = next(iter(spec.keys(True, True)), None)
            if key is None:
                raise RuntimeError(f"{type(self).__name__}: the observation spec is empty")
            return {key: spec[key].encode(observations, ignore_device=True)}
        if "state" in observations and "observation" not in observations and "observation" in spec.keys():
            observations = {**observations, "observation": observations["state"]}
            del observations["state"]
        missing = [k for k in observations if k not in spec.keys()]
        if missing:
            raise KeyError(f"{type(self).__name__}: observations {missing} are not in the observation spec")
        return {k: spec[k].encode(v, ignore_device=True) for k, v in observations.items()}

    # ------------------------------------------------------------------ info readers
    def set_info_dict_reader(
        self, info_dict_reader: Callable | None = None, ignore_private: bool = True
    ) -> GymLikeEnv:
        """Adds a reader ``reader(info, tensordict)`` run after each reset and step; its ``info_spec`` joins
        the observation spec (``default_info_dict_reader(ignore_private=...)`` when ``None``; the spec must
        then be given to it, as no step is taken here to infer it)."""
        if info_dict_reader is None:
            info_dict_reader = default_info_dict_reader(ignore_private=ignore_private)
        self.info_dict_reader.append(info_dict_reader)
        spec = getattr(info_dict_reader, "info_spec", None)
        if spec is not None:
            self.observation_spec = self.observation_spec.update(spec)
        return self

    def _read_info(self, info: Any, td: TensorDictBase) -> TensorDictBase:
        if info is None or not self.info_dict_reader:
            return td
        if not isinstance(info, dict):
            raise TypeError(f"{type(self).__name__}: expected an info dict, got {type(info).__name__}")
        for reader in self.info_dict_reader:
            out = reader(info, td)
            td = out if out is not None else td
        return td

    # ------------------------------------------------------------------ EnvBase hooks
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = self.read_action(tensordict.get(self.action_key))
        reward: Any = 0.0
        for _ in range(self.wrapper_frame_skip):
            obs, r, terminated, truncated, done, info = self._output_transform(self._env.step(action))
            reward = reward + (0.0 if r is None else np.asarray(r))
            terminated, truncated, done, stop = self.read_done(terminated, truncated, done)
            if stop:
                break
        out = self.read_obs(obs)
        out[self.reward_key] = self.read_reward(reward)
        out["done"] = done
        out["terminated"] = done.clone() if terminated is None else terminated
        if truncated is not None:
            out["truncated"] = truncated
        td = TensorDict(out, batch_size=tensordict.batch_size, device=self.device)
        return self._read_info(info, td)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is not None and not bool(mask.all()):
            raise RuntimeError(
                f"{type(self).__name__} resets all its sub-envs at once; override _reset for partial resets"
            )
        obs, info = self._reset_output_transform(self._env.reset(**kwargs))
        td = TensorDict(self.read_obs(obs), batch_size=self.batch_size, device=self.device)
        return self._read_info(info, td)
