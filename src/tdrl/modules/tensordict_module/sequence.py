"""``SafeSequential``: a ``TensorDictSequential`` whose spec gathers its sub-modules' output specs."""

from __future__ import annotations

from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn

from tdrl.data import Composite
from tdrl.modules.tensordict_module.common import SafeModule

__all__ = ["SafeSequential", "gather_specs"]


def gather_specs(modules: tuple[TensorDictModule, ...]) -> Composite:
    """Merges the output specs of ``modules`` (``None`` for modules or keys without one).

    Args:
        modules: TensorDict modules.

    Returns:
        A ``Composite`` over every output key.

    Examples:
        >>> import torch
        >>> mod = TensorDictModule(torch.nn.Linear(2, 2), ["x"], ["y"])
        >>> list(gather_specs((mod,)).keys())
        ['y']
    """
    spec = Composite()
    for module in modules:
        module_spec = getattr(module, "spec", None)
        if isinstance(module_spec, Composite):
            spec.update(module_spec)
        else:
            spec.update(Composite({key: None for key in module.out_keys}))
    return spec


class SafeSequential(TensorDictSequential, SafeModule):
    """Runs TensorDict modules in order, like ``TensorDictSequential``, and exposes their merged ``spec``.

    Args:
        *modules: the modules to chain (plain callables are wrapped by ``TensorDictSequential``).
        partial_tolerant: skip modules whose inputs are missing (lazy-stacked tensordicts).
        inplace: see ``TensorDictSequential``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> seq = SafeSequential(
        ...     SafeModule(torch.nn.Linear(3, 4), ["obs"], ["hidden"]),
        ...     SafeModule(torch.nn.Linear(4, 2), ["hidden"], ["action"]),
        ... )
        >>> seq(TensorDict(obs=torch.zeros(5, 3), batch_size=[5]))["action"].shape
        torch.Size([5, 2])
        >>> sorted(seq.spec.keys())
        ['action', 'hidden']
    """

    module: nn.ModuleList

    def __init__(
        self,
        *modules: TensorDictModule,
        partial_tolerant: bool = False,
        inplace: bool | str | None = None,
    ) -> None:
        TensorDictSequential.__init__(self, *modules, partial_tolerant=partial_tolerant, inplace=inplace)
        self.register_spec(safe=False, spec=gather_specs(tuple(self.module)))
