"""Behaviour cloning of a diffusion policy: the DDPM noise-prediction (ε) objective.

Ho et al., "Denoising Diffusion Probabilistic Models" (2020, https://arxiv.org/abs/2006.11239), eq. (14);
Chi et al., "Diffusion Policy" (RSS 2023, https://arxiv.org/abs/2303.04137).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from tensordict.utils import NestedKey

from tdrl.objectives.common import LossModule
from tdrl.objectives.utils import check_reduction

__all__ = ["DiffusionBCLoss"]


class DiffusionBCLoss(LossModule["DiffusionBCLoss._AcceptedKeys"]):
    """``loss_diffusion_bc``: mean squared error between the noise added to an expert action and its prediction.

    For each sample a timestep ``t ~ U{0, K-1}`` is drawn, the expert action is noised by the forward
    process (``actor_network.module.add_noise(action, t)``) and the score network
    (``actor_network.module.score_network``) predicts the noise from ``cat([noisy_action, observation, t])``.

    Args:
        actor_network: a :class:`~tdrl.modules.DiffusionActor`, or any module whose ``.module`` has
            ``add_noise(clean_action, t) -> (noisy, noise)``, ``num_steps`` and ``score_network``.

    Keyword Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the elementwise ``[*batch, action_dim]`` errors).

    Keys (``set_keys``): ``action`` (the clean expert action) and ``observation`` (the conditioning input).

    Examples:
        >>> from tdrl.modules import DiffusionActor
        >>> loss = DiffusionBCLoss(DiffusionActor(action_dim=2, obs_dim=3, num_steps=5))
        >>> td = TensorDict(observation=torch.randn(8, 3), action=torch.randn(8, 2), batch_size=[8])
        >>> loss(td)["loss_diffusion_bc"].shape
        torch.Size([])
    """

    @dataclasses.dataclass
    class _AcceptedKeys:
        """Keys of :class:`DiffusionBCLoss`."""

        action: NestedKey = "action"
        observation: NestedKey = "observation"

    def __init__(
        self,
        actor_network: TensorDictModule,
        *,
        reduction: Literal["mean", "sum", "none"] = "mean",
    ) -> None:
        super().__init__()
        ddpm = getattr(actor_network, "module", None)
        missing = [a for a in ("add_noise", "num_steps", "score_network") if not hasattr(ddpm, a)]
        if missing:
            raise TypeError(
                f"DiffusionBCLoss: actor_network.module must provide add_noise, num_steps and score_network "
                f"(a DiffusionActor does); {type(ddpm).__name__} lacks {missing}"
            )
        self.convert_to_functional(actor_network, "actor_network")
        self.reduction = check_reduction(reduction)

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.observation, self._tensor_keys.action]

    def _out_keys(self) -> list[str]:
        return ["loss_diffusion_bc"]

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        """``{"loss_diffusion_bc": ||ε - ε_θ(x_t, obs, t)||²}`` for the batch's expert actions."""
        action = self._get(tensordict, self._tensor_keys.action)
        observation = self._get(tensordict, self._tensor_keys.observation)
        with self._swap("actor_network", "params"):
            ddpm = self.__dict__["actor_network"].module
            t = torch.randint(0, ddpm.num_steps, action.shape[:-1], device=action.device)
            noisy, noise = ddpm.add_noise(action, t)
            t_in = t.to(noisy.dtype).unsqueeze(-1)
            predicted = ddpm.score_network(torch.cat([noisy, observation, t_in], dim=-1))
        loss = F.mse_loss(predicted, noise, reduction="none")
        return self._finalize(tensordict, {"loss_diffusion_bc": self._reduce(loss, self._mask(tensordict))})
