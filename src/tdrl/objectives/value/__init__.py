"""Value estimators: functional forms in :mod:`.functional`, TensorDict modules re-exported here."""

from tdrl.objectives.value import functional
from tdrl.objectives.value._base import ValueEstimatorBase
from tdrl.objectives.value.advantages import (
    GAE,
    TD0Estimate,
    TD0Estimator,
    TD1Estimate,
    TD1Estimator,
    TDLambdaEstimate,
    TDLambdaEstimator,
    VTrace,
)
from tdrl.objectives.value.multiagent import MultiAgentGAE

__all__ = [
    "GAE",
    "MultiAgentGAE",
    "TD0Estimate",
    "TD0Estimator",
    "TD1Estimate",
    "TD1Estimator",
    "TDLambdaEstimate",
    "TDLambdaEstimator",
    "VTrace",
    "ValueEstimatorBase",
    "functional",
]
