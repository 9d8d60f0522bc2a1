"""Value estimators: functional forms in :mod:`.functional`, TensorDict modules re-exported here."""

from tdrl.objectives.value import functional

__all__ = ["functional"]
