"""Scale mappings (``biased_softplus``, ``mappings``...); tensordict's implementations, as TorchRL uses."""

from tdrl.modules.utils.mappings import biased_softplus, expln, inv_softplus, mappings

__all__ = ["biased_softplus", "expln", "inv_softplus", "mappings"]
