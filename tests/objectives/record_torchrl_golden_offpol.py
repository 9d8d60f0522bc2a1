"""Records TorchRL 0.14.1's values for the scenarios of ``_golden_offpol.py`` into
``golden_torchrl_0_14_1_offpol.pt``. Not a test; run with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_torchrl_golden_offpol.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent.parent))

from objectives._golden_offpol import (  # noqa: E402
    GSDE_CASES,
    RND_TRANSFORM_CASES,
    SCENARIOS,
    gsde_trace,
    rnd_transform_trace,
)
from objectives._golden_scenarios import run  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.data
    import torchrl.envs.transforms
    import torchrl.modules
    import torchrl.modules.models.exploration
    import torchrl.objectives

    lib = SimpleNamespace(objectives=torchrl.objectives, modules=torchrl.modules, data=torchrl.data,
                          envs=torchrl.envs.transforms,
                          exploration=torchrl.modules.models.exploration)
    golden: dict = {"torchrl_version": torchrl.__version__, "losses": {}, "rnd_transform": {}, "gsde": {}}
    for name in SCENARIOS:
        golden["losses"][name] = run(lib, name, scenarios=SCENARIOS)
        print(name, sorted(golden["losses"][name]["outs"][0]))
    for name, kwargs in RND_TRANSFORM_CASES.items():
        golden["rnd_transform"][name] = rnd_transform_trace(lib, **kwargs)
        print("rnd_transform", name, sorted(golden["rnd_transform"][name]))
    for name, (lazy, kwargs) in GSDE_CASES.items():
        golden["gsde"][name] = gsde_trace(lib, lazy, **kwargs)
        print("gsde", name, sorted(golden["gsde"][name]))
    path = Path(__file__).with_name("golden_torchrl_0_14_1_offpol.pt")
    torch.save(golden, path)
    print(f"wrote {len(SCENARIOS)} loss scenarios and {len(RND_TRANSFORM_CASES)} RNDTransform traces to {path}")


if __name__ == "__main__":
    main()
