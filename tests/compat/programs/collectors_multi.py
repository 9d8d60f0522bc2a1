"""(h) MultiSyncCollector with 2 worker processes."""

import torch
from tensordict.nn import TensorDictModule

from tdrl.collectors import MultiSyncCollector
from tdrl.envs import GymEnv


def make_env():
    return GymEnv("Pendulum-v1")


def main():
    torch.manual_seed(0)
    policy = TensorDictModule(torch.nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])
    collector = MultiSyncCollector(
        [make_env, make_env],
        policy,
        frames_per_batch=40,
        total_frames=80,
    )
    collector.set_seed(0)
    total = 0
    for data in collector:
        assert data.numel() == 40, data.batch_size
        assert ("next", "reward") in data.keys(True)
        assert torch.isfinite(data["next", "observation"]).all()
        total += data.numel()
        with torch.no_grad():
            policy.module.weight.mul_(0.5)
        collector.update_policy_weights_()
    collector.shutdown()
    assert total == 80
    print("OK collectors_multi")


if __name__ == "__main__":
    main()
