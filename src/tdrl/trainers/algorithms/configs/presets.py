"""Composes a run config: a preset (or user YAML, or a run folder's ``config.yaml``) merged onto
:class:`~tdrl.trainers.algorithms.configs.run.RunConfig`, ``key=value`` overrides on top, then validated.

Validation runs before anything is built or written: keys (a typo gets the closest key and the valid ones),
types (``optim.lr=abc: expected a float, got 'abc'``), ranges, the env id, the sections the algorithm uses,
the loss's arguments, and the rules between keys (``frames_per_batch`` a multiple of ``num_envs``, the
minibatch size dividing the batch, the replay buffer holding a batch, online vs offline).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from tdrl.trainers.algorithms.configs import run as schema
from tdrl.trainers.algorithms.configs.errors import ConfigValidationError
from tdrl.trainers.algorithms.configs.loss_keys import LOSS_KEYS

__all__ = [
    "PRESETS_DIR", "ConfigError", "base_of", "compose_run_config", "config_file", "describe", "did_you_mean",
    "is_torchrl_config", "list_presets", "load_yaml", "loss_fields", "resolve_derived", "validate_run_config",
]

PRESETS_DIR = Path(__file__).resolve().parents[2] / "presets"

_OFF_POLICY_SECTIONS = ("replay", "target", "exploration")
_TYPE_NAMES = {int: "an integer", float: "a float", bool: "a boolean", str: "a string"}
_OMEGACONF_TYPES = {"Integer": "an integer", "Float": "a float", "Boolean": "a boolean", "String": "a string"}


class ConfigError(ConfigValidationError):
    """A run config has an unknown key or a bad value; the message names it and what was expected.

    Examples:
        >>> try:
        ...     base_of(["algo=nope"])
        ... except ConfigError as err:
        ...     print(str(err).startswith("algo must be one of"), str(err).endswith("got 'nope'."))
        True True
    """


def list_presets() -> list[str]:
    """Names of the built-in presets.

    Examples:
        >>> "ppo_cartpole" in list_presets()
        True
    """
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_yaml(path: str | Path) -> DictConfig:
    """Loads one YAML config file (a mapping at the top level)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        cfg = OmegaConf.load(path)
    except Exception as err:  # noqa: BLE001 - YAML syntax errors of any kind name the file
        raise ConfigError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(cfg, DictConfig):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    return cfg


def loss_fields(algo: str) -> list[str]:
    """Keys accepted in the ``loss`` section for ``algo``: its loss's keywords plus the value estimator's.

    Examples:
        >>> "clip_epsilon" in loss_fields("ppo"), "lmbda" in loss_fields("sac")
        (True, False)
    """
    return sorted(LOSS_KEYS[algo])


