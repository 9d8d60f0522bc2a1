"""DeepMind Control Suite environments: ``DMControlEnv`` (by name) and ``DMControlWrapper`` (an instance).

Specs follow TorchRL: ``dm_env`` arrays become ``Unbounded``/``Bounded`` specs with the same dtype
(float64 stays float64), scalar entries get shape ``(1,)``, ``DiscreteArray`` actions become ``OneHot``
(``Categorical`` with ``categorical_action_encoding=True``). The suite's time limit ends an episode with
``discount == 1``: that is a truncation; a ``LAST`` step with discount 0 is a termination.

The step reads each observation array straight into a tensor (``torch.from_numpy``, no copy when dm_control
hands over a fresh array) and builds the output tensordict from a plain dict.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded
from tdrl.envs._fast_td import fast_td
from tdrl.envs.common import _EnvWrapper

__all__ = ["DMControlEnv", "DMControlWrapper"]

_HAS_DMC = importlib.util.find_spec("dm_control") is not None

_NP_TO_TORCH = {
    np.dtype(np.float64): torch.float64,
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float16): torch.float16,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int16): torch.int16,
    np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.bool_): torch.bool,
}


def _require_dm_control() -> None:
    if not _HAS_DMC:
        raise ImportError("dm_control is not installed: install the `dmc` extra (pip install 'tdrl[dmc]')")


def dm_spec_to_spec(
    spec: Any, *, device: Any = None, categorical_action_encoding: bool = False
) -> TensorSpec:
    """Converts a ``dm_env`` spec (or a dict of them) to a tdrl spec.

    Args:
        spec: a ``dm_env.specs.Array``/``BoundedArray``/``DiscreteArray`` or a mapping of them.
        device: device of the spec.
        categorical_action_encoding: ``DiscreteArray`` -> ``Categorical`` instead of ``OneHot``.

    Returns:
        The tdrl spec (``Composite`` for mappings).

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("dm_control")  # the `dmc` extra
        >>> import numpy as np
        >>> from dm_env import specs
        >>> dm_spec_to_spec(specs.BoundedArray((2,), np.float64, -1.0, 1.0)).dtype
        torch.float64
    """
    import dm_env

    if isinstance(spec, dict):
        return Composite(
            {
                k: dm_spec_to_spec(v, device=device, categorical_action_encoding=categorical_action_encoding)
                for k, v in spec.items()
            }
        )
    if isinstance(spec, dm_env.specs.DiscreteArray):
        if categorical_action_encoding:
            return Categorical(spec.num_values, device=device, dtype=_NP_TO_TORCH[np.dtype(spec.dtype)])
        return OneHot(spec.num_values, device=device, dtype=torch.long)
    shape = tuple(spec.shape) or (1,)
    dtype = _NP_TO_TORCH[np.dtype(spec.dtype)]
    if isinstance(spec, dm_env.specs.BoundedArray):
        low = torch.as_tensor(np.array(np.broadcast_to(spec.minimum, spec.shape)).reshape(shape), dtype=dtype)
        high = torch.as_tensor(
            np.array(np.broadcast_to(spec.maximum, spec.shape)).reshape(shape), dtype=dtype
        )
        return Bounded(low=low, high=high, shape=shape, dtype=dtype, device=device)
    if isinstance(spec, dm_env.specs.Array):
        return Unbounded(shape=shape, dtype=dtype, device=device)
    raise TypeError(f"cannot convert dm_env spec of type {type(spec).__name__} ({spec!r})")


def _to_tensor(value: Any, shape: torch.Size) -> torch.Tensor:
    if type(value) is np.ndarray:
        flags = value.flags
        # A view (of physics data, say) would change under our feet at the next step: copy it.
        out = torch.from_numpy(value if flags.owndata and flags.writeable else value.copy())
    else:
        out = torch.from_numpy(np.array(value))
    return out if out.shape == shape else out.reshape(shape)


class DMControlWrapper(_EnvWrapper):
    """Wraps a dm_control ``control.Environment`` (or its ``pixels.Wrapper``) as a tdrl env.

    Args:
        env: the dm_control environment.
        from_pixels: add rendered frames under ``"pixels"`` (uint8, ``(H, W, 3)``).
        pixels_only: with ``from_pixels``, keep only ``"pixels"`` as observation.
        frame_skip: repeat each action this many times (rewards summed, stops at episode end).
        camera_id: camera used for rendering.
        render_kwargs: extra arguments of ``physics.render`` (``height``, ``width``...).
        categorical_action_encoding: discrete actions as indices instead of one-hot.
        device: device of the produced tensors.
        batch_size: must be empty (one dm_control env per wrapper).

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("dm_control")  # the `dmc` extra
        >>> from dm_control import suite
        >>> env = DMControlWrapper(suite.load("cartpole", "balance"))
        >>> env.rollout(3)["next", "position"].shape
        torch.Size([3, 3])
    """

    git_url = "https://github.com/deepmind/dm_control"
    libname = "dm_control"

    @classmethod
    def available_envs_list(cls) -> list[tuple[str, str]]:
        """``(domain, task)`` pairs of the suite."""
        _require_dm_control()
        from dm_control import suite

        return list(suite.BENCHMARKING) + list(suite.EXTRA)

    def __init__(self, env: Any = None, **kwargs: Any) -> None:
        if env is not None:
            kwargs["env"] = env
        super().__init__(**kwargs)

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _require_dm_control()
        if "env" in kwargs:
            from dm_control.rl.control import Environment
            from dm_control.suite.wrappers import pixels

            if not isinstance(kwargs["env"], (Environment, pixels.Wrapper)):
                raise TypeError(
                    f"DMControlWrapper: env must be a dm_control control.Environment or pixels.Wrapper, "
                    f"got {type(kwargs['env']).__name__}"
                )
        if self.batch_size:
            raise ValueError(
                f"DMControlWrapper wraps one env: batch_size must be empty, got {self.batch_size}"
            )

    def _build_env(
        self,
        env: Any = None,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        categorical_action_encoding: bool = False,
        **kwargs: Any,
    ) -> Any:
        if env is None:
            raise TypeError("DMControlWrapper needs env=<a dm_control environment>")
        if kwargs:
            raise TypeError(f"DMControlWrapper got unexpected arguments {sorted(kwargs)}")
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only
        self.categorical_action_encoding = categorical_action_encoding
        if from_pixels:
            from dm_control.suite.wrappers import pixels

            self.render_kwargs = {"camera_id": camera_id, **(render_kwargs or {})}
            env = pixels.Wrapper(env, pixels_only=pixels_only, render_kwargs=self.render_kwargs)
        return env

    def _make_specs(self, env: Any) -> None:
        obs = dm_spec_to_spec(env.observation_spec(), device=self.device)
        self.observation_spec = Composite(dict(obs.items()), shape=self.batch_size, device=self.device)
        reward = dm_spec_to_spec(env.reward_spec(), device=self.device)
        self.reward_spec = reward if reward.ndim else Unbounded((1,), dtype=reward.dtype, device=self.device)
        done = Categorical(2, (*self.batch_size, 1), dtype=torch.bool, device=self.device)
        self.done_spec = Composite(
            done=done.clone(), terminated=done.clone(), truncated=done.clone(), shape=self.batch_size
        )
        self.action_spec = dm_spec_to_spec(
            env.action_spec(),
            device=self.device,
            categorical_action_encoding=self.categorical_action_encoding,
        )
        self._obs_layout = [(key, spec.shape) for key, spec in self.observation_spec.items()]
        self._onehot_action = isinstance(self.full_action_spec["action"], OneHot)
        self._cpu = self.device is None or self.device.type == "cpu"

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        task = getattr(self._env, "_env", self._env).task
        if not hasattr(task, "_random"):
            raise RuntimeError(f"cannot seed {type(task).__name__}: it has no _random attribute")
        task._random = np.random.RandomState(seed)
        self.reset()

    def _obs_dict(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {key: _to_tensor(observation[key], shape) for key, shape in self._obs_layout}

    def _finish(self, out: dict[str, Any]) -> TensorDict:
        td = fast_td(out, self.batch_size, self.device)
        return td if self._cpu else td.to(self.device)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        timestep = self._env.reset()
        out = self._obs_dict(timestep.observation)
        flags = np.zeros((3, 1), dtype=bool)
        out["done"], out["terminated"], out["truncated"] = (torch.from_numpy(f) for f in flags)
        return self._finish(out)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = (
            tensordict.get("action")
            if type(tensordict) is not TensorDict
            else tensordict._tensordict["action"]
        )
        if action.requires_grad:
            action = action.detach()
        if not self._cpu:
            action = action.cpu()
        if self._onehot_action:
            action = action.argmax(-1)
        action = action.numpy()
        env = self._env
        reward = 0.0
        for _ in range(self.wrapper_frame_skip):
            timestep = env.step(action)
            if timestep.reward is not None:
                reward += timestep.reward
            if timestep.step_type == 2:  # dm_env.StepType.LAST
                break
        out = self._obs_dict(timestep.observation)
        out["reward"] = torch.from_numpy(np.array([reward], dtype=self._reward_np_dtype))
        # One numpy buffer, three tensors on its rows: cheaper than three torch allocations.
        flags = np.zeros((3, 1), dtype=bool)
        if timestep.step_type == 2:
            truncated = bool(np.isclose(timestep.discount, 1.0))
            flags[0] = True
            flags[1] = not truncated
            flags[2] = truncated
        from_numpy = torch.from_numpy
        out["done"], out["terminated"], out["truncated"] = (
            from_numpy(flags[0]),
            from_numpy(flags[1]),
            from_numpy(flags[2]),
        )
        return self._finish(out)

    @property
    def _reward_np_dtype(self) -> np.dtype:
        dtype = self.__dict__.get("_reward_np")
        if dtype is None:
            dtype = self.__dict__["_reward_np"] = torch.empty((), dtype=self.reward_spec.dtype).numpy().dtype
        return dtype

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={type(self._env).__name__}, batch_size={self.batch_size})"


class DMControlEnv(DMControlWrapper):
    """A dm_control suite env built from its domain and task names (``DMControlEnv("cheetah", "run")``).

    Args:
        env_name: the domain (``"cheetah"``, ``"cartpole"``...).
        task_name: the task (``"run"``, ``"balance"``...).
        **kwargs: ``from_pixels``, ``pixels_only``, ``frame_skip``, ``camera_id``, ``render_kwargs``,
            ``device``, ``batch_size``, ``categorical_action_encoding``; other keywords go to the task
            (``task_kwargs``, e.g. ``time_limit``).

    Examples:
        >>> import pytest
        >>> _ = pytest.importorskip("dm_control")  # the `dmc` extra
        >>> env = DMControlEnv("cheetah", "run")
        >>> env.action_spec.shape, env.observation_spec["position"].shape
        (torch.Size([6]), torch.Size([8]))
    """

    def __init__(self, env_name: str, task_name: str, **kwargs: Any) -> None:
        _require_dm_control()
        kwargs["env_name"] = env_name
        kwargs["task_name"] = task_name
        super().__init__(**kwargs)

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        _require_dm_control()
        pairs = self.available_envs_list()
        key = (kwargs.get("env_name"), kwargs.get("task_name"))
        if key not in pairs:
            tasks = sorted(t for d, t in pairs if d == key[0])
            hint = f"tasks of {key[0]!r}: {tasks}" if tasks else f"domains: {sorted({d for d, _ in pairs})}"
            raise ValueError(f"unknown dm_control env {key[0]!r}/{key[1]!r}; {hint}")
        super()._check_kwargs({k: v for k, v in kwargs.items() if k != "env"})

    def _build_env(  # type: ignore[override]
        self,
        env_name: str,
        task_name: str,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        categorical_action_encoding: bool = False,
        _seed: int | None = None,
        **task_kwargs: Any,
    ) -> Any:
        from dm_control import suite

        self.env_name = env_name
        self.task_name = task_name
        if _seed is not None:
            task_kwargs["random"] = np.random.RandomState(_seed)
        env = suite.load(env_name, task_name, task_kwargs=task_kwargs)
        return super()._build_env(
            env,
            from_pixels=from_pixels,
            pixels_only=pixels_only,
            camera_id=camera_id,
            render_kwargs=render_kwargs,
            categorical_action_encoding=categorical_action_encoding,
        )

    def __repr__(self) -> str:
        return f"DMControlEnv(env={self.env_name}, task={self.task_name}, batch_size={self.batch_size})"
