"""Records TorchRL 0.14.1's ``Evaluator.evaluate()`` metrics on the scenario of ``test_evaluator.py`` into
``golden/evaluator_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/collectors/record_evaluator_golden.py
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

SCENARIO = {"num_trajectories": 3, "max_steps": 20, "seed": 0}  # kept identical to test_evaluator.SCENARIO


class BalancePolicy(torch.nn.Module):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot((obs[..., 1] > 0).long(), 2)


def main() -> None:
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Evaluator
    from torchrl.envs import GymEnv

    env = GymEnv("CartPole-v1")
    env.set_seed(SCENARIO["seed"])
    policy = TensorDictModule(BalancePolicy(), in_keys=["observation"], out_keys=["action"])
    evaluator = Evaluator(env, policy, num_trajectories=SCENARIO["num_trajectories"], max_steps=SCENARIO["max_steps"])
    result = evaluator.evaluate(step=7)
    evaluator.shutdown()
    golden = {k: (v.item() if hasattr(v, "item") else v) for k, v in result.items() if not k.endswith("/fps")}
    path = Path(__file__).parent / "golden" / "evaluator_torchrl_0_14_1.json"
    path.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(path, golden, sorted(result))


if __name__ == "__main__":
    main()
