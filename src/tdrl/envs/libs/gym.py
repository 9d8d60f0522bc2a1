"""gymnasium (>= 1.0) environments: ``GymEnv`` (by id), ``GymWrapper`` (an instance), info readers.

Observation keys follow TorchRL: ``"observation"`` for a non-dict space, the dict's keys for ``Dict``
spaces, ``"pixels"`` for rendered frames (``from_pixels``). ``terminated`` and ``truncated`` are kept
apart, ``done`` is their OR.

Vector envs (``GymEnv(..., num_envs=n)`` or wrapping a ``gymnasium.vector.VectorEnv``) have batch size
``(n,)``. Sub-envs that end are reset through ``reset(options={"reset_mask": ...})``, which also cancels
a pending NEXT_STEP autoreset, so the hidden "reset step" of gymnasium's default mode never shows up as a
transition. In SAME_STEP mode the true last observation is read from ``info["final_obs"]`` and the reset
observation the env already produced is handed out at the next ``reset``. ``GymEnv(num_envs=n)`` builds a
``SyncVectorEnv`` with autoreset disabled (TorchRL uses subprocesses; in-process is faster for cheap envs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.data import Categorical, Composite, MultiCategorical, MultiOneHot, OneHot, Unbounded
from tdrl.envs._fast_td import fast_td
from tdrl.envs.gym_like import GymLikeEnv, default_info_dict_reader
from tdrl.envs.libs._gym_spaces import register_gym_spec_conversion, space_to_spec

__all__ = ["GymEnv", "GymWrapper", "gym_backend", "register_gym_spec_conversion", "set_gym_backend"]


def _gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError as err:  # pragma: no cover - gymnasium is a core dependency
        raise ImportError(
            "gymnasium is required for GymEnv/GymWrapper: pip install 'gymnasium>=1.0'"
        ) from err
    return gymnasium


class set_gym_backend:  # noqa: N801 - TorchRL's name
    """Selects the gym library; tdrl supports gymnasium only, so this checks the request and does nothing else.

    Usable as a context manager, a decorator or through ``.set()``, like TorchRL's.

    Args:
        backend: ``"gymnasium"`` or the ``gymnasium`` module.

    Examples:
        >>> with set_gym_backend("gymnasium"):
        ...     gym_backend().__name__
        'gymnasium'
    """

    def __init__(self, backend: str | Any) -> None:
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
        if name != "gymnasium":
            raise ValueError(f"tdrl supports the gymnasium backend only (>= 1.0), got {name!r}")
        self.backend = _gymnasium()

    def set(self) -> None:
        """Selects the backend for the rest of the process (gymnasium, the only one, stays selected)."""

    def __enter__(self) -> set_gym_backend:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Callable) -> Callable:
        return fn


def gym_backend(submodule: str | None = None) -> Any:
    """The gym module in use (gymnasium), or one of its submodules (``gym_backend("spaces")``).

    Examples:
        >>> gym_backend("spaces").Discrete(2).n
        np.int64(2)
    """
    gymnasium = _gymnasium()
    if submodule is None:
        return gymnasium
    import importlib

    return importlib.import_module(f"gymnasium.{submodule}")


def _reward_space(env: Any, batched: bool) -> Any:
    """The env's ``reward_space`` (found through gymnasium's wrappers), ``None`` for scalar rewards."""
    name = "single_reward_space" if batched else "reward_space"
    space = getattr(env, "__dict__", {}).get(name)
    if space is None and hasattr(env, "get_wrapper_attr"):
        try:
            space = env.get_wrapper_attr(name)
        except AttributeError:
            space = None
    return space


def _autoreset_mode(env: Any) -> str | None:
    mode = getattr(env, "autoreset_mode", None) or env.metadata.get("autoreset_mode")
    return None if mode is None else str(getattr(mode, "value", mode)).lower()


class GymWrapper(GymLikeEnv):
    """Wraps a gymnasium ``Env`` or ``VectorEnv`` (a ``GymLikeEnv`` with its own fast ``_step``).

    Args:
        env: the environment.
        categorical_action_encoding: discrete actions as indices (``Categorical``) instead of one-hot.
        from_pixels: add rendered frames under ``"pixels"`` (the env must render ``rgb_array``).
        pixels_only: with ``from_pixels``, drop the other observations.
        frame_skip: repeat each action (rewards summed, stops at the end of an episode).
        device: device of the produced tensors.
        batch_size: must match the env (``(num_envs,)`` for vector envs) when given.
        allow_done_after_reset: see ``EnvBase``.

    Examples:
        >>> import gymnasium as gym
        >>> env = GymWrapper(gym.make("CartPole-v1"))
        >>> env.action_spec.shape, env.observation_spec["observation"].shape
        (torch.Size([2]), torch.Size([4]))
    """

    git_url = "https://github.com/Farama-Foundation/Gymnasium"
    libname = "gymnasium"

    def __init__(self, env: Any = None, categorical_action_encoding: bool = False, **kwargs: Any) -> None:
        if env is not None:
            kwargs["env"] = env
        self.__dict__["_categorical"] = categorical_action_encoding
        self.__dict__["info_dict_reader"] = []
        self.__dict__["_pending_reset_obs"] = None
        super().__init__(**kwargs)

    # ------------------------------------------------------------------ construction
    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        gymnasium = _gymnasium()
        env = kwargs.get("env")
        if env is not None and not isinstance(env, (gymnasium.Env, gymnasium.vector.VectorEnv)):
            raise TypeError(f"GymWrapper: env must be a gymnasium Env or VectorEnv, got {type(env).__name__}")

    def _build_env(
        self, env: Any = None, *, from_pixels: bool = False, pixels_only: bool = True, **kwargs: Any
    ) -> Any:
        if env is None:
            raise TypeError("GymWrapper needs env=<a gymnasium env>")
        if kwargs:
            raise TypeError(f"GymWrapper got unexpected arguments {sorted(kwargs)}")
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only
        gymnasium = _gymnasium()
        self._is_batched = isinstance(env, gymnasium.vector.VectorEnv)
        if from_pixels and self._is_batched:
            raise ValueError(
                "from_pixels on a vector env: add the frames per sub-env instead, e.g. "
                "GymEnv(id, num_envs=n, from_pixels=True) or AddRenderObservation in the env factory"
            )
        if from_pixels:
            env = self._add_pixels(env, pixels_only)
        return env

    @staticmethod
    def _add_pixels(env: Any, pixels_only: bool) -> Any:
        from gymnasium.wrappers import AddRenderObservation

        if env.render_mode != "rgb_array":
            raise ValueError(
                f"from_pixels needs an env created with render_mode='rgb_array', got {env.render_mode!r}"
            )
        return AddRenderObservation(env, render_only=pixels_only, render_key="pixels", obs_key="observation")

    def _make_specs(self, env: Any) -> None:
        batch: tuple[int, ...] = ()
        if self._is_batched:
            batch = (int(env.num_envs),)
            if self.batch_size and tuple(self.batch_size) != batch:
                raise ValueError(f"batch_size {tuple(self.batch_size)} does not match num_envs={batch[0]}")
            self.batch_size = batch
            obs_space, act_space = env.single_observation_space, env.single_action_space
            self._mode = _autoreset_mode(env)
            if self.wrapper_frame_skip > 1:
                raise ValueError("frame_skip is not supported on gymnasium vector envs")
        else:
            if self.batch_size:
                raise ValueError(
                    f"a single gymnasium env has an empty batch_size, got {tuple(self.batch_size)}"
                )
            obs_space, act_space = env.observation_space, env.action_space
            self._mode = None
        dev = self.device
        obs = space_to_spec(obs_space, device=dev, batch=batch)
        if not isinstance(obs, Composite):
            key = "pixels" if self.from_pixels and self.pixels_only else "observation"
            obs = Composite({key: obs}, shape=batch, device=dev)
        self.observation_spec = obs
        action = space_to_spec(
            act_space, categorical_action_encoding=self._categorical, device=dev, batch=batch
        )
        self.action_spec = action
        reward_space = _reward_space(env, self._is_batched)
        if reward_space is None:
            self.reward_spec = Unbounded((*batch, 1), dtype=torch.float32, device=dev)
        else:  # multi-objective envs (MO-Gymnasium) declare a vector reward space
            self.reward_spec = space_to_spec(reward_space, device=dev, batch=batch)
        done = Categorical(2, (*batch, 1), dtype=torch.bool, device=dev)
        self.done_spec = Composite(done=done, terminated=done.clone(), truncated=done.clone(), shape=batch)
        self._refresh_layout()

    def _refresh_layout(self) -> None:
        self._obs_layout = [(k, spec.shape, spec.dtype) for k, spec in self.observation_spec.items()]
        self._obs_is_dict = not (
            len(self._obs_layout) == 1 and self._obs_layout[0][0] in ("observation", "pixels")
        )
        self._obs_is_dict = self._obs_is_dict or (self.from_pixels and not self.pixels_only)
        action = self.full_action_spec["action"]
        if isinstance(action, MultiOneHot):
            self._action_kind = "multionehot"
        elif isinstance(action, OneHot):
            self._action_kind = "onehot"
        elif isinstance(action, Categorical) and not isinstance(action, MultiCategorical):
            self._action_kind = "index"
        else:
            self._action_kind = "array"
        self._action_spec_leaf = action
        reward = self.full_reward_spec["reward"]
        self._reward_shape, self._reward_dtype = reward.shape, torch.empty((), dtype=reward.dtype).numpy().dtype

    # ------------------------------------------------------------------ info readers
    def set_info_dict_reader(
        self, info_dict_reader: Callable | None = None, ignore_private: bool = True
    ) -> GymWrapper:
        """Adds a reader of the ``info`` dict (``default_info_dict_reader()`` when ``None``).

        Readers are called as ``reader(info, tensordict)`` after each reset and step; their ``info_spec``
        (inferred from one step when missing) is added to the observation spec.
        """
        if info_dict_reader is None:
            info_dict_reader = default_info_dict_reader(ignore_private=ignore_private)
        self.info_dict_reader.append(info_dict_reader)
        spec = getattr(info_dict_reader, "info_spec", None)
        if spec is None:
            spec = info_dict_reader.infer_spec(self._sample_info(), self.batch_size)
        self.observation_spec = (
            self.observation_spec.update(spec) if spec is not None else self.observation_spec
        )
        self._refresh_layout()
        self.empty_cache()
        return self

    def _sample_info(self) -> dict[str, Any]:
        _, info = self._env.reset()
        action = self._to_np_action(self.full_action_spec["action"].rand())
        info = self._env.step(action)[-1]
        self._env.reset()
        return info

    # ------------------------------------------------------------------ reading / writing data
    def _obs_dict(self, obs: Any) -> dict[str, torch.Tensor]:
        if not self._obs_is_dict:
            key, shape, dtype = self._obs_layout[0]
            return {key: _to_tensor(obs, shape, dtype)}
        return {
            key: _to_tensor(obs[key], shape, dtype) for key, shape, dtype in self._obs_layout if key in obs
        }

    def _to_np_action(self, action: torch.Tensor) -> Any:
        if action.requires_grad:
            action = action.detach()
        if action.device.type != "cpu":
            action = action.cpu()
        kind = self._action_kind
        if kind == "onehot":
            action = action.argmax(-1)
        elif kind == "multionehot":
            action = torch.stack([a.argmax(-1) for a in action.split(self._action_spec_leaf.nvec, -1)], -1)
        array = action.numpy()
        if not self._is_batched and kind in ("onehot", "index"):
            return int(array)
        return array

    def _flags(self, terminated: Any, truncated: Any) -> dict[str, torch.Tensor]:
        shape = (*self.batch_size, 1)
        term = torch.from_numpy(np.array(terminated, dtype=bool).reshape(shape))
        trunc = torch.from_numpy(np.array(truncated, dtype=bool).reshape(shape))
        return {"done": term | trunc, "terminated": term, "truncated": trunc}

    def _finish(self, out: dict[str, Any], info: Any) -> TensorDictBase:
        td = fast_td(out, self.batch_size, self.device)
        if self.device is not None and self.device.type != "cpu":
            td = td.to(self.device)
        for reader in self.info_dict_reader:
            reader(info, td)
        return td

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is not None and self._is_batched:
            mask = mask.reshape(self.batch_size).cpu().numpy()
            if mask.all():
                mask = None
        pending = self._pending_reset_obs
        self._pending_reset_obs = None
        if mask is not None and pending is not None:
            # SAME_STEP: the env already reset the finished sub-envs during the last step.
            obs, info = pending
        elif mask is not None:
            if not mask.any():
                mask = None
            elif self._mode == "nextstep" and not self._supports_reset_mask():
                raise RuntimeError(
                    f"{type(self._env).__name__} cannot reset a subset of its sub-envs (no reset_mask option); "
                    "use gymnasium.make_vec(..., vectorization_mode='sync') or GymEnv(id, num_envs=n)"
                )
            obs, info = self._env.reset(options={"reset_mask": mask}, **kwargs)
        if mask is None:
            obs, info = self._env.reset(**kwargs)
        out = self._obs_dict(obs)
        zeros = np.zeros((*self.batch_size, 1), dtype=bool)
        out.update(self._flags(zeros, zeros))
        if self._mode == "disabled" and getattr(self, "_ended", None) is not None:
            self._ended = np.zeros(self.batch_size, dtype=bool) if mask is None else self._ended & ~mask
        return self._finish(out, info)

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Resets the finished sub-envs of a vector env (see ``EnvBase.maybe_reset``), on a short path.

        On the common layout (a plain ``TensorDict``, root-level observations and done flags, no info reader,
        CPU) the finished sub-envs are reset with one ``reset(options={"reset_mask": ...})`` call and their
        entries replaced in place of the generic partial-reset pipeline; the result is the same.
        """
        if not self._fast_reset_ok(tensordict):
            return super().maybe_reset(tensordict)
        d = tensordict._tensordict
        done = d.get("done")
        if done is None or done.shape != self._flag_shape or not bool(done.any()):
            return super().maybe_reset(tensordict) if done is None else tensordict
        mask = done.reshape(self.batch_size).numpy()
        if mask.all():
            return super().maybe_reset(tensordict)  # everything ends: the full reset
        obs, _ = self._env.reset(options={"reset_mask": mask.copy()})
        for key, value in self._obs_dict(obs).items():
            old = d.get(key)
            if old is None or old.shape != value.shape:
                old = torch.zeros_like(value)
            m = done.reshape(*done.shape[:1], *((1,) * (value.ndim - 1)))
            d[key] = torch.where(m, value, old.to(value.dtype))
        keep = ~done
        for key in ("done", "terminated", "truncated"):
            flag = d.get(key)
            d[key] = keep.clone() if flag is None else flag & keep
        if self._mode == "disabled" and getattr(self, "_ended", None) is not None:
            self._ended = self._ended & ~mask
        return tensordict

    def _fast_reset_ok(self, tensordict: TensorDictBase) -> bool:
        ok = self._cache.get("fast_reset")
        if ok is None:
            ok = (
                self._is_batched
                and type(self)._reset is GymWrapper._reset
                and not self.info_dict_reader
                and self._mode in ("disabled", "nextstep")
                and self._supports_reset_mask()
                and (self.device is None or self.device.type == "cpu")
                and self.step_plan.simple_done
                and list(self.reset_keys) == ["_reset"]
                and all(type(key) is str for key, _, _ in self._obs_layout)
            )
            self._cache["fast_reset"] = ok
            self.__dict__["_flag_shape"] = torch.Size((*self.batch_size, 1))
        return ok and type(tensordict) is TensorDict and tensordict._batch_size == self.batch_size

    def _output_transform(self, step_outputs_tuple: tuple) -> tuple:
        """Gymnasium's ``(obs, reward, terminated, truncated, info)`` with ``done`` inserted."""
        obs, reward, terminated, truncated, info = step_outputs_tuple
        return obs, reward, terminated, truncated, np.logical_or(terminated, truncated), info

    def _reset_output_transform(self, reset_outputs_tuple: tuple) -> tuple:
        """Gymnasium's ``(obs, info)``, as it is."""
        return reset_outputs_tuple

    def _supports_reset_mask(self) -> bool:
        vector = _gymnasium().vector
        return isinstance(self._env, (vector.SyncVectorEnv, vector.AsyncVectorEnv))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        d = tensordict._tensordict if type(tensordict) is TensorDict else None
        action = self._to_np_action(d["action"] if d is not None else tensordict.get("action"))
        if self._mode == "disabled":
            self._reset_skipped_ended(d.get("_step") if d is not None else tensordict.get("_step", None))
        reward = 0.0
        for _ in range(self.wrapper_frame_skip):
            obs, r, terminated, truncated, info = self._env.step(action)
            reward = reward + r
            if not self._is_batched and (terminated or truncated):
                break
        if self._mode == "samestep" and "final_obs" in info:
            obs = self._split_same_step(obs, info)
        out = self._obs_dict(obs)
        out["reward"] = torch.from_numpy(np.array(reward, dtype=self._reward_dtype).reshape(self._reward_shape))
        flags = self._flags(terminated, truncated)
        out.update(flags)
        if self._mode == "disabled":
            self._ended = flags["done"].reshape(self.batch_size).numpy().copy()
        return self._finish(out, info)

    def _reset_skipped_ended(self, partial: torch.Tensor | None) -> None:
        """Resets the finished sub-envs a ``"_step"`` mask skips, before a vector step.

        A vector env with autoreset disabled asserts when a finished sub-env is stepped, and it can only
        step all sub-envs at once. The rollout engine skips finished sub-envs with ``"_step"`` (as
        TorchRL's ``break_when_all_done`` does) and discards what they return, so they are reset here
        to let the others step.
        """
        ended = getattr(self, "_ended", None)
        if partial is None or ended is None:
            return
        skipped = ~partial.reshape(self.batch_size).cpu().numpy() & ended
        if skipped.any():
            self._env.reset(options={"reset_mask": skipped})
            self._ended = ended & ~skipped

    def _split_same_step(self, obs: Any, info: dict[str, Any]) -> Any:
        """Keeps the reset observation for later and returns the true last observation of ended sub-envs."""
        ended = np.asarray(info.get("_final_obs", np.zeros(self.batch_size[0], dtype=bool)))
        self._pending_reset_obs = (obs, info)
        final = info["final_obs"]
        if isinstance(obs, dict):
            merged = {k: np.array(v, copy=True) for k, v in obs.items()}
            for i in np.flatnonzero(ended):
                for k in merged:
                    merged[k][i] = final[i][k]
            return merged
        merged = np.array(obs, copy=True)
        for i in np.flatnonzero(ended):
            merged[i] = final[i]
        return merged

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        self._env.reset(seed=seed)
        space = self._env.single_action_space if self._is_batched else self._env.action_space
        space.seed(seed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self._env}, batch_size={self.batch_size}, device={self.device})"


