"""GRPO on a tiny GPT-2 that learns one-digit sums modulo 10 ("3+4=" -> "7"), on CPU, in minutes.

Assembled from library parts: a ``DatasetChatEnv`` with a reward parser, a ``TransformersWrapper`` that
generates (and its ``generate=False`` twin that scores), an ``LLMCollector`` writing into a replay buffer
whose ``MCAdvantage`` normalises the rewards of each prompt's group, ``GRPOLoss`` and ``GRPOTrainer``.
A short supervised warm-up on half of the sums teaches the answer format, so that rewards are not all
zero; GRPO then raises the reward, including on the sums the warm-up never showed.

    OMP_NUM_THREADS=1 python examples/llm/grpo_tiny.py            # full run (see README.md)
    OMP_NUM_THREADS=1 python examples/llm/grpo_tiny.py --iterations 2 --warmup-steps 5   # smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass, fields
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tdrl.collectors.llm import LLMCollector  # noqa: E402
from tdrl.data import LazyStackStorage, ReplayBuffer  # noqa: E402
from tdrl.modules.llm import TransformersWrapper  # noqa: E402
from tdrl.objectives.llm import GRPOLoss, MCAdvantage  # noqa: E402
from tdrl.trainers.algorithms._llm_sums import make_sums_env, sft_warmup, sums_tokenizer, tiny_gpt2  # noqa: E402
from tdrl.trainers.algorithms.grpo import GRPOTrainer  # noqa: E402


@dataclass
class Hyper:
    """Every hyperparameter of the run (each one is also a command-line flag)."""

    seed: int = 0
    n_layer: int = 2
    n_embd: int = 64
    warmup_steps: int = 300  # supervised steps on half of the sums before RL
    warmup_lr: float = 3e-3
    prompts_per_batch: int = 16
    group_size: int = 8  # answers per prompt (the GRPO group)
    iterations: int = 150
    epochs: int = 1
    lr: float = 2e-3
    clip_epsilon: float = 0.2
    entropy_coeff: float = 0.0
    temperature: float = 1.0
    report_k: int = 10  # the summary compares the mean reward of the first and last k iterations


README = Path(__file__).with_name("README.md")
README_MARK = "<!-- grpo_tiny summary: written by `python examples/llm/grpo_tiny.py --update-readme` -->"


def parse() -> tuple[Hyper, bool]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Hyper):
        parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    parser.add_argument("--update-readme", action="store_true", help="write the summary line into README.md")
    args = vars(parser.parse_args())
    update = args.pop("update_readme")
    return Hyper(**args), update


def update_readme(summary: str) -> None:
    """Replaces the summary block that follows README_MARK with ``summary``."""
    text = README.read_text()
    head, mark, rest = text.partition(README_MARK)
    if not mark:
        raise ValueError(f"{README} has no line {README_MARK!r}")
    _, fence, after = rest.partition("```\n")
    _, end, tail = after.partition("```\n")
    if not (fence and end):
        raise ValueError(f"{README}: no ``` block after the summary mark")
    README.write_text(f"{head}{mark}\n```\n{summary}\n```\n{tail}")


def build(h: Hyper) -> GRPOTrainer:
    torch.manual_seed(h.seed)
    tokenizer = sums_tokenizer()
    model = tiny_gpt2(len(tokenizer), n_layer=h.n_layer, n_embd=h.n_embd, seed=h.seed)
    sft_warmup(model, tokenizer, steps=h.warmup_steps, lr=h.warmup_lr, seed=h.seed)

    env = make_sums_env(tokenizer, num_prompts=h.prompts_per_batch, group_size=h.group_size, seed=h.seed)
    policy = TransformersWrapper(
        model, tokenizer=tokenizer, input_mode="text", return_log_probs=True,
        generate_kwargs={"max_new_tokens": 2, "do_sample": True, "temperature": h.temperature},
    )
    # same model, scoring the sampled tokens themselves (token-in, token-out: no re-tokenized text)
    scorer = policy.get_new_version(generate=False, input_mode="tokens")

    buffer = ReplayBuffer(storage=LazyStackStorage(h.prompts_per_batch * h.group_size))
    buffer.append_transform(MCAdvantage(grpo_size=h.group_size))
    collector = LLMCollector(env, policy=policy, dialog_turns_per_batch=h.prompts_per_batch * h.group_size,
                             replay_buffer=buffer, track_policy_version=True)
    loss = GRPOLoss(scorer, clip_epsilon=h.clip_epsilon, entropy_coeff=h.entropy_coeff,
                    entropy_bonus=h.entropy_coeff > 0)
    optimizer = torch.optim.Adam(model.parameters(), lr=h.lr)
    return GRPOTrainer(collector=collector, loss_module=loss, optimizer=optimizer, replay_buffer=buffer,
                       num_epochs=h.epochs, total_frames=h.iterations * h.prompts_per_batch * h.group_size,
                       log_interval=0)


def main() -> dict[str, float]:
    h, write_readme = parse()
    torch.set_num_threads(1)
    t0, cpu0 = time.perf_counter(), time.process_time()
    trainer = build(h)
    history = trainer.train()
    for row in history:
        print(f"iter {int(row['iteration']) + 1:3d}  reward {row['reward']:.3f}  ESS {row.get('ESS', 1.0):.3f}  "
              f"t {row['wall_time_s']:.0f}s")
    k = max(1, min(h.report_k, len(history) // 2))
    first = sum(r["reward"] for r in history[:k]) / k
    last = sum(r["reward"] for r in history[-k:]) / k
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    machine = f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}"
    summary = (f"summary: mean reward first {k} iterations {first:.3f} -> last {k} {last:.3f} "
               f"({last - first:+.3f}) in {wall:.0f}s wall-clock, {cpu:.0f}s CPU, on {machine}")
    print(summary)
    if write_readme:
        update_readme(summary)
    return {"first": first, "last": last, "wall_s": wall, "cpu_s": cpu}


if __name__ == "__main__":
    main()
