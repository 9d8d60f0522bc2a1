"""Builders behind ``network/tensordict_sequential``, ``model/tanh_module`` and ``exploration/additive_gaussian``.

They sit below both :mod:`.modules` (which also exposes them under TorchRL's private ``_make_*`` names) and
:mod:`.module_wrappers` (their configs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tensordict.nn import TensorDictSequential

from tdrl.modules import AdditiveGaussianModule, TanhModule
from tdrl.trainers.algorithms.configs.common import build, normalize_key, normalize_keys

__all__ = ["make_additive_gaussian_module", "make_tanh_module", "make_tensordict_sequential"]


def make_tensordict_sequential(
    modules: Sequence[Any] | Mapping[str, Any],
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
    partial_tolerant: bool = False,
    selected_out_keys: Any = None,
    inplace: bool | str | None = None,
) -> TensorDictSequential:
    """Chains ``modules`` (configs are built first); a mapping names them.

    ``in_keys``/``out_keys`` are derived from the modules (as in TorchRL's config, where they are ignored).

    Examples:
        >>> import torch
        >>> from tdrl.trainers.algorithms.configs.modules import make_tensordict_module
        >>> seq = make_tensordict_sequential([
        ...     make_tensordict_module(torch.nn.Linear(3, 1), ["observation"], ["param"]),
        ...     make_tanh_module(in_keys=["param"], out_keys=["action"], low=-2.0, high=2.0)])
        >>> seq.in_keys, seq.out_keys
        (['observation'], ['param', 'action'])
    """
    if isinstance(modules, Mapping):
        built: Any = {str(name): build(module) for name, module in modules.items()}
    elif isinstance(modules, Sequence) and not isinstance(modules, str):
        built = [build(module) for module in modules]
    else:
        raise TypeError(f"tensordict_sequential.modules must be a list or a mapping, got {type(modules).__name__}")
    seq = TensorDictSequential(built, partial_tolerant=partial_tolerant,
                               selected_out_keys=normalize_keys(selected_out_keys), inplace=inplace)
    if shared:
        seq.share_memory()
    return seq


def make_tanh_module(
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
    spec: Any = None,
    low: Any = None,
    high: Any = None,
    clamp: bool = False,
) -> TanhModule:
    """Builds a :class:`~tdrl.modules.TanhModule` squashing ``in_keys`` into ``[low, high]`` (default ``action``).

    Examples:
        >>> make_tanh_module(in_keys=["param"], out_keys=["action"], low=-2.0, high=2.0).out_keys
        ['action']
    """
    module = TanhModule(normalize_keys(in_keys) or ["action"], normalize_keys(out_keys), spec=spec, low=low,
                        high=high, clamp=clamp)
    if shared:
        module.share_memory()
    return module


def make_additive_gaussian_module(
    spec: Any = None,
    sigma_init: float = 1.0,
    sigma_end: float = 0.1,
    annealing_num_steps: int = 1000,
    mean: float = 0.0,
    std: float = 1.0,
    action_key: Any = "action",
    safe: bool = False,
    device: Any = None,
    in_keys: Any = None,
    out_keys: Any = None,
    shared: bool = False,
) -> AdditiveGaussianModule:
    """Builds an :class:`~tdrl.modules.AdditiveGaussianModule` (Gaussian exploration noise on ``action_key``).

    ``in_keys``/``out_keys`` must stay unset: the module reads and writes ``action_key``.

    Examples:
        >>> make_additive_gaussian_module(sigma_init=0.5, annealing_num_steps=10).annealing_num_steps
        10
    """
    if in_keys is not None or out_keys is not None:
        raise ValueError("additive_gaussian reads and writes action_key: set action_key, not in_keys/out_keys")
    module = AdditiveGaussianModule(spec, sigma_init, sigma_end, annealing_num_steps, mean, std,
                                    action_key=normalize_key(action_key), safe=safe, device=device)
    if shared:
        module.share_memory()
    return module
