"""tdrl.render: policy checkpoints for rendering and the small helpers of TorchRL's ``torchrl.render``."""

from tdrl.render.checkpoint import checkpoint_hash, infer_state_dict, load_checkpoint, save_render_checkpoint
from tdrl.render.utils import (
    EnvBackendName,
    ExplorationMode,
    NotebookRenderBackendName,
    NotebookRolloutMode,
    RenderBackendName,
    RenderFormat,
    add_step_counter,
    call_with_supported_kwargs,
    import_from_string,
    key_to_string,
    parse_nested_key,
    seed_env,
)

__all__ = [
    "EnvBackendName",
    "ExplorationMode",
    "NotebookRenderBackendName",
    "NotebookRolloutMode",
    "RenderBackendName",
    "RenderFormat",
    "add_step_counter",
    "call_with_supported_kwargs",
    "checkpoint_hash",
    "import_from_string",
    "infer_state_dict",
    "key_to_string",
    "load_checkpoint",
    "parse_nested_key",
    "save_render_checkpoint",
    "seed_env",
]