def _to_tensor(value: Any, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
    if type(value) is np.ndarray:
        flags = value.flags
        out = torch.from_numpy(value if flags.owndata and flags.writeable else value.copy())
    else:
        out = torch.as_tensor(np.asarray(value))
    if out.dtype != dtype:
        out = out.to(dtype)
    return out if out.shape == shape else out.reshape(shape)


class GymEnv(GymWrapper):
    """A gymnasium env built from its id: ``GymEnv("CartPole-v1")``, ``GymEnv("Pendulum-v1", num_envs=4)``.

    Args:
        env_name: the gymnasium id.
        **kwargs: ``num_envs`` (a vector env with autoreset disabled), ``from_pixels``, ``pixels_only``,
            ``frame_skip``, ``categorical_action_encoding``, ``device``, ``batch_size``; the rest goes to
            ``gymnasium.make``.

    Examples:
        >>> env = GymEnv("Pendulum-v1")
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([3, 3])
        >>> GymEnv("CartPole-v1", num_envs=2).rollout(2)["action"].shape
        torch.Size([2, 2, 2])
    """

    def __init__(self, env_name: str, **kwargs: Any) -> None:
        kwargs["env_name"] = env_name
        super().__init__(**kwargs)

    @property
    def available_envs(self) -> list[str]:
        """Registered gymnasium ids."""
        return list(_gymnasium().envs.registry.keys())

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        gymnasium = _gymnasium()
        name = kwargs.get("env_name")
        if name not in gymnasium.envs.registry:
            close = [k for k in gymnasium.envs.registry if name and name.split("-")[0].lower() in k.lower()]
            raise ValueError(
                f"unknown gymnasium env {name!r}" + (f"; similar ids: {close[:8]}" if close else "")
            )

    def _build_env(  # type: ignore[override]
        self,
        env_name: str,
        *,
        num_envs: int | None = None,
        from_pixels: bool = False,
        pixels_only: bool = True,
        **make_kwargs: Any,
    ) -> Any:
        gymnasium = _gymnasium()
        self.env_name = env_name
        if from_pixels:
            make_kwargs.setdefault("render_mode", "rgb_array")

        def make() -> Any:
            env = gymnasium.make(env_name, **make_kwargs)
            return self._add_pixels(env, pixels_only) if from_pixels else env

        if num_envs is not None:
            if not isinstance(num_envs, int) or num_envs < 1:
                raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
            vector = gymnasium.vector
            env = vector.SyncVectorEnv([make] * num_envs, autoreset_mode=vector.AutoresetMode.DISABLED)
            self.from_pixels, self.pixels_only, self._is_batched = from_pixels, pixels_only, True
            return env
        env = make()
        self.from_pixels, self.pixels_only, self._is_batched = from_pixels, pixels_only, False
        return env

    def __repr__(self) -> str:
        return f"GymEnv(env={self.env_name}, batch_size={self.batch_size}, device={self.device})"
