"""tdrl.render: policy checkpoints for rendering (TorchRL's ``torchrl.render`` checkpoint helpers)."""

from tdrl.render.checkpoint import checkpoint_hash, infer_state_dict, load_checkpoint, save_render_checkpoint

__all__ = ["checkpoint_hash", "infer_state_dict", "load_checkpoint", "save_render_checkpoint"]
