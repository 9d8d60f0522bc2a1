"""``MeanActionSelector``: Gaussian-belief interface (``obs -> {mean, var}``, ``{mean} -> action``) for
moment-matching planners such as PILCO."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from tdrl.data.tensor_specs import Composite, Unbounded
from tdrl.envs.transforms._base import Transform

__all__ = ["MeanActionSelector"]


class MeanActionSelector(Transform):
    """Turns a deterministic observation into a zero-variance belief and a belief action into its mean.

    Outputs: ``observation`` becomes ``{"mean": obs, "var": zeros(*obs.shape, D)}`` (``D`` the last dim).
    Inputs: an ``(action, "mean")`` entry, when present, becomes the plain ``action`` the env executes.

    Args:
        observation_key: the observation entry (default ``"observation"``).
        action_key: the action entry (default ``"action"``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = MeanActionSelector()
        >>> out = t(TensorDict(observation=torch.ones(2)))
        >>> out["observation", "mean"].tolist(), out["observation", "var"].shape
        ([1.0, 1.0], torch.Size([2, 2]))
        >>> t.inv(TensorDict({("action", "mean"): torch.tensor([0.5])}))["action"]
        tensor([0.5000])
    """

    def __init__(self, observation_key: str = "observation", action_key: str = "action") -> None:
        super().__init__(
            in_keys=[observation_key],
            out_keys=[(observation_key, "mean"), (observation_key, "var")],
            in_keys_inv=[action_key],
            out_keys_inv=[(action_key, "mean")],
        )
        self._observation_key = observation_key
        self._action_key = action_key

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        obs = next_tensordict.get(self._observation_key, None)
        if obs is None:
            self._missing(self._observation_key, next_tensordict)
            return next_tensordict
        if isinstance(obs, TensorDictBase):
            return next_tensordict  # already a belief
        dim = obs.shape[-1]
        del next_tensordict[self._observation_key]
        next_tensordict.set((self._observation_key, "mean"), obs)
        next_tensordict.set(
            (self._observation_key, "var"), torch.zeros(*obs.shape, dim, device=obs.device, dtype=obs.dtype)
        )
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(self._action_key, None)
        if isinstance(action, TensorDictBase):
            mean = action.get("mean", None)
            if mean is not None:
                tensordict.set(self._action_key, mean)
        return tensordict

    def check_keys(self, available: Any) -> None:
        if self._observation_key not in set(available):
            raise KeyError(
                f"MeanActionSelector: {self._observation_key!r} not found in the env; available keys: "
                f"{sorted(map(str, available))}"
            )

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        leaf = observation_spec[self._observation_key]
        dim = leaf.shape[-1]
        observation_spec[self._observation_key] = Composite(
            mean=leaf.clone(),
            var=Unbounded(shape=(*leaf.shape, dim), dtype=leaf.dtype, device=leaf.device),
            shape=leaf.shape,
        )
        return observation_spec
