"""Run configs: built-in YAML presets, Hydra-style dotted overrides, and validation before any work starts.

A run config has these sections (see ``presets/*.yaml``): ``algo``, ``seed``, ``num_threads``, ``run_dir``,
``env``, ``network``, ``collector``, ``optim``, ``loss``, ``trainer``, ``eval``, ``logger``. Every key is
checked against the fields its builder accepts (the loss section against the loss class's ``__init__``), and
a mistyped key is reported with the valid keys and the closest match.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from tdrl.trainers.builders import ALGORITHMS, OFF_POLICY, OFFLINE, is_offline, loss_fields

__all__ = ["ConfigError", "PRESETS_DIR", "compose_config", "list_presets", "load_yaml", "validate_config"]

PRESETS_DIR = Path(__file__).parent / "presets"

#: section -> accepted keys (``loss`` depends on the algorithm, see :func:`~tdrl.trainers.builders.loss_fields`).
SCHEMA: dict[str, tuple[str, ...] | None] = {
    "algo": None, "seed": None, "num_threads": None, "run_dir": None, "loss": None,
    "env": ("name", "num_envs", "kwargs"),
    "network": ("num_cells", "activation"),
    "collector": ("frames_per_batch", "total_frames"),
    "optim": ("lr", "anneal_lr", "max_grad_norm", "weight_decay", "gradient_steps"),
    "trainer": ("num_epochs", "minibatch_size", "optim_steps_per_batch", "save_interval", "log_interval",
                "progress_bar", "timing_print_interval", "log_timings", "policy_update_delay"),
    "eval": ("episodes", "max_steps", "interval", "interval_episodes"),
    "logger": ("tensorboard",),
    "replay": ("buffer_size", "batch_size", "init_random_frames"),
    "target": ("tau",),
    "exploration": ("eps_init", "eps_end", "sigma_init", "sigma_end", "annealing_frames"),
    "dataset": ("path",),
}
_OFF_POLICY_SECTIONS = ("replay", "target", "exploration")
_POSITIVE_INTS = ("collector.frames_per_batch", "collector.total_frames", "env.num_envs", "trainer.num_epochs",
                  "trainer.minibatch_size", "eval.episodes", "optim.gradient_steps", "trainer.policy_update_delay",
                  "trainer.optim_steps_per_batch")


class ConfigError(ValueError):
    """A config field is unknown or has a bad value; the message names it and what was expected."""


def list_presets() -> list[str]:
    """Names of the built-in presets.

    Examples:
        >>> "ppo_cartpole" in list_presets()
        True
    """
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_yaml(path: str | Path) -> DictConfig:
    """Loads one YAML config file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    return cfg


def _unknown(where: str, key: str, valid: Sequence[str]) -> ConfigError:
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f" Did you mean {where}{close[0]!r}?" if close else ""
    return ConfigError(f"unknown config key {where}{key!r}.{hint} Valid keys: {sorted(valid)}")


def validate_config(cfg: DictConfig) -> None:
    """Checks every key and a few values of ``cfg``; raises :class:`ConfigError` on the first problem.

    Examples:
        >>> cfg = compose_config(["collector.frame_per_batch=64"])
        Traceback (most recent call last):
        ...
        tdrl.trainers.config.ConfigError: unknown config key collector.'frame_per_batch'. Did you mean collector.'frames_per_batch'? ...
    """
    algo = cfg.get("algo")
    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}, got {algo!r}")
    allowed = [k for k in SCHEMA if (algo in OFF_POLICY or k not in _OFF_POLICY_SECTIONS)
               and (algo in OFFLINE or k != "dataset")]
    for key in cfg.keys():
        if key not in allowed:
            raise _unknown("", str(key), allowed)
    for section, fields in SCHEMA.items():
        if section not in cfg or cfg[section] is None or fields is None and section != "loss":
            continue
        node = cfg[section]
        if not isinstance(node, DictConfig):
            raise ConfigError(f"{section} must be a mapping, got {node!r}")
        valid = loss_fields(algo) if section == "loss" else fields
        for key in node.keys():
            if key not in valid:
                raise _unknown(f"{section}.", str(key), valid)
    if "env" not in cfg or not cfg.env.get("name"):
        raise ConfigError("env.name is required (a gymnasium id such as CartPole-v1, or 'pendulum')")
    for dotted in _POSITIVE_INTS:
        value = OmegaConf.select(cfg, dotted)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"{dotted} must be a positive integer, got {value!r}")
    _validate_mode(cfg)


