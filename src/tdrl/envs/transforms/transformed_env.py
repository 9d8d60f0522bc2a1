"""``TransformedEnv``: an env followed by a transform (its specs are the transformed base specs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl._utils.auto_unwrap import auto_unwrap_transformed_env
from tdrl.envs.common import EnvBase
from tdrl.envs.transforms._base import Compose, Transform
from tdrl.envs.utils import complete_done

__all__ = ["TransformedEnv"]


class _CallableTransform(Transform):
    """Wraps a ``td -> td`` callable given to ``append_transform``."""

    def __init__(self, func: Callable[[TensorDictBase], TensorDictBase]) -> None:
        super().__init__()
        self.func = func

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self.func(next_tensordict)

    def __repr__(self) -> str:
        return f"_CallableTransform({self.func!r})"


def _flat(transform: Transform) -> list[Transform]:
    if isinstance(transform, Compose):
        return [t for sub in transform.transforms for t in _flat(sub)]
    return [transform]


class TransformedEnv(EnvBase):
    """An environment whose outputs (and inputs, through ``inv``) go through a transform.

    Specs are the base env's specs mapped by the transform's ``transform_output_spec`` and
    ``transform_input_spec``. Transforms whose ``in_keys`` the env does not produce are rejected when they
    are attached, with the list of available keys.

    Args:
        env: the base env (a ``TransformedEnv`` is unwrapped and its transforms prepended, unless
            ``auto_unwrap=False``).
        transform: a transform (``Compose`` for several); None for an empty ``Compose``.
        cache_specs: accepted for compatibility (specs are always computed once per change).

    Keyword Args:
        auto_unwrap: unwrap a ``TransformedEnv`` given as ``env`` (default True).
        **kwargs: passed to ``EnvBase`` (``device`` is taken from the base env).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> from tdrl.envs.transforms import StepCounter
        >>> env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=5))
        >>> env.rollout(10)["next", "step_count"].squeeze(-1)
        tensor([1, 2, 3, 4, 5])
    """

    def __init__(
        self,
        env: EnvBase,
        transform: Transform | None = None,
        cache_specs: bool = True,
        *,
        auto_unwrap: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv expects an EnvBase as env, got {type(env).__name__}")
        if transform is not None and not isinstance(transform, Transform):
            raise TypeError(f"TransformedEnv expects a Transform, got {type(transform).__name__}")
        if auto_unwrap is None:
            auto_unwrap = auto_unwrap_transformed_env()
        if isinstance(env, TransformedEnv) and auto_unwrap:
            inner = [t.clone() for t in _flat(env.transform)]
            transform = Compose(*inner, *([] if transform is None else [transform]))
            env = env.base_env
        kwargs.pop("device", None)
        super().__init__(device=env.device, batch_size=env.batch_size, auto_reset=env.auto_reset, **kwargs)
        self.__dict__["_owns_base"] = True
        self.base_env = env
        self.__dict__["batch_locked"] = env.batch_locked
        self.transform = Compose() if transform is None else transform

    # ------------------------------------------------------------------ transform management
    @property
    def transform(self) -> Transform:
        """The transform applied to the base env's outputs."""
        return self._modules.get("transform")

    @transform.setter
    def transform(self, transform: Transform) -> None:
        if not isinstance(transform, Transform):
            raise TypeError(f"TransformedEnv.transform must be a Transform, got {type(transform).__name__}")
        old = self._modules.get("transform")
        if old is not None and old is not transform:
            old.reset_parent()
        transform.set_container(self)
        self._check_transform(transform)
        self._modules["transform"] = transform
        self._refresh_specs()

    def __setattr__(self, name: str, value: Any) -> None:
        # nn.Module would register a Module value directly, bypassing the property setter.
        if name == "transform":
            type(self).transform.fset(self, value)
            return
        super().__setattr__(name, value)

    def _check_transform(self, transform: Transform) -> None:
        base = self.base_env
        available: list = []
        for spec in (base.full_observation_spec, base.full_reward_spec, base.full_done_spec,
                     base.full_action_spec, base.full_state_spec):
            available.extend(spec.keys(True, True))
        try:
            transform.check_keys(available)
        except KeyError:
            transform.reset_parent()
            raise

    def append_transform(self, transform: Transform | Callable[[TensorDictBase], TensorDictBase]) -> TransformedEnv:
        """Adds a transform (or a ``td -> td`` callable) after the current ones."""
        if not isinstance(transform, Transform):
            if not callable(transform):
                raise TypeError(f"append_transform expects a Transform or a callable, got {type(transform).__name__}")
            transform = _CallableTransform(transform)
        self._add_transform(lambda compose: compose.append(transform), transform)
        return self

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        """Inserts a transform at position ``index`` of the transform list."""
        if not isinstance(transform, Transform):
            raise TypeError(f"insert_transform expects a Transform, got {type(transform).__name__}")
        self._add_transform(lambda compose: compose.insert(index, transform), transform)
        return self

    def _add_transform(self, add: Callable[[Compose], None], transform: Transform) -> None:
        """Adds ``transform`` to the (Compose-wrapped) current transform; restores it on a key error."""
        current = self.transform
        if isinstance(current, Compose):
            new = current
        else:
            current.reset_parent()
            new = Compose(current)
        add(new)
        try:
            self._check_transform(new)
        except KeyError:
            transform.reset_parent()
            if new is current:
                new.transforms = torch.nn.ModuleList([t for t in new.transforms if t is not transform])
            else:
                current.reset_parent()
            current.set_container(self)
            raise
        self._modules.pop("transform", None)
        self.transform = new

    def set_missing_tolerance(self, mode: bool = False) -> None:
        """Makes every transform skip (``True``) or reject (``False``) missing ``in_keys``."""
        self.transform.set_missing_tolerance(mode)

    def _parent_of(self, transform: Transform, extra: list[Transform] | None = None) -> TransformedEnv:
        """A view of the base env followed by the transforms that precede ``transform``."""
        preceding = [t.clone() for t in (extra or [])]
        parent = TransformedEnv(self.base_env, Compose(*preceding), auto_unwrap=False)
        parent.__dict__["_owns_base"] = False
        return parent

    # ------------------------------------------------------------------ specs
    def _refresh_specs(self) -> None:
        """Recomputes the specs from the base env's (after a transform or base spec change)."""
        base = self.base_env
        transform = self.transform
        output_spec = transform.transform_output_spec(base.output_spec.clone())
        input_spec = transform.transform_input_spec(base.input_spec.clone())
        self.__dict__["_batch_size"] = torch.Size(transform.transform_env_batch_size(base.batch_size))
        self.__dict__["_output_spec"] = output_spec
        self.__dict__["_input_spec"] = input_spec
        flat = _flat(transform)
        self.__dict__["_needs_inv"] = any(
            t.in_keys_inv or type(t)._inv_call is not Transform._inv_call for t in flat
        )
        self.__dict__["_needs_preprocess"] = any(
            type(t)._reset_env_preprocess is not Transform._reset_env_preprocess for t in flat
        )
        self.__dict__["_needs_post_mdp"] = any(
            type(t)._post_step_mdp_hooks is not Transform._post_step_mdp_hooks for t in flat
        )
        self.empty_cache()

    # ------------------------------------------------------------------ env API
    def compute_next(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The base env's ``compute_next`` on the inverse-transformed input, then the transforms' ``_step``.

        The base env's post-processing stage (reward shapes, done completion) runs once, before the
        transforms, so transforms always see complete done entries; the transformed env adds no second
        pass (transforms write the entries they declare, and ``run_type_checks`` checks them).
        """
        tensordict_in = self.transform.inv(tensordict) if self.__dict__["_needs_inv"] else tensordict
        partial = tensordict_in.get("_step", None) if self.__dict__["_needs_inv"] else None
        if partial is not None:
            next_tensordict = self._partial_base_step(tensordict_in, partial)
        else:
            next_tensordict = self.base_env.compute_next(tensordict_in)
        # "next" entries written by the policy (e.g. a recurrent state) join before the transforms run, so
        # that transforms filling missing entries (TensorDictPrimer) do not overwrite them.
        preset = tensordict.get("next", None)
        if preset is not None:
            next_tensordict.update(preset.exclude(*next_tensordict.keys(True, True)))
        next_tensordict = self.transform._step(tensordict, next_tensordict)
        if self.run_type_checks:
            self.check_step_types(next_tensordict)
        return next_tensordict

    def step_mdp(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """``step_mdp``, then the transforms' post-``step_mdp`` hooks (which may trim the stored step)."""
        tensordict_ = self.step_plan.step_mdp(next_tensordict)
        if self.__dict__["_needs_post_mdp"]:
            _, tensordict_ = self.transform._post_step_mdp_hooks(next_tensordict, tensordict_)
        return tensordict_

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        tensordict, tensordict_ = super().step_and_maybe_reset(tensordict)
        if self.__dict__["_needs_post_mdp"]:
            tensordict, tensordict_ = self.transform._post_step_mdp_hooks(tensordict, tensordict_)
        return tensordict, tensordict_

    def fake_tensordict(self) -> TensorDictBase:
        """The base layout built from the specs, mapped by the transforms' ``transform_fake_tensordict``."""
        return self.transform.transform_fake_tensordict(super().fake_tensordict())

    def check_step_input(self, tensordict: TensorDictBase, plan: Any = None) -> torch.Tensor | None:
        """:meth:`EnvBase.check_step_input`, except for a structured action (a tensordict where the spec has a
        tensor) that an inverse transform maps to the env's action (``MeanActionSelector``), as TorchRL allows."""
        if self.__dict__["_needs_inv"]:
            for key in self.action_keys:
                if isinstance(tensordict.get(key, None), TensorDictBase):
                    self._assert_tensordict_shape(tensordict)
                    return tensordict.pop("_step", None)
        return super().check_step_input(tensordict, plan)

    def _partial_base_step(self, tensordict_in: TensorDictBase, partial: torch.Tensor) -> TensorDictBase:
        """The base step under a ``"_step"`` mask written by a transform (``ConditionalSkip``): the masked-out
        sub-envs repeat their current data, as in :meth:`EnvBase.step`'s partial steps."""
        base = self.base_env
        if bool(partial.all()):
            return base.compute_next(tensordict_in.exclude("_step"))
        skipped = base._skip_step(tensordict_in)
        if not bool(partial.any()):
            return skipped
        next_tensordict = base.compute_next(tensordict_in)
        mask = partial.reshape(next_tensordict.batch_size)
        return torch.where(mask, next_tensordict, skipped.update(next_tensordict.exclude(*skipped.keys(True, True))))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # TorchRL code may call ``_step`` on a TransformedEnv directly: it is the whole transformed step.
        return self.compute_next(tensordict)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        base = self.base_env
        tensordict_in = tensordict
        if self.__dict__["_needs_preprocess"]:
            tensordict_in = self.transform._reset_env_preprocess(
                None if tensordict is None else tensordict.copy()
            )
        if tensordict_in is not None and self.__dict__["_needs_inv"]:
            tensordict_in = self.transform.inv(tensordict_in)
        tensordict_reset = base._reset(tensordict_in, **kwargs)
        complete_done(base.full_done_spec, tensordict_reset)
        return self.transform._reset(tensordict, tensordict_reset)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the base env; returns the next seed."""
        return self.base_env.set_seed(seed, static_seed=static_seed)

    def _set_seed(self, seed: int | None) -> None:
        self.base_env._set_seed(seed)

    def to(self, device: Any) -> TransformedEnv:
        self.base_env.to(device)
        self.transform.to(device)
        self.__dict__["_device"] = self.base_env.device
        self._refresh_specs()
        return self

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Closes the base env (unless this env is a transform's ``parent`` view)."""
        if self.__dict__.get("_owns_base", False) and "base_env" in self._modules:
            self.base_env.close(raise_if_closed=False)
        self.__dict__["is_closed"] = True

    @property
    def is_closed(self) -> bool:
        base = self._modules.get("base_env")
        return self.__dict__.get("is_closed", False) or (base is not None and base.is_closed)

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        self.__dict__["is_closed"] = value

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            base = self._modules.get("base_env") if "_modules" in self.__dict__ else None
            if base is None or name.startswith("__"):
                raise
            return getattr(base, name)

    def __repr__(self) -> str:
        return f"TransformedEnv(\n    env={self.base_env!r},\n    transform={self.transform!r})"


EnvBase._transformed_env_cls = TransformedEnv
