"""Records TorchRL 0.14.1's Q-value hooks, ``MultiStepActorWrapper`` and ``has_analytic_kl`` on the scenarios
of ``test_wrappers_hooks.py`` into ``wrappers_torchrl_0_14_1.json``. Not a test; run with the TorchRL reference
interpreter from the repository root::

    /root/.cache/torchrl-anchor-venv/bin/python tests/modules/record_wrappers_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _wrapper_scenarios import (  # noqa: E402
    KL_PAIRS,
    MULTISTEP_CASES,
    QVALUE_CASES,
    distributional_net,
    multistep_actor,
    multistep_inputs,
    qvalue_net,
)


def main() -> None:
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule
    from torchrl.modules import DistributionalQValueHook, MultiStepActorWrapper, QValueHook
    from torchrl.modules.distributions import has_analytic_kl

    golden: dict = {}
    for name, (space, var_nums, n_out) in QVALUE_CASES.items():
        net = qvalue_net(n_out)
        net.register_forward_hook(QValueHook(space, var_nums=var_nums))
        out = net(torch.linspace(-1, 1, 12).reshape(3, 4))
        golden[f"qvalue_{name}"] = [t.tolist() for t in out]
    net = distributional_net()
    support = torch.tensor([-1.0, 0.0, 2.0])
    net.register_forward_hook(DistributionalQValueHook("one_hot", support=support))
    action, log_probs = net(torch.linspace(-1, 1, 12).reshape(3, 4))
    golden["dist_qvalue_one_hot"] = [action.tolist(), log_probs.tolist()]
    for name, kwargs in MULTISTEP_CASES.items():
        actor = MultiStepActorWrapper(
            TensorDictModule(
                multistep_actor(kwargs.get("n", 3)), ["observation"], [kwargs.get("out", "action")]
            ),
            **kwargs["wrapper"],
        )
        td = None
        seq = []
        for obs, is_init in multistep_inputs():
            td = (
                TensorDict(observation=obs, is_init=is_init, batch_size=[3])
                if td is None
                else td.exclude("action")
            )
            td.set("observation", obs)
            td.set("is_init", is_init)
            td = actor(td)
            seq.append([td["action"].tolist(), td["counter"].tolist()])
        golden[f"multistep_{name}"] = seq
    golden["has_analytic_kl"] = [bool(has_analytic_kl(p(), q())) for p, q in KL_PAIRS]
    out = Path(__file__).parent / "wrappers_torchrl_0_14_1.json"
    out.write_text(json.dumps(golden, indent=0))
    print("wrote", out)


if __name__ == "__main__":
    main()
