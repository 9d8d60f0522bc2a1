"""From a config to the parts of a run, for both config formats.

A run config is either a preset-format config (composed against
:class:`~tdrl.trainers.algorithms.configs.RunConfig`) or a TorchRL-format trainer config (a ``trainer`` node
with a ``_target_``, composed with Hydra against the registered structured configs). Both are composed and
validated by :func:`compose_run`, and both build into the same :class:`RunParts`, which
:mod:`tdrl.trainers.run` trains into one kind of run folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from torch import nn

from tdrl._utils import set_global_seed
from tdrl.envs import EnvBase
from tdrl.trainers.algorithms import configs as hydra_configs
from tdrl.trainers.algorithms.configs.instantiate import check_sizes
from tdrl.trainers.algorithms.configs.presets import (
    ConfigError,
    compose_run_config,
    config_file,
    is_torchrl_config,
    load_yaml,
    validate_run_config,
)
from tdrl.trainers.algorithms.configs.run import EvalSection
from tdrl.trainers.builders import build_agent, build_env, build_trainer
from tdrl.trainers.trainer import Trainer

__all__ = ["RunParts", "build_parts", "compose_run", "is_torchrl_config", "load_run_config"]

# run-level keys of a TorchRL-format config: not Hydra's, kept beside its ``trainer`` node
_RUN_KEYS = ("run_dir", "eval")


@dataclasses.dataclass
class RunParts:
    """What a run config builds: the trainer, and what logging and evaluation need.

    Attributes:
        trainer: the algorithm trainer (no logger or checkpoint file yet: the run folder adds them); ``None``
            for evaluation-only parts.
        policy: the policy evaluated deterministically.
        loss: the loss module (its state is what ``best.pt`` keeps).
        make_eval_env: ``make_eval_env(n)`` builds an evaluation env (``n`` copies side by side when it can).
        algo, env_name: for the summary and the default folder name.
        eval: the ``eval`` section (:class:`~tdrl.trainers.algorithms.configs.run.EvalSection`).
        seed: the run's seed (evaluation envs are seeded from it).
        episode_returns: whether the env writes ``("next", "episode_reward")`` (a ``RewardSum``).
    """

    trainer: Trainer | None
    policy: nn.Module
    loss: nn.Module
    make_eval_env: Callable[[int], EnvBase]
    algo: str
    env_name: str
    eval: Any
    seed: int | None
    episode_returns: bool


def _split_run_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    run, hydra = [], []
    for item in overrides:
        key = item.partition("=")[0].lstrip("+")
        (run if key.split(".")[0] in _RUN_KEYS else hydra).append(item)
    return run, hydra


def _run_section(cfg: DictConfig, run_overrides: Sequence[str], origin: str) -> None:
    """Merges ``cfg.eval`` (and run overrides) onto :class:`EvalSection`; writes ``run_dir`` and ``eval`` into ``cfg``."""
    base = OmegaConf.structured(EvalSection)
    with open_dict(cfg):
        given = cfg.pop("eval", None)
        run_dir = cfg.pop("run_dir", None)
        try:
            section = OmegaConf.merge(base, given or {})
            for item in run_overrides:
                key, _, value = item.lstrip("+").partition("=")
                if key == "run_dir":
                    run_dir = value or None
                    continue
                section = OmegaConf.merge(section, OmegaConf.from_dotlist([f"{key[len('eval.'):]}={value}"]))
        except Exception as err:  # noqa: BLE001 - OmegaConf's errors, reworded with the key
            raise ConfigError(f"{origin}: bad eval section ({str(err).splitlines()[0]}); eval keys: "
                              f"{[f.name for f in dataclasses.fields(EvalSection)]}") from err
        cfg.run_dir = run_dir
        cfg.eval = section


def compose_run(overrides: Sequence[str] = (), *, config_path: str | Path | None = None,
                config_name: str | None = None) -> DictConfig:
    """Composes and validates the config of ``tdrl train``: a preset-format config, or a TorchRL-format YAML.

    A TorchRL-format YAML is composed with Hydra (its ``defaults`` list resolved against the registered
    configs); ``run_dir=`` and ``eval.*=`` overrides set the run folder and the evaluation, as for presets.
    """
    if config_path is not None or config_name is not None:
        path = config_file(config_path, config_name)
        if is_torchrl_config(load_yaml(path)):
            run_overrides, hydra_overrides = _split_run_overrides(overrides)
            cfg = hydra_configs.compose_config(path.parent, path.stem, hydra_overrides)
            _run_section(cfg, run_overrides, str(path))
            hydra_configs.validate_config(cfg.trainer, path="trainer")
            check_sizes(cfg)
            return cfg
    return compose_run_config(overrides, config_path=config_path, config_name=config_name)


def load_run_config(run_dir: str | Path) -> DictConfig:
    """The validated ``config.yaml`` of a run folder, of either format."""
    path = Path(run_dir) / "config.yaml"
    cfg = load_yaml(path)
    if is_torchrl_config(cfg):
        _run_section(cfg, (), str(path))
        return cfg
    return compose_run_config(config_path=path.parent, config_name=path.name)


def build_parts(cfg: DictConfig, *, with_trainer: bool = True) -> RunParts:
    """Builds the trainer and evaluation parts of a composed config (either format).

    ``with_trainer=False`` (evaluation only) skips the collector, buffer and dataset of a preset-format config;
    a TorchRL-format config is instantiated whole (its loss comes from its trainer node).
    """
    return _torchrl_parts(cfg) if is_torchrl_config(cfg) else _preset_parts(cfg, with_trainer)


def _preset_parts(cfg: DictConfig, with_trainer: bool) -> RunParts:
    validate_run_config(cfg)
    if cfg.seed is not None:
        # Before the networks are built: the trainer seeds only later, so their initial weights (and so
        # the whole run) would otherwise differ between two runs with the same seed.
        set_global_seed(int(cfg.seed))
    env = build_env(cfg.env) if with_trainer else build_env(cfg.env, num_envs=1)
    agent = build_agent(cfg, env)
    trainer = build_trainer(cfg, env=env, agent=agent) if with_trainer else None
    if trainer is None:
        env.close()
    return RunParts(trainer=trainer, policy=agent.policy, loss=agent.loss,
                    make_eval_env=lambda n: build_env(cfg.env, num_envs=n), algo=cfg.algo,
                    env_name=str(cfg.env.name), eval=cfg.eval, seed=cfg.seed,
                    episode_returns=trainer is not None and not getattr(trainer, "offline", False))


def _env_name(env: Any) -> str:
    while isinstance(env, DictConfig):
        for key in ("env_name", "name"):
            if isinstance(env.get(key), str):
                return env[key]
        env = env.get("create_env_fn") if "create_env_fn" in env else env.get("base_env")
    return "env"


def _torchrl_parts(cfg: DictConfig) -> RunParts:
    trainer = hydra_configs.run_config(cfg)
    loss = trainer.loss_module
    policy = getattr(loss, "actor_network", None) or getattr(loss, "value_network", None)
    if not isinstance(policy, nn.Module):
        raise ConfigError(f"trainer.loss_module ({type(loss).__name__}) has no actor_network or value_network "
                          "to evaluate")
    env_node = cfg.trainer.collector.create_env_fn

    def make_eval_env(n: int) -> EnvBase:
        del n  # the config fixes how many copies its env runs
        env = instantiate(env_node)
        return env() if callable(env) and not isinstance(env, EnvBase) else env

    env = getattr(trainer.collector, "env", None)
    rewards = [*env.observation_spec.keys(True, True), *env.full_reward_spec.keys(True, True)] if isinstance(
        env, EnvBase) else []
    name = type(trainer).__name__.removesuffix("Trainer").lower()
    return RunParts(trainer=trainer, policy=policy, loss=loss, make_eval_env=make_eval_env, algo=name,
                    env_name=_env_name(env_node), eval=cfg.eval, seed=cfg.trainer.get("seed"),
                    episode_returns="episode_reward" in rewards)
