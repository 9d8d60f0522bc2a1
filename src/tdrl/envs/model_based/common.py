"""``ModelBasedEnvBase``: an environment whose transitions come from a (learned) world model.

The world model is a TensorDict module that reads the current state and ``"action"`` and writes the next
observation(s) and ``"reward"`` (and optionally done flags) at the root; ``_step`` keeps only the entries the
specs declare, and ``EnvBase.step`` nests them under ``"next"``. The env is not batch-locked: one instance
serves any batch (planners expand the state over candidates).
"""

from __future__ import annotations

import abc
import warnings
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.envs.common import EnvBase

__all__ = ["ModelBasedEnvBase"]


def expand_to_batch(spec: Any, base_batch: torch.Size, batch: torch.Size) -> Any:
    """A copy of ``spec`` (batched by ``base_batch``) with leading dims ``batch`` instead.

    TorchRL 0.14.1 calls ``spec.expand(batch)``, which for an unbatched ``(1,)`` action spec and ``batch=(2,)``
    yields shape ``(2,)`` instead of ``(2, 1)`` (docs/differences.md).
    """
    return spec.expand(*batch, *spec.shape[len(base_batch):]).clone()


class ModelBasedEnvBase(EnvBase):
    """Base class of model-based environments: ``step`` runs ``world_model`` on the state and action.

    Subclasses set the specs (or call :meth:`set_specs_from_env`) and implement ``_reset``.

    Args:
        world_model: module reading the state entries and ``"action"`` and writing the next observation(s)
            and ``"reward"`` (e.g. a :class:`~tdrl.modules.WorldModelWrapper`).
        params: parameters to call ``world_model`` with (``world_model(td, params=..., buffers=...)``).
        buffers: buffers to call ``world_model`` with.
        device: device of the env's tensors.
        batch_size: the env's batch size (inputs of any batch size are accepted).
        run_type_checks: check dtypes at each step.
        allow_done_after_reset: do not raise when a reset returns a done state.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Composite, Unbounded
        >>> from tdrl.modules import WorldModelWrapper
        >>> class PointMass(ModelBasedEnvBase):
        ...     def __init__(self, world_model):
        ...         super().__init__(world_model)
        ...         self.observation_spec = Composite(position=Unbounded((1,)))
        ...         self.state_spec = Composite(position=Unbounded((1,)))
        ...         self.action_spec = Unbounded((1,))
        ...         self.reward_spec = Unbounded((1,))
        ...     def _reset(self, tensordict=None, **kwargs):
        ...         return TensorDict({"position": torch.ones(1)}, [])
        >>> model = WorldModelWrapper(
        ...     TensorDictModule(lambda x, a: x + a, ["position", "action"], ["position"]),
        ...     TensorDictModule(lambda x: -x.abs(), ["position"], ["reward"]),
        ... )
        >>> env = PointMass(model)
        >>> env.rollout(3, lambda td: td.set("action", -0.5 * torch.ones(1)))["next", "position"].squeeze(-1)
        tensor([ 0.5000,  0.0000, -0.5000])
    """

    batch_locked = False

    def __init__(
        self,
        world_model: nn.Module,
        params: list[torch.Tensor] | Any | None = None,
        buffers: list[torch.Tensor] | Any | None = None,
        device: Any = "cpu",
        batch_size: torch.Size | None = None,
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
    ) -> None:
        super().__init__(
            device=device,
            batch_size=batch_size,
            run_type_checks=run_type_checks,
            allow_done_after_reset=allow_done_after_reset,
        )
        self.world_model = world_model.to(self.device) if self.device is not None else world_model
        self.world_model_params = params
        self.world_model_buffers = buffers

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Copies the input and output specs of ``env`` (moved to this env's device)."""
        output_spec = env.output_spec.clone()
        input_spec = env.input_spec.clone()
        if self.device is not None:
            output_spec = output_spec.to(self.device)
            input_spec = input_spec.to(self.device)
        self.__dict__["_output_spec"] = output_spec
        self.__dict__["_input_spec"] = input_spec
        self.empty_cache()

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Shallow copy: the world model writes the next state at the root without touching the input.
        out = tensordict.clone(recurse=False)
        if self.world_model_params is not None:
            out = self.world_model(out, params=self.world_model_params, buffers=self.world_model_buffers)
        else:
            out = self.world_model(out)
        # Done entries may be absent: the step pipeline completes them.
        keys = [
            *self.observation_spec.keys(True, True),
            *self.full_done_spec.keys(True, True),
            *self.full_reward_spec.keys(True, True),
        ]
        return out.select(*keys, strict=False)

    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """Returns the initial state (subclasses decide how: sampled, given, encoded)."""

    def _set_seed(self, seed: int | None) -> None:
        warnings.warn("Set seed isn't needed for model based environments", stacklevel=2)
