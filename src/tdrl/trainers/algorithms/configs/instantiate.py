"""From a composed config to a trainer: validate, fill sizes from the env specs, instantiate.

:func:`run_config` is the entry point; :func:`compose_config` composes a YAML directory like
``hydra.compose`` and rewrites "unknown key" errors with a suggestion and the valid keys.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Iterator, Sequence
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from tdrl.data import Bounded, Categorical, OneHot
from tdrl.envs import EnvBase
from tdrl.trainers import Trainer
from tdrl.trainers.algorithms.configs.torchrl_targets import rewrite_torchrl_targets
from tdrl.trainers.algorithms.configs.validation import (
    ConfigValidationError,
    explain_key_error,
    validate_config,
)

__all__ = ["compose_config", "infer_sizes", "run_config"]

_MODULES = "tdrl.trainers.algorithms.configs.modules."
_BATCHED = "tdrl.trainers.algorithms.configs.envs.make_batched_env"
_NETWORKS = ("tdrl.modules.MLP",)


def _target(node: Any) -> str | None:
    return node.get("_target_") if isinstance(node, DictConfig) else None


def _env_node(cfg: DictConfig) -> DictConfig | None:
    """The env the trainer collects from, with batched wrappers peeled off (one copy is enough for specs)."""
    trainer = cfg.get("trainer")
    collector = trainer.get("collector") if isinstance(trainer, DictConfig) else None
    node = collector.get("create_env_fn") if isinstance(collector, DictConfig) else None
    while _target(node) == _BATCHED:
        node = node.get("create_env_fn")
    return node if _target(node) else None


def _model_nodes(node: Any, seen: set[int]) -> Iterator[DictConfig]:
    if not isinstance(node, (DictConfig, ListConfig)) or id(node) in seen:
        return
    seen.add(id(node))
    if (_target(node) or "").startswith(_MODULES + "make_") and "network" in node:
        yield node
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        if not OmegaConf.is_missing(node, key):
            yield from _model_nodes(node[key], seen)


def _feature_dim(specs: Sequence[Any], keys: Sequence[Any]) -> int | None:
    dims = []
    for key in keys:
        key = tuple(key) if isinstance(key, (list, ListConfig)) else key
        spec = next((s for s in specs if key in s.keys(True, True)), None)
        if spec is None:
            return None
        shape = spec[key].shape[len(spec.shape):]
        dims.append(int(math.prod(shape)) if len(shape) else 1)
    return sum(dims) if dims else None


def _out_features(kind: str, model: DictConfig, action_spec: Any) -> int | None:
    n_actions = action_spec.shape[-1] if len(action_spec.shape) else 1
    if isinstance(action_spec, Categorical):
        n_actions = int(action_spec.space.n)
    if kind == "make_tanh_normal_model":
        return 2 * n_actions if model.get("extract_normal_params", True) else n_actions
    if kind == "make_value_model":
        return 1
    if kind in ("make_categorical_model", "make_qvalue_model"):
        return n_actions
    return None


def _fill_model(model: DictConfig, env: EnvBase) -> None:
    kind = _target(model).rsplit(".", 1)[1]
    network = model.network
    action_spec = env.full_action_spec[env.action_key]
    if _target(network) in _NETWORKS:
        in_keys = model.get("in_keys") or ["observation"]
        # a Q(s, a) value model reads the action too
        in_dim = _feature_dim([env.full_observation_spec, env.full_action_spec], in_keys)
        if network.get("in_features") is None and in_dim is not None:
            network.in_features = in_dim
        if network.get("out_features") is None:
            network.out_features = _out_features(kind, model, action_spec)
    if kind == "make_tanh_normal_model" and isinstance(action_spec, Bounded):
        for bound in ("low", "high"):
            if model.get(bound) is None:
                model[bound] = getattr(action_spec.space, bound).reshape(-1).tolist()
    if kind == "make_qvalue_model" and model.get("action_space") is None:
        model.action_space = "one_hot" if isinstance(action_spec, OneHot) else "categorical"


def infer_sizes(cfg: DictConfig) -> DictConfig:
    """Fills network sizes and action bounds left unset, from the specs of the trainer's env (built once).

    For each model (``tanh_normal``, ``categorical``, ``value``, ``qvalue``) whose network is an MLP:
    ``in_features`` from the observation entries the model reads, ``out_features`` from its kind (2x the
    action size for ``tanh_normal``, number of actions for ``categorical``/``qvalue``, 1 for ``value``),
    ``low``/``high`` of a ``tanh_normal`` from a bounded action spec, and a ``qvalue``'s ``action_space``.
    Values set in the config are kept. Edits go to the referenced nodes, so interpolations see them.

    Returns:
        ``cfg``, edited in place.

    Examples:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({
        ...     "net": {"_target_": "tdrl.modules.MLP", "in_features": None, "out_features": None},
        ...     "value": {"_target_": _MODULES + "make_value_model", "network": "${net}"},
        ...     "trainer": {"collector": {"create_env_fn": {
        ...         "_target_": "tdrl.trainers.algorithms.configs.envs_libs.make_gym_env", "env_name": "CartPole-v1"}},
        ...         "loss_module": {"critic_network": "${value}"}}})
        >>> infer_sizes(cfg).net.in_features, cfg.net.out_features
        (4, 1)
    """
    env_cfg = _env_node(cfg)
    if env_cfg is None:
        return cfg
    models = [m for m in _model_nodes(cfg.trainer, set()) if _needs_sizes(m)]
    if not models:
        return cfg
    env = instantiate(env_cfg, _partial_=False)
    try:
        for model in models:
            _fill_model(model, env)
    finally:
        env.close()
    return cfg


def _needs_sizes(model: DictConfig) -> bool:
    network = model.get("network")
    if _target(network) in _NETWORKS and (network.get("in_features") is None or network.get("out_features") is None):
        return True
    kind = _target(model).rsplit(".", 1)[1]
    if kind == "make_tanh_normal_model":
        return model.get("low") is None or model.get("high") is None
    return kind == "make_qvalue_model" and model.get("action_space") is None


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
    if cfg.trainer.get("async_collection"):
        raise ConfigValidationError(
            "trainer.async_collection: true is not supported: tdrl's trainer loop alternates collection and "
            "optimisation (set async_collection: false; a multi_async collector still overlaps env steps)"
        )
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
    return f"{err} ({known}; see docs/configs.md for TorchRL configs tdrl does not provide)"
