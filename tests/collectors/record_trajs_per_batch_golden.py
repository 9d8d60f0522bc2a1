"""Records TorchRL 0.14.1's ``Collector(trajs_per_batch=...)`` output layout on the scenario of
``test_trajs_per_batch.py`` into ``golden/trajs_per_batch_torchrl_0_14_1.pt``. Not a test; run with the
TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/collectors/record_trajs_per_batch_golden.py
"""

from __future__ import annotations

from pathlib import Path

import torch

# Kept identical to test_trajs_per_batch.SCENARIO.
SCENARIO = {"frames_per_batch": 16, "total_frames": 160, "trajs_per_batch": 3, "max_frames_per_traj": 20, "seed": 0}
KEYS = ["observation", ("next", "observation"), ("next", "done"), ("next", "truncated"), ("collector", "traj_ids")]


class BalancePolicy(torch.nn.Module):
    """CartPole: follow the cart velocity: episodes of varied length (deterministic), as a one-hot action."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        right = (obs[..., 1] > 0).long()
        return torch.nn.functional.one_hot(right, 2)


def summarize(batch) -> dict:
    out = {"shape": list(batch.shape)}
    for key in KEYS + ([("collector", "mask")] if ("collector", "mask") in batch.keys(True) else []):
        out["/".join(key) if isinstance(key, tuple) else key] = batch.get(key).clone()
    return out


def main() -> None:
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.envs import GymEnv

    golden = {}
    for fmt in ("padded", "cat"):
        env = GymEnv("CartPole-v1")
        env.set_seed(SCENARIO["seed"])
        policy = TensorDictModule(BalancePolicy(), in_keys=["observation"], out_keys=["action"])
        collector = Collector(
            env, policy, frames_per_batch=SCENARIO["frames_per_batch"], total_frames=SCENARIO["total_frames"],
            trajs_per_batch=SCENARIO["trajs_per_batch"], max_frames_per_traj=SCENARIO["max_frames_per_traj"],
            traj_format=fmt,
        )
        golden[fmt] = [summarize(batch) for batch in collector]
        collector.shutdown()
    path = Path(__file__).parent / "golden" / "trajs_per_batch_torchrl_0_14_1.pt"
    torch.save(golden, path)
    print(path, {k: [b["shape"] for b in v] for k, v in golden.items()})


if __name__ == "__main__":
    main()
