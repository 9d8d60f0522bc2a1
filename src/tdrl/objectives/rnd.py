"""Predictor loss of random network distillation (the exploration bonus of :class:`~tdrl.envs.transforms.RNDTransform`).

Burda et al., "Exploration by Random Network Distillation", https://arxiv.org/abs/1810.12894. Each sample
trains the predictor with probability ``update_fraction`` (the paper's 0.25), which keeps the bonus from
vanishing too fast when many environments feed the buffer.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import nn

from tdrl.envs.transforms.rnd import RunningMeanStd
from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import check_reduction

__all__ = ["RNDLoss"]


class RNDLoss(LossModule["RNDLoss._AcceptedKeys"]):
    """``loss_predictor = mean((predictor(o') - target(o'))^2)`` over a random ``update_fraction`` of samples.

    Args:
        predictor_network: the trained network (share it with the ``RNDTransform`` that scores steps).
        target_network: the frozen random network (frozen here too).

    Keyword Args:
        obs_rms: observation statistics to normalise with (pass ``transform.obs_rms`` so the predictor sees
            what the transform sees); ``None``: raw observations.
        obs_clip: clip of the normalised observations (default 5).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        update_fraction: probability that a sample enters the loss (default 0.25).

    Keys (``set_keys``): ``observation`` (default ``("next", "observation")``).

    Examples:
        >>> loss = RNDLoss(torch.nn.Linear(3, 4), torch.nn.Linear(3, 4), update_fraction=1.0)
        >>> td = TensorDict({("next", "observation"): torch.randn(5, 3)}, [5])
        >>> loss(td)["loss_predictor"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`RNDLoss`."""

        observation: NestedKey = ("next", "observation")

    def __init__(
        self,
        predictor_network: nn.Module,
        target_network: nn.Module,
        *,
        obs_rms: RunningMeanStd | None = None,
        obs_clip: float = 5.0,
        reduction: Literal["mean", "sum", "none"] = "mean",
        update_fraction: float = 0.25,
    ) -> None:
        super().__init__()
        if not 0.0 <= update_fraction <= 1.0:
            raise ValueError(f"RNDLoss: update_fraction must be in [0, 1], got {update_fraction}")
        self.predictor_network = predictor_network
        self.target_network = target_network
        self.target_network.requires_grad_(False)
        self.obs_rms = obs_rms
        self.obs_clip = obs_clip
        self.reduction = check_reduction(reduction)
        self.update_fraction = update_fraction

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.observation]

    def _out_keys(self) -> list[str]:
        return ["loss_predictor"]

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """The predictor loss of the batch (``{"loss_predictor": ...}``)."""
        obs = self._get(tensordict, self._tensor_keys.observation).float()
        if self.obs_rms is not None:
            obs = self.obs_rms.normalize(obs).clamp(-self.obs_clip, self.obs_clip)
        with torch.no_grad():
            target = self.target_network(obs)
        loss = (self.predictor_network(obs) - target).square().mean(-1)
        mask = self._mask(tensordict)
        if self.update_fraction < 1.0:
            chosen = torch.rand(loss.shape, device=loss.device) < self.update_fraction
            loss = torch.where(chosen, loss, torch.zeros_like(loss))
            # "none" keeps every position (unchosen ones are zero); the reductions average the chosen ones.
            if self.reduction != "none":
                mask = chosen if mask is None else chosen & mask.reshape(chosen.shape)
        return self._finalize(tensordict, {"loss_predictor": self._reduce(loss, mask)})
