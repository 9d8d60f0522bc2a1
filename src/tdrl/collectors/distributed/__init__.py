"""tdrl.collectors.distributed: collectors on Ray actors (the ``distributed`` extra)."""

from tdrl.collectors.distributed.ray import DEFAULT_RAY_INIT_CONFIG, DEFAULT_REMOTE_CLASS_CONFIG, RayCollector

__all__ = ["DEFAULT_RAY_INIT_CONFIG", "DEFAULT_REMOTE_CLASS_CONFIG", "RayCollector"]
