"""Fills network sizes a config leaves unset from the specs of the trainer's env (built once, before training).

Three places are filled, each only where the config left ``None``:

- a model (``tanh_normal``, ``categorical``, ``value``, ``qvalue``) whose ``network`` is an MLP: ``in_features``
  from the entries it reads, ``out_features`` from its kind (2x the action size for ``tanh_normal``, the number
  of actions for ``categorical``/``qvalue``, 1 for ``value``); a ``tanh_normal``'s ``low``/``high`` from a
  bounded action spec and a ``qvalue``'s ``action_space``;
- a model or ``tensordict_module`` whose network is a ConvNet: ``in_features`` = the channels of its pixel entry;
- a ``tensordict_sequential`` chain (e.g. ConvNet -> MLP -> TanhModule): entry sizes are followed from module to
  module (a ConvNet's output size is measured on a zero image), so an MLP's ``in_features`` is what the previous
  module writes, and an MLP that writes the action (directly or through a ``tanh_module``) gets its size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, cast

import torch
from omegaconf import DictConfig, ListConfig, OmegaConf

from tdrl.data import Bounded, Categorical, OneHot
from tdrl.envs import EnvBase
from tdrl.trainers.algorithms.configs.safe_targets import safe_instantiate as instantiate

__all__ = ["infer_sizes"]

_CONFIGS = "tdrl.trainers.algorithms.configs."
_MODULES = _CONFIGS + "modules."
_TD_MODULE = _MODULES + "make_tensordict_module"
_SEQUENTIAL = _CONFIGS + "module_wrappers.make_tensordict_sequential"
_TANH = _CONFIGS + "module_wrappers.make_tanh_module"
_BATCHED = _CONFIGS + "envs.make_batched_env"
_MLP = "tdrl.modules.MLP"
_CONVNET = "tdrl.modules.ConvNet"


def _target(node: Any) -> str | None:
    return node.get("_target_") if isinstance(node, DictConfig) else None


def _key(key: Any) -> Any:
    if isinstance(key, (list, ListConfig)):
        key = tuple(key)
        return key[0] if len(key) == 1 else key
    return key


def _env_node(cfg: DictConfig) -> DictConfig | None:
    """The env the trainer collects from, with batched wrappers peeled off (one copy is enough for specs)."""
    trainer = cfg.get("trainer")
    collector = trainer.get("collector") if isinstance(trainer, DictConfig) else None
    node = collector.get("create_env_fn") if isinstance(collector, DictConfig) else None
    while isinstance(node, DictConfig) and _target(node) == _BATCHED:
        node = node.get("create_env_fn")
    return node if _target(node) else None


def _nodes(node: Any, seen: set[int]) -> Iterator[DictConfig]:
    """Every node with a ``_target_`` under ``node``, each once (interpolations point at shared nodes)."""
    if not isinstance(node, (DictConfig, ListConfig)) or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, DictConfig) and _target(node):
        yield node
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        if not OmegaConf.is_missing(node, key):
            yield from _nodes(cast(Any, node)[key], seen)


class _Shapes:
    """Feature shapes (without batch dims) of the env's entries, plus what the chain's modules write."""

    def __init__(self, env: EnvBase) -> None:
        self.shapes: dict[Any, torch.Size] = {}
        for spec in (env.full_observation_spec, env.full_action_spec, env.full_state_spec):
            for key in spec.keys(True, True):
                self.shapes[key] = spec[key].shape[len(spec.shape):]
        self.action_key = env.action_key
        self.action_spec = env.full_action_spec[env.action_key]

    def feature_dim(self, keys: Sequence[Any]) -> int | None:
        dims = []
        for key in keys:
            shape = self.shapes.get(_key(key))
            if shape is None:
                return None
            dims.append(int(math.prod(shape)) if len(shape) else 1)
        return sum(dims) if dims else None

    def n_actions(self) -> int:
        if isinstance(self.action_spec, Categorical):
            return int(self.action_spec.space.n)
        return self.action_spec.shape[-1] if len(self.action_spec.shape) else 1


def _set(node: DictConfig, field: str, value: Any) -> None:
    if value is not None and node.get(field) is None:
        node[field] = value


def _fill_convnet(network: DictConfig, in_keys: Sequence[Any], shapes: _Shapes) -> None:
    if network.get("in_features") is None and len(in_keys) == 1:
        shape = shapes.shapes.get(_key(in_keys[0]))
        if shape is not None and len(shape) >= 3:
            network.in_features = int(shape[-3])


def _fill_model(model: DictConfig, shapes: _Shapes) -> None:
    kind = str(_target(model)).rsplit(".", 1)[1]
    network = model.network
    in_keys = model.get("in_keys") or ["observation"]
    if _target(network) == _CONVNET:
        _fill_convnet(network, in_keys, shapes)
    elif _target(network) == _MLP:
        _set(network, "in_features", shapes.feature_dim(in_keys))  # Q(s, a) reads the action too
        n = shapes.n_actions()
        out = {"make_tanh_normal_model": 2 * n if model.get("extract_normal_params", True) else n,
               "make_value_model": 1, "make_categorical_model": n, "make_qvalue_model": n}.get(kind)
        _set(network, "out_features", out)
    if kind == "make_tanh_normal_model" and isinstance(shapes.action_spec, Bounded):
        for bound in ("low", "high"):
            _set(model, bound, getattr(shapes.action_spec.space, bound).reshape(-1).tolist())
    if kind == "make_qvalue_model" and model.get("action_space") is None:
        model.action_space = "one_hot" if isinstance(shapes.action_spec, OneHot) else "categorical"


def _writes_action(key: Any, following: Sequence[Any], shapes: _Shapes) -> bool:
    if key == shapes.action_key:
        return True
    return any(_target(m) == _TANH and [_key(k) for k in (m.get("in_keys") or ["action"])] == [key]
               and [_key(k) for k in (m.get("out_keys") or m.get("in_keys") or ["action"])] == [shapes.action_key]
               for m in following)


def _fill_sequence(seq: DictConfig, shapes: _Shapes) -> None:
    modules = list(seq.modules.values() if isinstance(seq.modules, DictConfig) else seq.modules)
    for i, module in enumerate(modules):
        if _target(module) != _TD_MODULE:
            continue
        in_keys, out_keys = module.get("in_keys") or [], [_key(k) for k in module.get("out_keys") or []]
        network = module.module
        if _target(network) == _CONVNET:
            _fill_convnet(network, in_keys, shapes)
            shape = shapes.shapes.get(_key(in_keys[0])) if len(in_keys) == 1 else None
            if network.get("in_features") is not None and shape is not None and len(out_keys) == 1:
                with torch.no_grad():  # the conv stack's output size, measured once on a zero image
                    out = instantiate(network)(torch.zeros(1, *shape))
                shapes.shapes[out_keys[0]] = out.shape[1:]
        elif _target(network) == _MLP:
            _set(network, "in_features", shapes.feature_dim(in_keys))
            if len(out_keys) == 1 and _writes_action(out_keys[0], modules[i + 1:], shapes):
                _set(network, "out_features", shapes.n_actions())
            if len(out_keys) == 1 and network.get("out_features") is not None:
                shapes.shapes[out_keys[0]] = torch.Size([int(network.out_features)])


def _needs_env(node: DictConfig) -> bool:
    target = _target(node)
    if target == _SEQUENTIAL:
        return True
    if target == _TD_MODULE:
        return _target(node.get("module")) == _CONVNET and node.module.get("in_features") is None
    network = node.get("network")
    if _target(network) in (_MLP, _CONVNET) and (
            network.get("in_features") is None or network.get("out_features", 0) is None):
        return True
    kind = str(target).rsplit(".", 1)[1]
    if kind == "make_tanh_normal_model":
        return node.get("low") is None or node.get("high") is None
    return kind == "make_qvalue_model" and node.get("action_space") is None


def _is_model(node: DictConfig) -> bool:
    return str(_target(node)).startswith(_MODULES + "make_") and "network" in node


def infer_sizes(cfg: DictConfig) -> DictConfig:
    """Fills network sizes and action bounds left unset, from the specs of the trainer's env (built once).

    See the module docstring for what is filled. Values set in the config are kept. Edits go to the referenced
    nodes, so interpolations see them.

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
    nodes = [n for n in _nodes(cfg.trainer, set())
             if (_is_model(n) or _target(n) in (_TD_MODULE, _SEQUENTIAL)) and _needs_env(n)]
    if not nodes:
        return cfg
    env = instantiate(env_cfg, _partial_=False)
    try:
        shapes = _Shapes(env)
        for node in nodes:
            if _target(node) == _SEQUENTIAL:
                _fill_sequence(node, shapes)
            elif _target(node) == _TD_MODULE:
                _fill_convnet(node.module, node.get("in_keys") or [], shapes)
            else:
                _fill_model(node, shapes)
    finally:
        env.close()
    return cfg
