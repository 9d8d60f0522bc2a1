"""Structured config and runner of ``tdrl train algo=grpo`` (the LLM stack), kept apart from the RL presets.

``GRPORunConfig`` holds every key with its default and help; ``presets/grpo_sums.yaml`` is merged onto it,
then the command-line overrides (``tdrl train algo=grpo trainer.iterations=10 loss.clip_epsilon=0.1``): an
unknown key is an error that names the valid ones. :func:`build_grpo_trainer` wires the built-in task
(one-digit sums, see ``_llm_sums.py``) with the library parts; :func:`train_grpo` runs it and returns the
summary the CLI prints; :mod:`tdrl.trainers.run_grpo` trains it into a run folder (``tdrl train algo=grpo``,
``tdrl resume RUN_DIR``). :class:`GRPOTrainerConfig` is the same run as a Hydra structured config, registered
as ``trainer/grpo_sums`` in the ``ConfigStore`` beside ``trainer/ppo`` and the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

import tdrl.objectives.llm as losses
from tdrl.collectors.llm import LLMCollector
from tdrl.data import LazyStackStorage, ReplayBuffer
from tdrl.modules.llm import TransformersWrapper
from tdrl.trainers.algorithms._llm_sums import make_sums_env, sft_warmup, sums_tokenizer, tiny_gpt2
from tdrl.trainers.algorithms.configs.common import ConfigBase
from tdrl.trainers.algorithms.grpo import GRPOTrainer

__all__ = ["GRPORunConfig", "GRPOTrainerConfig", "build_grpo_trainer", "compose_grpo_config", "make_grpo_trainer",
           "train_grpo"]

PRESET = Path(__file__).resolve().parents[2] / "presets" / "llm" / "grpo_sums.yaml"


@dataclass
class GRPOModelConfig:
    """The tiny GPT-2 policy and its supervised warm-up."""

    n_layer: int = 2  # transformer blocks
    n_embd: int = 64  # hidden size
    warmup_steps: int = 300  # teacher-forced steps on half of the sums before RL (0: none)
    warmup_lr: float = 3e-3
    temperature: float = 1.0  # sampling temperature of the answers


@dataclass
class GRPOTaskConfig:
    """The built-in task: ``prompts_per_batch`` sums per batch, ``group_size`` answers each."""

    name: str = "sums"
    prompts_per_batch: int = 16
    group_size: int = 8


@dataclass
class GRPOLossConfig:
    """Arguments of ``GRPOLoss`` (``cls`` may be ``GRPOLoss``, ``DAPO`` or ``CISPOLoss``)."""

    cls: str = "GRPOLoss"
    clip_epsilon: float = 0.2
    clip_epsilon_high: float | None = None  # set for asymmetric clipping (eps_low = clip_epsilon)
    entropy_coeff: float = 0.0
    kl_to_ref_coeff: float | None = None
    aggregation: str = "token_mean"


@dataclass
class GRPOTrainerSection:
    """The loop: ``iterations`` batches, ``num_epochs`` passes each, Adam at ``lr``."""

    iterations: int = 60
    num_epochs: int = 1
    lr: float = 2e-3
    clip_norm: float | None = 1.0
    batch_size: int | None = None  # answers per gradient step (None: the whole batch)


@dataclass
class GRPORunConfig:
    """The whole ``algo=grpo`` run."""

    algo: str = "grpo"
    seed: int = 0
    num_threads: int = 1
    run_dir: str | None = None  # the run folder (default: runs/grpo-sums-<UTC time>)
    save_interval: int = 1  # iterations between checkpoints of the run folder
    model: GRPOModelConfig = field(default_factory=GRPOModelConfig)
    task: GRPOTaskConfig = field(default_factory=GRPOTaskConfig)
    loss: GRPOLossConfig = field(default_factory=GRPOLossConfig)
    trainer: GRPOTrainerSection = field(default_factory=GRPOTrainerSection)


@dataclass
class GRPOTrainerConfig(ConfigBase):
    """``trainer/grpo_sums``: the ``algo=grpo`` run as a Hydra structured config; instantiating it builds the
    :class:`~tdrl.trainers.algorithms.grpo.GRPOTrainer` (:func:`make_grpo_trainer`).

    Examples:
        >>> from hydra.core.config_store import ConfigStore
        >>> from tdrl.trainers.algorithms.configs import register_configs
        >>> register_configs()
        >>> "grpo_sums.yaml" in ConfigStore.instance().list("trainer")
        True
        >>> OmegaConf.structured(GRPOTrainerConfig).loss.cls
        'GRPOLoss'
    """

    seed: int = 0
    num_threads: int = 1
    save_trainer_file: str | None = None
    save_interval: int = 1
    model: GRPOModelConfig = field(default_factory=GRPOModelConfig)
    task: GRPOTaskConfig = field(default_factory=GRPOTaskConfig)
    loss: GRPOLossConfig = field(default_factory=GRPOLossConfig)
    trainer: GRPOTrainerSection = field(default_factory=GRPOTrainerSection)
    _target_: str = "tdrl.trainers.algorithms.configs.llm.make_grpo_trainer"


def make_grpo_trainer(
    *,
    seed: int = 0,
    num_threads: int = 1,
    save_trainer_file: str | None = None,
    save_interval: int = 1,
    model: Any = None,  # noqa: ANN401
    task: Any = None,  # noqa: ANN401
    loss: Any = None,  # noqa: ANN401
    trainer: Any = None,  # noqa: ANN401
) -> GRPOTrainer:
    """The trainer of :class:`GRPOTrainerConfig`'s fields (``hydra.utils.instantiate`` calls it); ``model``,
    ``task``, ``loss`` and ``trainer`` are its sections (mappings merged onto their defaults, ``None``: defaults).

    Examples:
        >>> make_grpo_trainer.__name__
        'make_grpo_trainer'
    """
    sections = {"seed": seed, "num_threads": num_threads, "save_interval": save_interval, "model": model,
                "task": task, "loss": loss, "trainer": trainer}
    cfg = OmegaConf.merge(OmegaConf.structured(GRPORunConfig), {k: v for k, v in sections.items() if v is not None})
    _check(cfg)
    trainer = build_grpo_trainer(cfg)
    trainer.save_trainer_file = None if save_trainer_file is None else Path(save_trainer_file)
    return trainer


def _check(cfg: Any) -> None:  # noqa: ANN401
    if cfg.algo != "grpo":
        raise ValueError(f"this config runs algo=grpo, got algo={cfg.algo!r}")
    if cfg.task.name != "sums":
        raise ValueError(f"task.name: the built-in LLM task is 'sums', got {cfg.task.name!r}")
    if cfg.loss.cls not in ("GRPOLoss", "DAPO", "CISPOLoss"):
        raise ValueError(f"loss.cls must be GRPOLoss, DAPO or CISPOLoss, got {cfg.loss.cls!r}")
    if cfg.save_interval < 1:
        raise ValueError(f"save_interval must be >= 1, got {cfg.save_interval}")


def compose_grpo_config(overrides: list[str] | None = None, preset: str | Path | None = None) -> Any:  # noqa: ANN401
    """The validated run config: the structured defaults, the preset, then ``key=value`` overrides.

    Examples:
        >>> cfg = compose_grpo_config(["trainer.iterations=3", "algo=grpo"])
        >>> cfg.trainer.iterations, cfg.task.group_size
        (3, 8)
    """
    cfg = OmegaConf.structured(GRPORunConfig)
    cfg = OmegaConf.merge(cfg, OmegaConf.load(preset or PRESET))
    dotlist = [o for o in overrides or [] if not o.startswith("preset=")]
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(dotlist))
    _check(cfg)
    return cfg


def build_grpo_trainer(cfg: Any, *, resumed: int = 0) -> Any:  # noqa: ANN401
    """The ``GRPOTrainer`` of ``cfg`` on the built-in task (needs the ``llm`` extra).

    ``resumed``: the iterations a checkpoint about to be loaded holds; the supervised warm-up is skipped (the
    checkpoint's weights replace it) and the prompts are drawn from a seed of its own (not replayed).
    """
    torch.manual_seed(cfg.seed)
    tokenizer = sums_tokenizer()
    model = tiny_gpt2(len(tokenizer), n_layer=cfg.model.n_layer, n_embd=cfg.model.n_embd, seed=cfg.seed)
    if cfg.model.warmup_steps and not resumed:
        sft_warmup(model, tokenizer, steps=cfg.model.warmup_steps, lr=cfg.model.warmup_lr, seed=cfg.seed)
    task = cfg.task
    env = make_sums_env(tokenizer, num_prompts=task.prompts_per_batch, group_size=task.group_size,
                         seed=cfg.seed + 7919 * resumed)
    policy = TransformersWrapper(model, tokenizer=tokenizer, input_mode="text", return_log_probs=True,
                                 generate_kwargs={"max_new_tokens": 2, "do_sample": True,
                                                  "temperature": cfg.model.temperature})
    scorer = policy.get_new_version(generate=False, input_mode="tokens")
    turns = task.prompts_per_batch * task.group_size
    buffer = ReplayBuffer(storage=LazyStackStorage(turns))
    buffer.append_transform(losses.MCAdvantage(grpo_size=task.group_size))
    collector = LLMCollector(env, policy=policy, dialog_turns_per_batch=turns, replay_buffer=buffer,
                             track_policy_version=True)
    lc = cfg.loss
    eps = lc.clip_epsilon if lc.clip_epsilon_high is None else (lc.clip_epsilon, lc.clip_epsilon_high)
    loss = getattr(losses, lc.cls)(scorer, clip_epsilon=eps, entropy_coeff=lc.entropy_coeff,
                                   entropy_bonus=lc.entropy_coeff > 0, kl_to_ref_coeff=lc.kl_to_ref_coeff,
                                   aggregation=lc.aggregation)
    t = cfg.trainer
    return GRPOTrainer(collector=collector, loss_module=loss, replay_buffer=buffer,
                       optimizer=torch.optim.Adam(model.parameters(), lr=t.lr), total_frames=t.iterations * turns,
                       num_epochs=t.num_epochs, clip_norm=t.clip_norm, batch_size=t.batch_size, log_interval=0,
                       save_interval=cfg.get("save_interval", 1))


def train_grpo(cfg: Any, k: int = 10) -> dict[str, float]:  # noqa: ANN401
    """Builds and trains; returns ``{"first": ..., "last": ..., "iterations": ..., "wall_time_s": ...}`` where
    ``first`` / ``last`` are the mean rewards of the first / last ``k`` iterations (``k`` <= half the run)."""
    torch.set_num_threads(cfg.num_threads)
    t0 = time.perf_counter()
    history = build_grpo_trainer(cfg).train()
    k = max(1, min(k, len(history) // 2))
    mean = lambda rows: sum(r["reward"] for r in rows) / max(1, len(rows))  # noqa: E731
    return {"first": mean(history[:k]), "last": mean(history[-k:]), "k": float(k),
            "iterations": float(len(history)), "wall_time_s": time.perf_counter() - t0}
