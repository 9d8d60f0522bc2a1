"""``ModuleTransform``: a ``TensorDictModule`` run on every step output (or on the action input)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import TensorSpec
from tdrl.envs.transforms._base import Transform

__all__ = ["ModuleTransform"]

SpecMap = TensorSpec | Callable[[Any], Any] | None


def _map_spec(how: SpecMap, spec: Any) -> Any:
    if how is None:
        return spec
    return how if isinstance(how, TensorSpec) else how(spec)


class ModuleTransform(Transform):
    """Runs ``module`` (a tensordict module) on each step/reset output, or, with ``inverse=True``, on the step input.

    Its keys are the module's: forward ``in_keys``/``out_keys`` are ``module.in_keys``/``module.out_keys``
    (inverse: ``out_keys_inv = module.in_keys``, ``in_keys_inv = module.out_keys``). The specs of what the
    module writes are given by the ``*_spec_transform`` arguments: a spec replaces the env's, a callable
    maps it.

    Keyword Args:
        module: the module (exclusive with ``module_factory``).
        module_factory: builds the module (e.g. inside a worker process).
        no_grad: run under ``torch.no_grad()``.
        inverse: apply the module to the step input (actions) instead of the outputs.
        device: the device the module and its input are moved to (the output stays there).
        use_ray_service: must be False here (TorchRL's Ray-actor variant is not provided; see differences.md).
        actor_name: accepted with ``use_ray_service`` only.
        num_gpus: accepted with ``use_ray_service`` only.
        num_cpus: accepted with ``use_ray_service`` only.
        observation_spec_transform: spec of the observations after the module (or a map of it).
        action_spec_transform: same for the action spec.
        reward_spec_transform: same for the reward spec.
        done_spec_transform: same for the done spec.
        state_spec_transform: same for the state spec.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Unbounded
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> module = TensorDictModule(lambda th: th.cos(), in_keys=["th"], out_keys=["cos_th"])
        >>> def add_cos(spec):
        ...     spec["cos_th"] = Unbounded(spec["th"].shape)
        ...     return spec
        >>> env = TransformedEnv(PendulumEnv(), ModuleTransform(module=module, observation_spec_transform=add_cos))
        >>> r = env.rollout(3)
        >>> torch.allclose(r["next", "cos_th"], r["next", "th"].cos())
        True
    """

    def __init__(
        self,
        *,
        module: Any = None,
        module_factory: Callable[[], Any] | None = None,
        no_grad: bool = False,
        inverse: bool = False,
        device: torch.device | str | None = None,
        use_ray_service: bool = False,
        actor_name: str | None = None,
        num_gpus: int | None = None,
        num_cpus: int | None = None,
        observation_spec_transform: SpecMap = None,
        action_spec_transform: SpecMap = None,
        reward_spec_transform: SpecMap = None,
        done_spec_transform: SpecMap = None,
        state_spec_transform: SpecMap = None,
    ) -> None:
        if (module is None) == (module_factory is None):
            raise ValueError("ModuleTransform: give exactly one of module or module_factory")
        if use_ray_service:
            raise ValueError(
                "ModuleTransform(use_ray_service=True) is not provided by tdrl: run the module in-process "
                "(use_ray_service=False) or wrap it in your own Ray actor"
            )
        del actor_name, num_gpus, num_cpus
        self.__dict__["_module_inverse"] = bool(inverse)
        super().__init__()
        self.module = module if module is not None else module_factory()
        self._io_device = None if device is None else torch.device(device)
        if self._io_device is not None:
            self.module = self.module.to(self._io_device)
        self.no_grad = no_grad
        self.inverse = bool(inverse)
        self.observation_spec_transform = observation_spec_transform
        self.action_spec_transform = action_spec_transform
        self.reward_spec_transform = reward_spec_transform
        self.done_spec_transform = done_spec_transform
        self.state_spec_transform = state_spec_transform

    def _module_keys(self, name: str, forward_side: bool) -> list[NestedKey]:
        module = self._modules.get("module")
        if module is None or self.__dict__["_module_inverse"] == forward_side:
            return []
        return list(getattr(module, name))

    @property
    def in_keys(self) -> list[NestedKey]:
        return self._module_keys("in_keys", forward_side=True)

    @in_keys.setter
    def in_keys(self, value: Any) -> None:
        if value:
            raise RuntimeError(f"ModuleTransform: in_keys come from the module, cannot set {value}")

    @property
    def out_keys(self) -> list[NestedKey]:
        return self._module_keys("out_keys", forward_side=True)

    @out_keys.setter
    def out_keys(self, value: Any) -> None:
        if value:
            raise RuntimeError(f"ModuleTransform: out_keys come from the module, cannot set {value}")

    @property
    def in_keys_inv(self) -> list[NestedKey]:
        return self._module_keys("out_keys", forward_side=False)

    @in_keys_inv.setter
    def in_keys_inv(self, value: Any) -> None:
        if value:
            raise RuntimeError(f"ModuleTransform: in_keys_inv come from the module, cannot set {value}")

    @property
    def out_keys_inv(self) -> list[NestedKey]:
        return self._module_keys("in_keys", forward_side=False)

    @out_keys_inv.setter
    def out_keys_inv(self, value: Any) -> None:
        if value:
            raise RuntimeError(f"ModuleTransform: out_keys_inv come from the module, cannot set {value}")

    def _run(self, tensordict: TensorDictBase) -> TensorDictBase:
        grad = torch.no_grad() if self.no_grad else contextlib.nullcontext()
        with grad:
            if self._io_device is not None:
                return self.module(tensordict.to(self._io_device))
            out = self.module(tensordict)
            return tensordict if out is None else out

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict if self.inverse else self._run(next_tensordict)

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        if self.inverse or any(tensordict_reset.get(k, None) is None for k in self.in_keys):
            return tensordict_reset  # inputs absent from a reset output (rewards) skip the module
        return self._run(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.inverse or any(tensordict.get(k, None) is None for k in self.out_keys_inv):
            return tensordict
        return self._run(tensordict)

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        return _map_spec(self.observation_spec_transform, observation_spec)

    def transform_action_spec(self, action_spec: Any) -> Any:
        return _map_spec(self.action_spec_transform, action_spec)

    def transform_reward_spec(self, reward_spec: Any) -> Any:
        return _map_spec(self.reward_spec_transform, reward_spec)

    def transform_done_spec(self, done_spec: Any) -> Any:
        return _map_spec(self.done_spec_transform, done_spec)

    def transform_state_spec(self, state_spec: Any) -> Any:
        return _map_spec(self.state_spec_transform, state_spec)

    def __repr__(self) -> str:
        return f"ModuleTransform(module={self.module!r}, inverse={self.inverse})"
