"""``ConditionalSkip``: leaves the env untouched on the steps where a condition holds."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from tdrl.envs.transforms._base import Transform

__all__ = ["ConditionalSkip"]


class ConditionalSkip(Transform):
    """Skips the base env's step wherever ``cond(tensordict)`` is True (a partial step through ``"_step"``).

    Skipped sub-envs keep their state, and their step output repeats their current observation, as in
    any partial step. Only meaningful inside an env.

    Args:
        cond: maps the step input to a bool (or a bool tensor of the env's batch shape): True skips.

    Examples:
        >>> import torch
        >>> from tdrl.envs import PendulumEnv, TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(batch_size=[2]), ConditionalSkip(lambda td: torch.tensor([True, False])))
        >>> td = env.rand_action(env.reset())
        >>> out = env.step(td)
        >>> bool((out["next", "th"][0] == td["th"][0]).all()), bool((out["next", "th"][1] != td["th"][1]).any())
        (True, True)
    """

    def __init__(self, cond: Callable[[TensorDictBase], bool | torch.Tensor]) -> None:
        if not callable(cond):
            raise TypeError(f"ConditionalSkip: cond must be callable, got {type(cond).__name__}")
        super().__init__()
        self.cond = cond

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.get("_reset", None) is not None:
            return tensordict  # a reset input: the condition gates steps only
        skip = torch.as_tensor(self.cond(tensordict), dtype=torch.bool, device=tensordict.device)
        step = tensordict.get("_step", None)
        keep = ~skip if step is None else step & ~skip
        tensordict.set(
            "_step",
            keep.expand(tensordict.batch_size) if keep.ndim == 0 else keep.reshape(tensordict.batch_size),
        )
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("ConditionalSkip acts on an env's steps only; it has no meaning on plain data")
