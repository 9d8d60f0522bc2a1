"""Draws the learning curve of a ``train.py --out RESULT.json`` run (mean episode reward per agent per batch).

python examples/mappo/plot_curve.py docs/results/mappo_navigation.json docs/results/mappo_navigation.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: str, dst: str) -> None:
    with open(src) as f:
        result = json.load(f)
    points = [
        (p["frames"], p["episode_reward_mean"])
        for p in result["curve"]
        if p["episode_reward_mean"] is not None
    ]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([x for x, _ in points], [y for _, y in points], marker="o")
    ax.axhline(
        result["eval_return_mean"],
        color="gray",
        linestyle="--",
        label=f"last policy, deterministic: {result['eval_return_mean']:.2f}",
    )
    ax.set_xlabel("frames")
    ax.set_ylabel("episode reward per agent")
    ax.set_title(f"MAPPO on VMAS {result['scenario']} ({result['n_agents']} agents), seed {result['seed']}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    main(*sys.argv[1:3])
