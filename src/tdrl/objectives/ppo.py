"""PPO losses: :class:`PPOLoss` (plain importance-weighted), :class:`ClipPPOLoss`, :class:`KLPENPPOLoss`.

Schulman et al., "Proximal Policy Optimization Algorithms", https://arxiv.org/abs/1707.06347.
"""

from tdrl.objectives._ppo import ClipPPOLoss, PPOLoss
from tdrl.objectives._ppo_klpen import KLPENPPOLoss

__all__ = ["ClipPPOLoss", "KLPENPPOLoss", "PPOLoss"]
