"""From a composed config to a trainer: validate, fill sizes from the env specs, instantiate.

:func:`run_config` is the entry point; :func:`compose_config` composes a YAML directory like
``hydra.compose`` and rewrites "unknown key" errors with a suggestion and the valid keys.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from tdrl.trainers import Trainer
from tdrl.trainers.algorithms.configs.safe_targets import safe_instantiate as instantiate
from tdrl.trainers.algorithms.configs.size_inference import infer_sizes
from tdrl.trainers.algorithms.configs.torchrl_targets import rewrite_torchrl_targets
from tdrl.trainers.algorithms.configs.validation import (
    ConfigValidationError,
    explain_key_error,
    validate_config,
)

__all__ = ["compose_config", "infer_sizes", "run_config"]

_MODULES = "tdrl.trainers.algorithms.configs.modules."


def run_config(cfg: DictConfig, *, infer: bool = True) -> Trainer:
    """Builds the trainer of a composed config: validate ``cfg.trainer``, infer sizes, instantiate.

    Validation runs before any env or process starts (see
    :func:`~tdrl.trainers.algorithms.configs.validate_config`); with ``infer``, one env is then built to
    read specs (:func:`infer_sizes`); finally ``hydra.utils.instantiate(cfg.trainer)``.

    Args:
        cfg: the composed config, with a ``trainer`` node.
        infer: fill unset network sizes from the env specs.

    Returns:
        the trainer, ready for ``trainer.train()``.

    Raises:
        ConfigValidationError: the config has unknown or missing keys.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> try:
        ...     run_config(OmegaConf.create({"trainer": {"_target_": _MODULES + "make_value_model", "netwrk": 1}}))
        ... except ConfigValidationError as err:
        ...     print(str(err).splitlines()[1].split(";")[0])
        trainer.netwrk: unknown key
    """
    if "trainer" not in cfg:
        raise ConfigValidationError(f"the config has no 'trainer' node (top-level keys: {sorted(cfg.keys())})")
    rewrite_torchrl_targets(cfg)
    validate_config(cfg.trainer, path="trainer")

    if infer:
        infer_sizes(cfg)
    return instantiate(cfg.trainer)


def compose_config(
    config_dir: str | pathlib.Path, config_name: str = "config", overrides: Sequence[str] = ()
) -> DictConfig:
    """Composes ``config_dir/config_name.yaml`` (tdrl's configs registered) with command-line style overrides.

    ``_target_: torchrl....`` paths are rewritten to their tdrl counterparts
    (:func:`~tdrl.trainers.algorithms.configs.torchrl_targets.rewrite_torchrl_targets`), so that
    ``hydra.utils.instantiate`` on the result builds tdrl objects.

    Raises:
        ConfigValidationError: a YAML or override key is not a field of its config, with the closest field
            and the list of valid ones.

    Examples:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.yaml").write_text("defaults:\\n  - optimizer@optimizer: adam\\n  - _self_\\n")
        >>> compose_config(d, overrides=["optimizer.lr=0.01"]).optimizer.lr
        0.01
        >>> try:
        ...     compose_config(d, overrides=["optimizer.lrr=0.01"])
        ... except ConfigValidationError as err:
        ...     print(str(err)[:45])
        optimizer.lrr: unknown key; did you mean lr?
    """
    with initialize_config_dir(config_dir=str(pathlib.Path(config_dir).resolve()), version_base="1.3"):
        try:
            return rewrite_torchrl_targets(compose(config_name=config_name, overrides=list(overrides)))
        except MissingConfigException as err:
            raise ConfigValidationError(_explain_missing_config(err)) from err
        except (HydraException, OmegaConfBaseException) as err:
            explained = explain_key_error(err)
            if explained is None:
                raise
            raise ConfigValidationError(explained) from err


def _explain_missing_config(err: MissingConfigException) -> str:
    """'group/name' of a defaults list that no registered config provides, with the group's names."""
    missing = err.missing_cfg_file or ""
    group = missing.rpartition("/")[0]
    names = sorted(n.removesuffix(".yaml") for n in ConfigStore.instance().list(group)) if (
        group and ConfigStore.instance().repo.get(group) is not None) else []
    known = f"group {group!r} has: {', '.join(names)}" if names else f"tdrl registers no group {group!r}"
    first = str(err).splitlines()[0]  # Hydra goes on with its search path
    return f"{first} ({known}; see docs/configs.md for TorchRL configs tdrl does not provide)"