def _validate_mode(cfg: DictConfig) -> None:
    # Online runs need a collector; offline ones (cql/iql with dataset.path) a number of gradient steps.
    algo = cfg.algo
    if algo != "td3" and OmegaConf.select(cfg, "trainer.policy_update_delay") is not None:
        raise ConfigError(f"trainer.policy_update_delay is TD3's delayed actor update; algo={algo} has none")
    if is_offline(cfg):
        if OmegaConf.select(cfg, "optim.gradient_steps") is None:
            raise ConfigError(f"algo={algo} with dataset.path learns offline: set optim.gradient_steps "
                              "(the number of optimisation steps, e.g. optim.gradient_steps=20000)")
        if cfg.get("collector"):
            raise ConfigError("an offline run (dataset.path is set) collects nothing: remove the collector section "
                              "(optim.gradient_steps sets its length)")
        return
    if not cfg.get("collector"):
        if algo in OFFLINE:
            raise ConfigError(f"algo={algo} learns offline from a dataset: pass dataset.path=RUN_DIR (the folder of an "
                              "off-policy run such as `tdrl train algo=td3 env=Pendulum-v1`) or a ReplayBuffer.dumps "
                              "folder; or add a collector section (frames_per_batch, total_frames) to train online")
        raise ConfigError("collector.frames_per_batch and collector.total_frames are required")
    if OmegaConf.select(cfg, "optim.gradient_steps") is not None:
        raise ConfigError("optim.gradient_steps sets the length of an offline run (algo=cql/iql with dataset.path); "
                          "online runs stop at collector.total_frames")


def _base_for(algo: str | None, env: str | None) -> DictConfig:
    algo = algo or "ppo"
    if algo not in ALGORITHMS:
        raise ConfigError(f"algo must be one of {sorted(ALGORITHMS)}, got {algo!r}")
    candidates = [p for p in list_presets() if p.startswith(algo + "_")]
    if not candidates:
        raise ConfigError(f"no built-in preset for algo={algo!r}; presets: {list_presets()}")
    # CartPole-v1 -> cartpole, HalfCheetah-v5 -> halfcheetah, dmc:cheetah/run -> cheetah_run
    short = (env or "")[4:].replace("/", "_") if (env or "").startswith("dmc:") else (env or "").split("-")[0].lower()
    chosen = next((p for p in candidates if short and p == f"{algo}_{short}"), candidates[0])
    return load_yaml(PRESETS_DIR / f"{chosen}.yaml")


def compose_config(
    overrides: Sequence[str] = (),
    *,
    config_path: str | Path | None = None,
    config_name: str | None = None,
) -> DictConfig:
    """The validated config of a run: a base (user YAML, ``preset=NAME`` or the preset of ``algo``/``env``)
    with dotted ``key=value`` overrides merged on top.

    ``env=NAME`` is short for ``env.name=NAME``.

    Examples:
        >>> cfg = compose_config(["collector.total_frames=2048"])
        >>> cfg.algo, cfg.env.name, cfg.collector.total_frames
        ('ppo', 'CartPole-v1', 2048)
    """
    pairs: list[tuple[str, str]] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"overrides are KEY=VALUE (e.g. collector.frames_per_batch=512), got {item!r}")
        pairs.append((key.lstrip("+"), value))
    top = dict(pairs)
    if config_path is not None or config_name is not None:
        name = config_name or "config"
        path = Path(config_path or ".") / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        base = load_yaml(path)
    elif "preset" in top:
        if top["preset"] not in list_presets():
            raise ConfigError(f"unknown preset {top['preset']!r}; presets: {list_presets()}")
        base = load_yaml(PRESETS_DIR / f"{top['preset']}.yaml")
    else:
        base = _base_for(top.get("algo"), top.get("env"))
    dotlist = []
    for key, value in pairs:
        if key == "preset":
            continue
        dotlist.append(f"env.name={value}" if key == "env" else f"{key}={value}")
    try:
        cfg = OmegaConf.merge(base, OmegaConf.from_dotlist(dotlist))
    except Exception as err:  # omegaconf's own parse errors
        raise ConfigError(f"bad override: {err}") from err
    assert isinstance(cfg, DictConfig)
    validate_config(cfg)
    if OmegaConf.select(cfg, "dataset.path"):
        # config.yaml keeps it absolute, so `tdrl resume` finds the dataset from any working directory.
        cfg.dataset.path = str(Path(str(cfg.dataset.path)).expanduser().resolve())
    return cfg


def describe() -> str:
    """The text of ``tdrl train --help``'s epilog: algorithms, presets, config groups and their keys."""
    lines = ["algorithms: " + ", ".join(sorted(ALGORITHMS)), "presets: " + ", ".join(list_presets()),
             "envs: any gymnasium id (CartPole-v1, Pendulum-v1, HalfCheetah-v5, ...), 'pendulum' (pure torch) or "
             "dmc:DOMAIN/TASK (dm_control, e.g. dmc:cheetah/run)",
             "config groups (override with GROUP.KEY=VALUE):"]
    for section, fields in SCHEMA.items():
        if section == "loss":
            lines.append("  loss: " + ", ".join(loss_fields("ppo")) + "  (for algo=ppo)")
        elif fields is not None:
            note = "  (algo=" + "/".join(OFF_POLICY) + ")" if section in _OFF_POLICY_SECTIONS else ""
            if section == "dataset":
                note = "  (algo=" + "/".join(OFFLINE) + " offline: a run folder or ReplayBuffer.dumps folder)"
            lines.append(f"  {section}: " + ", ".join(fields) + note)
    lines.append("top-level: algo, seed, num_threads, run_dir, preset=NAME")
    return "\n".join(lines)
