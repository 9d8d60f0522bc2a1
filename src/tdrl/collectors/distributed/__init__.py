"""tdrl.collectors.distributed: collectors on Ray actors (the ``distributed`` extra)."""

from tdrl.collectors.distributed.ray import RayCollector

__all__ = ["RayCollector"]
