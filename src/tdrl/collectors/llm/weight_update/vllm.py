"""``vLLMUpdater``: pushes the trainer's weights into the vLLM engine that generates for a collector."""

from __future__ import annotations

from typing import Any

import torch

from tdrl.modules.llm.policies.common import LLMWrapperBase
from tdrl.modules.llm.policies.vllm_wrapper import push_weights_to_engine
from tdrl.weight_update import WeightUpdaterBase

__all__ = ["vLLMUpdater"]


class vLLMUpdater(WeightUpdaterBase):  # noqa: N801 - TorchRL's name
    """Sends trained weights to a vLLM engine (TorchRL's ``torchrl.collectors.llm.vLLMUpdater``).

    The engine is ``vllm_engine`` or, when not given, the engine of the registered collector's policy (a
    ``vLLMWrapper``). Weights (an ``nn.Module`` such as the training ``TransformersWrapper``, a TensorDict of
    weights or a state dict) are flattened to dotted names, checked against ``model_metadata`` when it is set,
    and loaded through :func:`~tdrl.modules.llm.policies.vllm_wrapper.push_weights_to_engine` (the engine's
    ``update_weights`` or ``vllm.LLM.apply_model``).

    TorchRL broadcasts the tensors over an NCCL group to remote (Ray) engines; ``master_address``,
    ``master_port`` and ``vllm_tp_size`` are accepted for that signature, and tdrl loads the weights into
    engines in this process (``vllm.LLM``, or any engine implementing ``update_weights``).

    Args:
        master_address: kept for TorchRL compatibility.
        master_port: kept for TorchRL compatibility.
        model_metadata: ``{name: (dtype, shape)}`` of the engine's weights; pushes are checked against it.
        vllm_tp_size: kept for TorchRL compatibility (the engine shards loaded weights itself).

    Keyword Args:
        vllm_engine: the engine to update (default: the registered collector's policy's engine).

    Examples:
        >>> vLLMUpdater().all_worker_ids()
        [0]
    """

    def __init__(
        self,
        master_address: str | None = None,
        master_port: int | None = None,
        model_metadata: dict[str, tuple[torch.dtype, torch.Size]] | None = None,
        vllm_tp_size: int | None = None,
        *,
        vllm_engine: Any = None,  # noqa: ANN401
    ) -> None:
        self.master_address = master_address or "localhost"
        self.master_port = master_port
        self.model_metadata = model_metadata
        self.vllm_tp_size = 1 if vllm_tp_size is None else vllm_tp_size
        self.vllm_engine = vllm_engine

    def init(self, model_metadata: dict[str, tuple[torch.dtype, torch.Size]]) -> None:
        """Sets the ``{name: (dtype, shape)}`` metadata pushes are checked against."""
        self.model_metadata = dict(model_metadata)

    @staticmethod
    def get_model_metadata(model: torch.nn.Module) -> dict[str, tuple[torch.dtype, torch.Size]]:
        """``{name: (dtype, shape)}`` of a module's state dict (unwrapping an LLM wrapper)."""
        model = model.model if isinstance(model, LLMWrapperBase) else model
        return {k: (v.dtype, v.shape) for k, v in model.state_dict().items()}

    def all_worker_ids(self) -> list[int]:
        """One engine: ``[0]``."""
        return [0]

    def _engine(self) -> Any:  # noqa: ANN401
        if self.vllm_engine is not None:
            return self.vllm_engine
        policy = getattr(self.collector, "policy", None)
        engine = getattr(policy, "model", None)
        if engine is None:
            raise RuntimeError("vLLMUpdater has no engine: pass vllm_engine= or register a collector whose policy wraps one")
        return engine

    def _maybe_map_weights(self, weights: Any) -> Any:  # noqa: ANN401
        if isinstance(weights, LLMWrapperBase):
            weights = weights.model
        if isinstance(weights, torch.nn.Module):
            return dict(weights.state_dict())
        if hasattr(weights, "flatten_keys"):
            return dict(weights.flatten_keys(".").items())
        return dict(weights)

    def _sync_weights_with_worker(self, *, worker_id: Any = None, server_weights: Any = None) -> None:  # noqa: ANN401
        if server_weights is None:
            raise ValueError("vLLMUpdater needs weights to push: pass the trained policy or its state dict")
        if self.model_metadata is not None:
            missing = sorted(set(self.model_metadata) - set(server_weights))
            if missing:
                raise KeyError(f"the pushed weights lack {missing[:5]} (of {len(missing)}) named in model_metadata")
            for name, (dtype, shape) in self.model_metadata.items():
                value = server_weights[name]
                if value.dtype != dtype or tuple(value.shape) != tuple(shape):
                    raise ValueError(f"{name}: pushing {value.dtype}{tuple(value.shape)}, engine holds {dtype}{tuple(shape)}")
            server_weights = {k: server_weights[k] for k in self.model_metadata}
        push_weights_to_engine(self._engine(), server_weights)