def did_you_mean(value: str, valid: Sequence[str]) -> str:
    """`` Did you mean 'X'?`` for the closest of ``valid`` (difflib), or ``""``.

    Examples:
        >>> did_you_mean("spc", ["ppo", "sac", "dqn"])
        " Did you mean 'sac'?"
    """
    close = difflib.get_close_matches(value, list(valid), n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


def _bad_algo(algo: str) -> ConfigError:
    return ConfigError(f"algo must be one of {sorted(schema.ALGORITHMS)}, got {algo!r}.{did_you_mean(algo, schema.ALGORITHMS)}")


def _unknown(where: str, key: str, valid: Sequence[str]) -> ConfigError:
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f" Did you mean {where}{close[0]!r}?" if close else ""
    return ConfigError(f"unknown config key {where}{key!r}.{hint} Valid keys: {sorted(valid)}")


def _field_type(object_type: Any, key: str) -> Any:
    if not dataclasses.is_dataclass(object_type):
        return None
    hints = typing.get_type_hints(object_type)
    return hints.get(key)


def _describe_type(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        inner = " or ".join(_describe_type(a) for a in args)
        return f"{inner} (or null)"
    if typing.get_origin(tp) is list:
        return f"a list of {_describe_type(args[0]).split(' ', 1)[-1]}s" if args else "a list"
    if typing.get_origin(tp) is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return f"a mapping of {getattr(tp, '__name__', tp)}'s keys"
    return _TYPE_NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def _explain(err: OmegaConfBaseException, origin: str) -> ConfigError:
    """OmegaConf's merge error as ``KEY=VALUE: expected a float, got 'abc'`` (or an unknown-key message)."""
    key = str(getattr(err, "full_key", "") or getattr(err, "key", ""))
    if isinstance(err, ConfigKeyError):
        parent, _, leaf = key.rpartition(".")
        object_type = getattr(err, "object_type", None)
        valid = [f.name for f in dataclasses.fields(object_type)] if dataclasses.is_dataclass(object_type) else []
        return _unknown(f"{parent}." if parent else "", leaf, valid)
    if isinstance(err, ValidationError):
        value = getattr(err, "value", None)
        object_type = getattr(err, "object_type", None)
        tp = None if "[" in key else _field_type(object_type, key.rpartition(".")[2])
        if tp is not None:
            expected = _describe_type(tp)
        else:  # an element of a typed list: OmegaConf's message names the element type
            text = str(err).splitlines()[0]
            kind = text.rpartition("converted to ")[2].strip()
            expected = _OMEGACONF_TYPES.get(kind, text)
            expected += f" (at {key})" if "[" in key else ""
        return ConfigError(f"{origin}: expected {expected}, got {value!r}")
    return ConfigError(f"{origin}: {str(err).splitlines()[0]}")


def _merge(base: DictConfig, update: Any, origin: str) -> DictConfig:
    try:
        merged = OmegaConf.merge(base, update)
    except OmegaConfBaseException as err:
        raise _explain(err, origin) from err
    assert isinstance(merged, DictConfig)
    return merged


def _parse_overrides(overrides: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"overrides are KEY=VALUE (e.g. collector.frames_per_batch=512), got {item!r}")
        key = key.lstrip("+")
        key = {"env": "env.name", "collector": "collector.backend"}.get(key, key)  # env=NAME, collector=ray
        pairs.append((key, value))
    return pairs


def _base_for(algo: str | None, env: str | None) -> tuple[DictConfig, str]:
    algo = algo or "ppo"
    if algo not in schema.ALGORITHMS:
        raise _bad_algo(algo)
    candidates = [p for p in list_presets() if p.startswith(algo + "_")]
    if not candidates:
        raise ConfigError(f"no built-in preset for algo={algo!r}; presets: {list_presets()}")
    # CartPole-v1 -> cartpole, HalfCheetah-v5 -> halfcheetah, dmc:cheetah/run -> cheetah_run
    short = (env or "")[4:].replace("/", "_") if (env or "").startswith("dmc:") else (env or "").split("-")[0].lower()
    chosen = next((p for p in candidates if short and p == f"{algo}_{short}"), candidates[0])
    return load_yaml(PRESETS_DIR / f"{chosen}.yaml"), f"preset {chosen}"


def config_file(config_path: str | Path | None, config_name: str | None) -> Path:
    """The YAML file of ``--config-path DIR --config-name NAME`` (``.yaml`` added; default name ``config``).

    Examples:
        >>> config_file("my_configs", "cartpole").as_posix()
        'my_configs/cartpole.yaml'
    """
    name = config_name or "config"
    return Path(config_path or ".") / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


def is_torchrl_config(cfg: DictConfig) -> bool:
    """A TorchRL-format config: a Hydra ``defaults:`` list, or a ``trainer`` node with a ``_target_``.

    Examples:
        >>> is_torchrl_config(OmegaConf.create({"trainer": {"_target_": "x"}})), is_torchrl_config(OmegaConf.create({}))
        (True, False)
    """
    trainer = cfg.get("trainer")
    return "defaults" in cfg or (isinstance(trainer, DictConfig) and "_target_" in trainer)


def base_of(overrides: Sequence[str] = (), *, config_path: str | Path | None = None,
            config_name: str | None = None) -> str:
    """What :func:`compose_run_config` starts from for these arguments: ``preset NAME`` or the YAML's path.

    Examples:
        >>> base_of(["algo=dqn", "env=Acrobot-v1"])
        'preset dqn_cartpole'
    """
    return _load_base(_parse_overrides(overrides), config_path, config_name)[1]


def _load_base(pairs: list[tuple[str, str]], config_path: str | Path | None,
               config_name: str | None) -> tuple[DictConfig, str]:
    top = dict(pairs)
    if config_path is not None or config_name is not None:
        path = config_file(config_path, config_name)
        return load_yaml(path), str(path)
    if "preset" in top:
        if top["preset"] not in list_presets():
            hint = did_you_mean(top["preset"], list_presets())
            raise ConfigError(f"unknown preset {top['preset']!r}.{hint} Presets: {list_presets()}")
        return load_yaml(PRESETS_DIR / f"{top['preset']}.yaml"), f"preset {top['preset']}"
    return _base_for(top.get("algo"), top.get("env.name"))


def compose_run_config(
    overrides: Sequence[str] = (),
    *,
    config_path: str | Path | None = None,
    config_name: str | None = None,
) -> DictConfig:
    """The validated config of a run: a base (user YAML, ``preset=NAME`` or the preset of ``algo``/``env``)
    merged onto :class:`RunConfig`, with ``key=value`` overrides on top (``env=NAME`` is ``env.name=NAME``).

    Raises:
        ConfigError: an unknown key, a value of the wrong type or range, or an inconsistent config.

    Examples:
        >>> cfg = compose_run_config(["collector.total_frames=2048"])
        >>> cfg.algo, cfg.env.name, cfg.collector.total_frames, cfg.trainer.minibatch_size
        ('ppo', 'CartPole-v1', 2048, 256)
        >>> compose_run_config(["optim.lr=abc"])
        Traceback (most recent call last):
        ...
        tdrl.trainers.algorithms.configs.presets.ConfigError: optim.lr=abc: expected a float, got 'abc'
    """
    pairs = _parse_overrides(overrides)
    base, origin = _load_base(pairs, config_path, config_name)
    cfg = _merge(OmegaConf.structured(schema.RunConfig), base, origin)
    for key, value in pairs:
        if key == "preset":
            continue
        try:
            update = OmegaConf.from_dotlist([f"{key}={value}"])
        except OmegaConfBaseException as err:
            raise ConfigError(f"bad override {key}={value}: {str(err).splitlines()[0]}") from err
        cfg = _merge(cfg, update, f"{key}={value}")
    validate_run_config(cfg)
    if cfg.dataset is not None and cfg.dataset.path:
        # config.yaml keeps it absolute, so `tdrl resume` finds the dataset from any working directory.
        cfg.dataset.path = str(Path(str(cfg.dataset.path)).expanduser().resolve())
    return cfg


def _check_ranges(node: DictConfig, cls: Any, where: str) -> None:
    for f in dataclasses.fields(cls):
        value = node.get(f.name)
        if value is None or isinstance(value, (DictConfig, ListConfig)):
            continue
        meta, key = f.metadata, f"{where}{f.name}"
        if "choices" in meta and value not in meta["choices"]:
            raise ConfigError(f"{key} must be one of {list(meta['choices'])}, got {value!r}")
        low, high = meta.get("min"), meta.get("max")
        if low is not None and value < low or high is not None and value > high:
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise ConfigError(f"{key} must be {bound}, got {value!r}")


def _check_sections(cfg: DictConfig) -> None:
    algo = cfg.algo
    for section in (*_OFF_POLICY_SECTIONS, "dataset"):
        used = algo in schema.OFFLINE if section == "dataset" else algo in schema.OFF_POLICY
        if cfg.get(section) is not None and not used:
            allowed = [f.name for f in dataclasses.fields(schema.RunConfig)
                       if f.name not in (*_OFF_POLICY_SECTIONS, "dataset") or f.name == section and used]
            raise _unknown("", section, allowed)
    _check_ranges(cfg, schema.RunConfig, "")
    for f in dataclasses.fields(schema.RunConfig):
        node = cfg.get(f.name)
        hints = typing.get_type_hints(schema.RunConfig)
        cls = next((a for a in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(a)), None)
        if isinstance(node, DictConfig) and cls is not None:
            _check_ranges(node, cls, f"{f.name}.")


def _loss_type(algo: str, key: str) -> Any:
    return {"float": float, "int": int, "bool": bool, "str": str}.get(LOSS_KEYS[algo].get(key) or "")


def _check_loss(cfg: DictConfig) -> None:
    valid = loss_fields(cfg.algo)
    for key, value in cfg.loss.items():
        if key not in valid:
            raise _unknown("loss.", str(key), valid)
        expected = _loss_type(cfg.algo, str(key))
        if expected is None or value is None or isinstance(value, expected) and not (
                expected is not bool and isinstance(value, bool)):
            continue
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            cfg.loss[key] = float(value)
            continue
        raise ConfigError(f"loss.{key}={value}: expected {_TYPE_NAMES[expected]}, got {value!r}")
    for key in ("gamma", "lmbda"):
        value = cfg.loss.get(key)
        if value is not None and not 0.0 <= value <= 1.0:
            raise ConfigError(f"loss.{key} must be in [0, 1], got {value!r}")


def _check_env(cfg: DictConfig) -> None:
    name = cfg.env.name
    if OmegaConf.is_missing(cfg.env, "name") or not name:
        raise ConfigError("env.name is required (a gymnasium id such as CartPole-v1, or 'pendulum')")
    if name == "pendulum" or ":" in name and not name.startswith("dmc:"):
        return  # gymnasium's "module:EnvId" ids register on import
    if name.startswith("dmc:"):
        if not name[4:].partition("/")[2] or cfg.env.num_envs > 1:
            raise ConfigError(f"dm_control envs are named 'dmc:DOMAIN/TASK' (e.g. dmc:cheetah/run) and run with "
                              f"env.num_envs=1, got {name!r} with num_envs={cfg.env.num_envs}")
        return
    # gymnasium (numpy, its env registry) loads only here: `tdrl train --help` and the other checks run without it
    known = list(importlib.import_module("gymnasium").envs.registry)
    if name not in known:
        close = difflib.get_close_matches(name, known + ["pendulum"], n=3)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"env.name={name}: no gymnasium env has this id.{hint} (or use 'pendulum', "
                          "dmc:DOMAIN/TASK, or a 'module:EnvId' that registers on import)")


def _check_mode(cfg: DictConfig) -> None:
    # Online runs need a collector; offline ones (cql/iql with dataset.path) a number of gradient steps.
    algo = cfg.algo
    if algo != "td3" and cfg.trainer.policy_update_delay is not None:
        raise ConfigError(f"trainer.policy_update_delay is TD3's delayed actor update; algo={algo} has none")
    if _is_offline(cfg):
        if cfg.optim.gradient_steps is None:
            raise ConfigError(f"algo={algo} with dataset.path learns offline: set optim.gradient_steps "
                              "(the number of optimisation steps, e.g. optim.gradient_steps=20000)")
        if cfg.collector is not None:
            raise ConfigError("an offline run (dataset.path is set) collects nothing: remove the collector section "
                              "(optim.gradient_steps sets its length)")
        return
    if cfg.collector is None:
        if algo in schema.OFFLINE:
            raise ConfigError(f"algo={algo} learns offline from a dataset: pass dataset.path=RUN_DIR (the folder of an "
                              "off-policy run such as `tdrl train algo=td3 env=Pendulum-v1`) or a ReplayBuffer.dumps "
                              "folder; or add a collector section (frames_per_batch, total_frames) to train online")
        raise ConfigError("collector.frames_per_batch and collector.total_frames are required")
    for key in ("frames_per_batch", "total_frames"):
        if OmegaConf.is_missing(cfg.collector, key):
            raise ConfigError(f"collector.{key} is required")
    if cfg.optim.gradient_steps is not None:
        raise ConfigError("optim.gradient_steps sets the length of an offline run (algo=cql/iql with dataset.path); "
                          "online runs stop at collector.total_frames")


def _check_sizes(cfg: DictConfig) -> None:
    """The rules between keys: batch layout, minibatches and buffer capacity."""
    if cfg.collector is not None:
        fpb, n_envs = cfg.collector.frames_per_batch, cfg.env.num_envs
        if fpb % n_envs:
            # The collector would round the batch up (TorchRL does too): the buffer and the frame counts
            # would then disagree with the config.
            raise ConfigError(f"collector.frames_per_batch ({fpb}) must be a multiple of env.num_envs ({n_envs}): "
                              f"each env steps frames_per_batch / num_envs times per batch (e.g. "
                              f"collector.frames_per_batch={(fpb // n_envs + 1) * n_envs})")
        actors = cfg.collector.num_collectors if cfg.collector.backend == "ray" and cfg.algo in schema.ON_POLICY else 1
        if fpb % (actors * n_envs):  # collector=ray on-policy: one equal share of every batch per actor
            raise ConfigError(f"collector.frames_per_batch ({fpb}) must be a multiple of collector.num_collectors "
                              f"x env.num_envs ({actors * n_envs}) with collector=ray")
        minibatch = cfg.trainer.minibatch_size
        if cfg.algo in schema.ON_POLICY and minibatch is not None and fpb % minibatch:
            raise ConfigError(f"trainer.minibatch_size ({minibatch}) must divide collector.frames_per_batch ({fpb})")
    if cfg.replay is not None and cfg.replay.buffer_size < cfg.replay.batch_size and not _is_offline(cfg):
        raise ConfigError(f"replay.buffer_size ({cfg.replay.buffer_size}) must hold at least one sample of "
                          f"replay.batch_size ({cfg.replay.batch_size})")


def _is_offline(cfg: DictConfig) -> bool:
    return cfg.algo in schema.OFFLINE and cfg.dataset is not None and bool(cfg.dataset.path)


def validate_run_config(cfg: DictConfig) -> None:
    """Checks a composed run config and fills its derived values; raises :class:`ConfigError` on the first problem.

    Examples:
        >>> compose_run_config(["collector.frame_per_batch=64"])
        Traceback (most recent call last):
        ...
        tdrl.trainers.algorithms.configs.presets.ConfigError: unknown config key collector.'frame_per_batch'. Did you mean collector.'frames_per_batch'? ...
    """
    if cfg.algo not in schema.ALGORITHMS:
        raise _bad_algo(str(cfg.algo))
    _check_sections(cfg)
    _check_env(cfg)
    _check_mode(cfg)
    _check_loss(cfg)
    resolve_derived(cfg)
    _check_sizes(cfg)


def resolve_derived(cfg: DictConfig) -> DictConfig:
    """Fills the values :class:`RunConfig` documents as derived (``None`` in the schema) from the others."""
    tr, algo = cfg.trainer, cfg.algo
    offline = _is_offline(cfg)
    fpb = cfg.collector.frames_per_batch if cfg.collector is not None else None
    if algo in schema.ON_POLICY:
        tr.num_epochs = 1 if tr.num_epochs is None else tr.num_epochs
        tr.minibatch_size = fpb if tr.minibatch_size is None else tr.minibatch_size
    else:
        for section, cls in (("replay", schema.ReplaySection), ("target", schema.TargetSection),
                             ("exploration", schema.ExplorationSection)):
            if cfg.get(section) is None:
                cfg[section] = OmegaConf.structured(cls)
        if tr.optim_steps_per_batch is None:
            tr.optim_steps_per_batch = 1000 if offline else fpb
    if algo == "td3" and tr.policy_update_delay is None:
        tr.policy_update_delay = 2
    if tr.save_interval is None:
        tr.save_interval = 10 * int(tr.optim_steps_per_batch if offline or fpb is None else fpb)
    return cfg


def _default_text(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "(required)"
    return "(required)" if value == "???" else "null" if value is None else str(value)


_SECTION_NOTES = {
    "collector": "online runs", "replay": "off-policy: " + "/".join(schema.OFF_POLICY), "target": "off-policy",
    "exploration": "off-policy", "dataset": "/".join(schema.OFFLINE) + " offline: a run folder or a "
                                            "ReplayBuffer.dumps folder",
}


def describe() -> str:
    """The text of ``tdrl train --help``'s epilog: algorithms, presets, envs, and every key with its default.

    The defaults are the schema's (:class:`~tdrl.trainers.algorithms.configs.run.RunConfig`); a preset sets
    the values that differ (``tdrl train algo=... env=... --print-config`` prints the resolved config).

    Examples:
        >>> "optim.lr=0.0003" in describe()
        True
    """
    lines = ["algorithms: " + ", ".join(sorted(schema.ALGORITHMS)), "presets: " + ", ".join(list_presets()),
             "envs: any gymnasium id (CartPole-v1, Pendulum-v1, HalfCheetah-v5, ...), 'pendulum' (pure torch) or "
             "dmc:DOMAIN/TASK (dm_control, e.g. dmc:cheetah/run)", "",
             "keys (KEY=DEFAULT  help); the preset of algo/env overrides some: see --print-config"]
    hints = typing.get_type_hints(schema.RunConfig)
    groups: list[str] = []
    for f in dataclasses.fields(schema.RunConfig):
        cls = next((a for a in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(a)), None)
        if f.name == "loss":
            groups += ["loss: the arguments of the algorithm's loss (defaults: the loss class's), gamma, lmbda",
                       "  for algo=ppo: " + ", ".join(loss_fields("ppo"))]
        elif cls is None:
            lines.append(f"  {f.name}={_default_text(f)}  {f.metadata.get('help', '')}")
        else:
            note = _SECTION_NOTES.get(f.name)
            groups.append(f"{f.name}:" + (f"  ({note})" if note else ""))
            groups += [f"  {f.name}.{g.name}={_default_text(g)}  {g.metadata.get('help', '')}"
                       for g in dataclasses.fields(cls)]
    lines += ["  preset=NAME  a built-in preset (default: the preset of algo and env)", *groups]
    return "\n".join(lines)
