"""tdrl.objectives.multiagent: the multi-agent losses (MAPPO, IPPO, QMIX/VDN)."""

from tdrl.objectives.multiagent.mappo import IPPOLoss, MAPPOLoss
from tdrl.objectives.multiagent.qmixer import QMixerLoss

__all__ = ["IPPOLoss", "MAPPOLoss", "QMixerLoss"]
