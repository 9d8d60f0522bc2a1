"""Records TorchRL 0.14.1's ``GPT2RewardModel`` outputs and reward loss on a tiny saved GPT-2 (run by hand)::

    ~/.cache/torchrl-anchor-venv/bin/python tests/modules/models/record_torchrl_reward_golden.py

writes ``gpt2_reward_torchrl_0_14_1.pt`` (the model's weights, its rewards, end scores and pairwise loss).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _reward_scenario import CHOSEN, PAD, REJECTED, save_tiny_gpt2  # noqa: E402


def main() -> None:
    import torchrl
    from torchrl.modules.models import GPT2RewardModel

    with tempfile.TemporaryDirectory() as path:
        save_tiny_gpt2(path)
        torch.manual_seed(1)
        model = GPT2RewardModel(model_path=path, pad_token_id=PAD)
    out = {"torchrl_version": torchrl.__version__, "state_dict": model.state_dict()}
    batches = {}
    for name, ids in (("chosen", CHOSEN), ("rejected", REJECTED)):
        rewards, end_scores = model(ids, (ids != PAD).long())
        out[f"{name}_rewards"], out[f"{name}_end_scores"] = rewards.detach(), end_scores.detach()
        batches[name] = SimpleNamespace(input_ids=ids, rewards=rewards)
    loss = model.compute_reward_loss(batches["chosen"], batches["rejected"])
    out["loss"] = loss.detach()
    out["loss_grad"] = torch.autograd.grad(loss, model.lm_head.weight)[0]
    path = Path(__file__).with_name("gpt2_reward_torchrl_0_14_1.pt")
    torch.save(out, path)
    print(f"wrote {path}: loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
