"""Transforms for envs that reset themselves when done: ``AutoResetTransform`` (with its container
``AutoResetEnv``) and ``VecGymEnvTransform`` (vectorised gym envs that report the true last observation
in a ``"final"`` entry).

Both turn a self-resetting env's step into an ordinary one: the ``"next"`` entries hold the last
observation of the episode (or a fill value when it is lost), and the first observation of the next
episode, which the env already produced, is kept aside and handed out by the following partial reset.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.envs.common import EnvBase
from tdrl.envs.transforms._base import Transform
from tdrl.envs.transforms.transformed_env import TransformedEnv

__all__ = ["AutoResetEnv", "AutoResetTransform", "VecGymEnvTransform"]


def _prefix(key: NestedKey) -> tuple[str, ...]:
    key = unravel_key(key)
    return (key,)[:-1] if isinstance(key, str) else tuple(key[:-1])


def _leaf_name(key: NestedKey) -> str:
    key = unravel_key(key)
    return key if isinstance(key, str) else key[-1]


def _right_mask(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return mask.reshape(tuple(mask.shape) + (1,) * (value.ndim - mask.ndim)).expand_as(value)


class AutoResetTransform(Transform):
    """Makes a self-resetting env's steps ordinary: where an episode ends, the ``"next"`` observations
    (which already belong to the next episode) are replaced by a fill value and kept aside, and the next
    partial reset (``"_reset"``) hands them out without resetting the env again.

    Must sit in an :class:`AutoResetEnv`. Observations are matched to the ``"done"`` entry of their group
    (the deepest ``done`` key whose prefix they share), so multi-agent layouts work too.

    Keyword Args:
        replace: ``False`` leaves the ``"next"`` observations as the env wrote them (no fill).
        fill_float: fill of floating entries (``"nan"`` or a number; ``None``: no fill).
        fill_int: fill of signed integer entries (``None``: no fill).
        fill_bool: fill of boolean and unsigned entries (``None``: no fill).

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv
        >>> class SelfResetting(PendulumEnv):  # ends an episode every 2 steps and starts the next one itself
        ...     def _step(self, td):
        ...         out = super()._step(td)
        ...         self.n = getattr(self, "n", 0) + 1
        ...         out["done"] = out["terminated"] = torch.tensor([self.n % 2 == 0])
        ...         if out["done"].any():
        ...             out.update(super()._reset(None).exclude("done", "terminated"))
        ...         return out
        >>> env = AutoResetEnv(SelfResetting(), AutoResetTransform())
        >>> r = env.rollout(4, break_when_any_done=False)
        >>> r["next", "th"].isnan().tolist(), bool(r["th"][2] == r["next", "th"][2]) or r["th"].isnan().any().item()
        ([False, True, False, True], False)
    """

    def __init__(
        self,
        *,
        replace: bool | None = None,
        fill_float: float | str | None = "nan",
        fill_int: int | None = -1,
        fill_bool: bool | None = False,
    ) -> None:
        super().__init__()
        if replace is False:
            fill_float = fill_int = fill_bool = None
        if isinstance(fill_float, str):
            if fill_float.lower() != "nan":
                raise ValueError(f"AutoResetTransform: fill_float must be a number, 'nan' or None, got {fill_float!r}")
            fill_float = float("nan")
        self.fill_float = fill_float
        self.fill_int = fill_int
        self.fill_bool = fill_bool
        self._saved: TensorDictBase | None = None

    def _check_container(self) -> None:
        if not isinstance(self.container, AutoResetEnv):
            raise RuntimeError(
                f"AutoResetTransform must sit in an AutoResetEnv, got {type(self.container).__name__}"
            )

    def _fill(self, value: torch.Tensor) -> Any:
        if value.dtype.is_floating_point or value.dtype.is_complex:
            return self.fill_float
        if value.dtype.is_signed:
            return self.fill_int
        return self.fill_bool

    def _done_masks(self, next_tensordict: TensorDictBase) -> dict[tuple[str, ...], torch.Tensor]:
        masks = {}
        for key in self.parent.done_keys:
            if _leaf_name(key) == "done":
                done = next_tensordict.get(key, None)
                if done is not None:
                    masks[_prefix(key)] = done.reshape(done.shape[:-1]) if done.shape[-1:] == (1,) else done
        if not masks:
            raise KeyError(f"AutoResetTransform: no 'done' entry in the step output (done keys {self.parent.done_keys})")
        return masks

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._check_container()
        masks = self._done_masks(next_tensordict)
        if not any(bool(m.any()) for m in masks.values()):
            return next_tensordict
        saved = TensorDict(batch_size=next_tensordict.batch_size, device=next_tensordict.device)
        for key in self.parent.full_observation_spec.keys(True, True):
            value = next_tensordict.get(key, None)
            if value is None:
                continue
            path = unravel_key(key)
            path = (path,) if isinstance(path, str) else path
            group = max((p for p in masks if path[: len(p)] == p), key=len, default=None)
            if group is None:
                continue
            mask = masks[group]
            saved.set(key, value)
            fill = self._fill(value)
            if fill is None or not bool(mask.any()):
                next_tensordict.set(key, value.clone())
                continue
            filled = torch.where(_right_mask(mask, value), torch.full_like(value, fill), value)
            next_tensordict.set(key, filled)
        self._saved = saved
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        self._check_container()
        saved, self._saved = self._saved, None
        if saved is None:
            return tensordict_reset
        for key, value in saved.items(True, True):
            tensordict_reset.set(key, value)
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("AutoResetTransform acts on an env's steps and resets only; it has no meaning on plain data")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AutoResetEnv(TransformedEnv):
    """The container of an :class:`AutoResetTransform`: a partial reset (``"_reset"`` in the input) does not
    call the base env, whose sub-envs already started their next episode; the transform supplies the
    observations it kept aside. A full reset resets the base env.

    The base env's ``auto_reset`` flag is not inherited: ``step_and_maybe_reset`` must call the (cheap)
    partial reset that hands the kept observations out.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> env = AutoResetEnv(PendulumEnv(), AutoResetTransform())
        >>> env.rollout(3).shape
        torch.Size([3])
    """

    def __init__(self, env: EnvBase, transform: Transform | None = None, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_unwrap", False)
        super().__init__(env, transform, *args, **kwargs)
        self.__dict__["auto_reset"] = False

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        base = self.base_env
        reset_keys = base.reset_keys
        if tensordict is not None and any(k in tensordict.keys(True) for k in reset_keys):
            tensordict = tensordict.select(*self.reset_keys, *self.state_spec.keys(True, True), strict=False)
            tensordict_reset = tensordict.exclude(*reset_keys)
        else:
            tensordict_reset = base._reset(tensordict, **kwargs)
        if tensordict is None:
            tensordict = tensordict_reset.empty()
        base._complete_done(base.full_done_spec, tensordict_reset)
        return self.transform._reset(tensordict, tensordict_reset)

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        raise RuntimeError(f"{type(self).__name__} holds its AutoResetTransform last: transforms cannot be inserted")


class VecGymEnvTransform(Transform):
    """For vectorised envs that reset their finished sub-envs inside ``step`` and report the episode's true
    last observation in a ``final_name`` sub-tensordict of the step output: the ``"next"`` entries get the
    final observation back (or ``missing_obs_value`` when the env did not report it), the reset
    observation is kept, and the next partial reset (whose mask must match the done mask) restores it.

    Keyword Args:
        final_name: the entry holding the final observations (default ``"final"``); removed from the
            observation spec and the outputs.
        missing_obs_value: the fill when no final observation is reported (default NaN; 0 for non-float
            entries when NaN).
        native_autoreset: leave outputs as they are (only drop ``final_name`` on reset).

    Examples:
        >>> t = VecGymEnvTransform()
        >>> t.final_name, bool(t.missing_obs_value.isnan())
        ('final', True)
    """

    def __init__(self, final_name: str = "final", missing_obs_value: Any = float("nan"), *, native_autoreset: bool = False) -> None:
        super().__init__()
        self.final_name = final_name
        self.native_autoreset = native_autoreset
        self.missing_obs_value = torch.as_tensor(missing_obs_value)
        self._done: torch.Tensor | None = None
        self._saved_next: TensorDictBase | None = None

    def _missing_for(self, obs: torch.Tensor) -> torch.Tensor:
        value = self.missing_obs_value
        if value.dtype.is_floating_point and not obs.dtype.is_floating_point and bool(torch.isnan(value).any()):
            return torch.zeros((), dtype=obs.dtype, device=obs.device)
        return value.to(dtype=obs.dtype, device=obs.device)

    def _done_keys(self) -> list[NestedKey]:
        keys = [k for k in self.parent.done_keys if _leaf_name(k) == "done"]
        if not keys:
            raise KeyError(f"VecGymEnvTransform: the env has no 'done' entry (done keys {self.parent.done_keys})")
        return keys

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.native_autoreset:
            return next_tensordict
        done = None
        for key in self._done_keys():
            value = next_tensordict.get(key, None)
            if value is not None:
                done = value if done is None else done | value
        if done is None:
            raise KeyError(f"VecGymEnvTransform: no done entry in the step output {list(next_tensordict.keys(True, True))}")
        self._done = done
        final = next_tensordict.pop(self.final_name, None)
        self._saved_next = None
        if done.any():
            mask = done.reshape(done.shape[:-1]) if done.shape[-1:] == (1,) else done
            if final is not None:
                self._saved_next = next_tensordict.select(*final.keys(True, True)).clone()
                next_tensordict[mask] = final[mask]
            else:
                obs_keys = list(self.parent.observation_spec.keys(True, True))
                self._saved_next = next_tensordict.select(*obs_keys, strict=False).clone()
                for key in obs_keys:
                    obs = next_tensordict.get(key, None)
                    if obs is not None:
                        obs[mask] = self._missing_for(obs)
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        tensordict_reset.pop(self.final_name, None)
        if self.native_autoreset:
            return tensordict_reset
        done = self._done
        reset = done if tensordict is None else tensordict.get("_reset", done)
        if reset is None or not bool(reset.any()) or bool(reset.all()):
            return tensordict_reset  # nothing to restore, or a full reset of every sub-env
        if done is not None and bool((reset != done.reshape(reset.shape)).any()):
            raise RuntimeError(
                "VecGymEnvTransform: a partial reset must select exactly the done sub-envs of a "
                f"self-resetting vectorised env; got _reset={reset.flatten().tolist()}, "
                f"done={done.flatten().tolist()}"
            )
        if self._saved_next is None:
            raise RuntimeError(f"VecGymEnvTransform: partial reset {reset.flatten().tolist()} without a preceding done step")
        tensordict_reset.update(self._saved_next)
        self._saved_next = None
        return tensordict_reset

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        if self.final_name in observation_spec.keys():
            del observation_spec[self.final_name]
        return observation_spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("VecGymEnvTransform acts on an env's steps and resets only; it has no meaning on plain data")
