"""Model-predictive-control planners: ``MPCPlannerBase``, ``CEMPlanner``, ``MPPIPlanner``."""

from tdrl.modules.planners.cem import CEMPlanner
from tdrl.modules.planners.common import MPCPlannerBase
from tdrl.modules.planners.mppi import MPPIPlanner

__all__ = ["CEMPlanner", "MPCPlannerBase", "MPPIPlanner"]
