"""Maps ``_target_: torchrl....`` entries of a TorchRL YAML to the tdrl object of the same name.

TorchRL's example configs name some callables by import path (``torchrl.envs.transforms.transforms.DoubleToFloat``,
``torchrl.trainers.algorithms.configs.modules._make_tanh_module``). tdrl mirrors TorchRL's public names, not
its private module layout, so a path is resolved by name: a config factory is looked up (without its leading
underscore) in tdrl's config modules; anything else at the same path under ``tdrl``, then in its parent packages
(``tdrl.envs.transforms.DoubleToFloat``, ``tdrl.envs.DoubleToFloat``).
"""

from __future__ import annotations

import importlib
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from tdrl.trainers.algorithms.configs.validation import ConfigValidationError

__all__ = ["rewrite_torchrl_targets", "tdrl_target"]

_CONFIGS = "tdrl.trainers.algorithms.configs"
_CONFIG_MODULES = (
    "modules", "module_wrappers", "transforms", "envs", "envs_libs", "objectives", "objectives_offline",
    "trainers", "collectors", "data", "logging", "utils", "hooks", "transforms_extra", "transforms_more",
    "objectives_tqc",
    "data_ensemble", "weight_update", "weight_sync_schemes", "dreamer_v3",
)


def _exists(path: str) -> bool:
    module, _, name = path.rpartition(".")
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


def tdrl_target(target: str) -> str | None:
    """The tdrl path for a ``torchrl.`` target (``None`` when tdrl has no such object); others are returned as is.

    Examples:
        >>> tdrl_target("torchrl.envs.transforms.transforms.DoubleToFloat")  # TorchRL's historical path exists
        'tdrl.envs.transforms.transforms.DoubleToFloat'
        >>> tdrl_target("torchrl.envs.transforms.r3m.DoubleToFloat")  # else the nearest package that has it
        'tdrl.envs.transforms.DoubleToFloat'
        >>> tdrl_target("torchrl.trainers.algorithms.configs.modules._make_tanh_module")
        'tdrl.trainers.algorithms.configs.module_wrappers.make_tanh_module'
        >>> tdrl_target("torch.nn.Linear")
        'torch.nn.Linear'
    """
    if not target.startswith("torchrl."):
        return target
    module, _, name = target[len("torchrl."):].rpartition(".")
    if module.startswith("trainers.algorithms.configs"):
        # the public name (a config module's __all__), wherever tdrl defines it
        for sub in _CONFIG_MODULES:
            if name.lstrip("_") in getattr(importlib.import_module(f"{_CONFIGS}.{sub}"), "__all__", ()):
                return f"{_CONFIGS}.{sub}.{name.lstrip('_')}"
        return None
    parts = module.split(".") if module else []
    for end in range(len(parts), -1, -1):
        candidate = ".".join(["tdrl", *parts[:end], name])
        if _exists(candidate):
            return candidate
    return None


def _needs_rewrite(target: str) -> bool:
    """A ``torchrl.`` target, or TorchRL's private config factory under ``tdrl.`` (a YAML after the import swap)."""
    if target.startswith("torchrl."):
        return True
    return target.startswith(_CONFIGS + ".") and target.rpartition(".")[2].startswith("_make_")


def rewrite_torchrl_targets(cfg: DictConfig, path: str = "") -> DictConfig:
    """Rewrites, in place, every ``torchrl.`` ``_target_`` of ``cfg`` to its tdrl counterpart.

    TorchRL's private factory names already swapped to ``tdrl.`` (``tdrl.trainers.algorithms.configs.modules.
    _make_tanh_module``) are rewritten to the public factory too, so size inference and the target checks,
    which refuse private names, see the same path as for a tdrl config.

    Interpolations are left alone (their target node is rewritten where it is defined).

    Raises:
        ConfigValidationError: a TorchRL target has no tdrl counterpart; the message gives its config path.
    """
    _walk(cfg, path)
    return cfg


def _walk(node: Any, path: str) -> None:
    if isinstance(node, DictConfig):
        keys: Any = list(node.keys())
    elif isinstance(node, ListConfig):
        keys = range(len(node))
    else:
        return
    for key in keys:
        if OmegaConf.is_interpolation(node, key) or OmegaConf.is_missing(node, key):
            continue
        where = f"{path}.{key}" if path else str(key)
        value = node[key]
        if key == "_target_" and isinstance(value, str) and _needs_rewrite(value):
            new = tdrl_target(value if value.startswith("torchrl.") else "torchrl." + value.removeprefix("tdrl."))
            if new is None:
                raise ConfigValidationError(
                    f"{where}: TorchRL target {value!r} has no tdrl counterpart (tdrl mirrors TorchRL's public "
                    "names; see docs/configs.md for what is not provided)"
                )
            node[key] = new
        else:
            _walk(value, where)
