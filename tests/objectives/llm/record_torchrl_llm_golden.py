"""Records TorchRL 0.14.1's GRPO/DAPO/CISPO values and gradients (``_scenarios.py``), its MCAdvantage
outputs (``_mc_scenarios.py``) and its SFT losses into ``golden_llm_torchrl_0_14_1.pt``. Not a test; run
with the TorchRL reference interpreter::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/llm/record_torchrl_llm_golden.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _mc_scenarios import MC_SCENARIOS, run_mc  # noqa: E402
from _scenarios import SCENARIOS, run  # noqa: E402
from _sft_scenarios import SFT_SCENARIOS, run_sft  # noqa: E402


def main() -> None:
    import torchrl
    import torchrl.objectives.llm as llm
    from tensordict import TensorDict
    from torchrl.data import LazyStackStorage, ReplayBuffer
    from torchrl.modules.distributions import LLMMaskedCategorical

    golden = {"torchrl_version": torchrl.__version__, "grpo": {}, "mc": {}, "sft": {}}
    for name in SCENARIOS:
        golden["grpo"][name] = run(llm, TensorDict, LLMMaskedCategorical, name)
        print(name, sorted(golden["grpo"][name]["values"]))
    for name in MC_SCENARIOS:
        golden["mc"][name] = run_mc(llm.MCAdvantage, ReplayBuffer, LazyStackStorage, name)
        print(name, len(golden["mc"][name]["written"]))
    for name in SFT_SCENARIOS:
        golden["sft"][name] = run_sft(llm.SFTLoss, name)
        print(name, sorted(golden["sft"][name]["values"]))
    path = Path(__file__).with_name("golden_llm_torchrl_0_14_1.pt")
    torch.save(golden, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
