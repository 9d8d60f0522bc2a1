"""From a composed config to a trainer: validate, fill sizes from the env specs, instantiate.

:func:`run_config` is the entry point; :func:`compose_config` composes a YAML directory like
``hydra.compose`` and rewrites "unknown key" errors with a suggestion and the valid keys.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from tdrl.trainers import Trainer
from tdrl.trainers.algorithms.configs._register import register_configs
from tdrl.trainers.algorithms.configs.safe_targets import safe_instantiate as instantiate
from tdrl.trainers.algorithms.configs.size_inference import infer_sizes
from tdrl.trainers.algorithms.configs.torchrl_targets import rewrite_torchrl_targets
from tdrl.trainers.algorithms.configs.validation import (
    ConfigValidationError,
    explain_key_error,
    validate_config,
)

__all__ = ["check_sizes", "compose_config", "infer_sizes", "run_config"]

_MODULES = "tdrl.trainers.algorithms.configs.modules."
_CONFIGS = "tdrl.trainers.algorithms.configs."
_SYNC_COLLECTORS = (_CONFIGS + "collectors.make_collector", _CONFIGS + "collectors.make_async_collector")
_ON_POLICY_TRAINERS = tuple(_CONFIGS + f"trainers.make_{a}_trainer" for a in ("ppo", "a2c", "reinforce"))


def _node(cfg: Any, *path: str) -> Any:
    node = cfg
    for key in path:
        node = node.get(key) if isinstance(node, DictConfig) else None
    return node


def _env_batch(env: Any) -> int:
    """How many env copies a (possibly batched) env node steps side by side; 1 when it cannot be told."""
    n = 1
    while isinstance(env, DictConfig):
        if env.get("_target_") == _CONFIGS + "envs.make_batched_env":
            n *= int(env.get("num_workers") or 1)
        elif isinstance(env.get("num_envs"), int) and env.num_envs > 1:  # 0: gymnasium unvectorised
            n *= env.num_envs
        env = env.get("create_env_fn") if "create_env_fn" in env else env.get("base_env")
    return n


def check_sizes(cfg: DictConfig) -> None:
    """The rules between a TorchRL-format config's sizes, checked before anything is built.

    ``frames_per_batch`` must be a multiple of the envs a single collector steps side by side (the collector
    would round it up, and an on-policy buffer sized to the config would drop frames); an on-policy trainer's
    buffer must hold a whole batch; an off-policy buffer at least one sample.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"trainer": {"collector": {"_target_": _SYNC_COLLECTORS[0],
        ...     "frames_per_batch": 1024, "create_env_fn": {"_target_": _CONFIGS + "envs.make_batched_env",
        ...     "num_workers": 3}}}})
        >>> try:
        ...     check_sizes(cfg)
        ... except ConfigValidationError as err:
        ...     print(str(err).split(":")[0])
        trainer.collector.frames_per_batch (1024) must be a multiple of the 3 envs its env steps side by side (e.g. 1026)
    """
    collector = _node(cfg, "trainer", "collector")
    fpb = _node(collector, "frames_per_batch")
    if not isinstance(fpb, int):
        return
    if _node(collector, "_target_") in _SYNC_COLLECTORS:
        n_envs = _env_batch(_node(collector, "create_env_fn"))
        if fpb % n_envs:
            raise ConfigValidationError(
                f"trainer.collector.frames_per_batch ({fpb}) must be a multiple of the {n_envs} envs its env steps "
                f"side by side (e.g. {(fpb // n_envs + 1) * n_envs}): the collector would round it up")
    buffer = _node(cfg, "trainer", "replay_buffer")
    max_size = _node(buffer, "storage", "max_size")
    batch = _node(buffer, "batch_size")
    if not isinstance(max_size, int):
        return
    if _node(cfg, "trainer", "_target_") in _ON_POLICY_TRAINERS and max_size < fpb:
        raise ConfigValidationError(
            f"trainer.replay_buffer.storage.max_size ({max_size}) is smaller than collector.frames_per_batch ({fpb}): "
            "an on-policy buffer holds one whole batch")
    if isinstance(batch, int) and max_size < batch:
        raise ConfigValidationError(
            f"trainer.replay_buffer.storage.max_size ({max_size}) must hold one sample of batch_size ({batch})")


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
        raise ConfigValidationError(f"the config has no 'trainer' node (top-level keys: {sorted(map(str, cfg.keys()))})")
    rewrite_torchrl_targets(cfg)
    validate_config(cfg.trainer, path="trainer")
    check_sizes(cfg)

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
    register_configs()  # the package registers on first use; a direct import of this module must work too
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
