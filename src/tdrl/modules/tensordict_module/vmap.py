"""``VmapModule``: runs a TensorDict module under ``torch.vmap`` along one batch dimension."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase

__all__ = ["VmapModule"]


class VmapModule(TensorDictModuleBase):
    """Applies ``module`` to each slice of the input along ``vmap_dim`` (vectorised with ``torch.vmap``).

    Args:
        module: a TensorDict module.
        vmap_dim: the batch dimension to map over. Defaults to the last batch dimension.
        mock: loop over ``unbind`` + ``stack`` instead of ``vmap`` (for modules ``vmap`` cannot handle).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> mod = VmapModule(TensorDictModule(torch.nn.Linear(3, 2), ["x"], ["y"]), vmap_dim=0)
        >>> mod(TensorDict(x=torch.randn(4, 5, 3), batch_size=[4, 5]))["y"].shape
        torch.Size([4, 5, 2])
    """

    def __init__(self, module: TensorDictModuleBase, vmap_dim: int | None = None, mock: bool = False) -> None:
        super().__init__()
        self.in_keys = module.in_keys
        self.out_keys = module.out_keys
        self.module = module
        self.vmap_dim = vmap_dim
        self.mock = mock

    def mock_(self, value: bool = True) -> None:
        """Switches between ``vmap`` (``False``) and a plain loop (``True``).

        Args:
            value: the new ``mock`` flag.
        """
        self.mock = value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.ndim == 0:
            raise ValueError("VmapModule needs a tensordict with at least one batch dimension.")
        dim = tensordict.ndim - 1 if self.vmap_dim is None else self.vmap_dim
        if self.mock:
            out = torch.stack([self.module(td) for td in tensordict.unbind(dim)], dim)
        else:
            out = torch.vmap(self.module, (dim,), (dim,))(tensordict)
        return tensordict.update(out)
