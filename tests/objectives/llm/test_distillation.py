"""DistillationLoss: TorchRL 0.14.1 golden values and gradients, the KL by hand, the zero-fill check, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

from tdrl.objectives.llm import DistillationLoss, DistillationLossOutput

from ._actor import TinyTokenActor
from ._distill_scenarios import DISTILL_SCENARIOS, build_distill, run_distill

GOLDEN = torch.load(Path(__file__).with_name("golden_distill_torchrl_0_14_1.pt"), weights_only=True)["distill"]


@pytest.mark.parametrize("name", list(DISTILL_SCENARIOS))
def test_loss_and_gradient_match_torchrl(name):
    ours, ref = run_distill(DistillationLoss, name), GOLDEN[name]
    for key in ("loss_distill", "kl_to_teacher"):
        torch.testing.assert_close(ours["values"][key], ref["values"][key])
    for g, r in zip(ours["grads"], ref["grads"], strict=True):
        torch.testing.assert_close(g, r)


@pytest.mark.parametrize("direction", ["reverse", "forward"])
def test_kl_by_hand(direction):
    loss, student, td = build_distill(DistillationLoss, "reverse_mean")
    loss.kl_direction = direction
    out = loss(td)
    assert isinstance(out, DistillationLossOutput) and out.loss_distill.requires_grad
    assert not out.kl_to_teacher.requires_grad
    scored = student(td.select(("tokens", "full"))).get(("log_probs", "full"), as_list=True)
    teacher = td.get(("next", "teacher_log_probs", "full"), as_list=True)
    masks = [m & a for m, a in zip(td.get(("masks", "all_assistant_mask"), as_list=True),
                                   td.get(("masks", "all_attention_mask"), as_list=True))]
    per_seq = []
    for s, t, m in zip(scored, teacher, masks):
        d = (t - s)[m] if direction == "reverse" else (s - t)[m]
        per_seq.append((d.expm1() - d).mean())
    torch.testing.assert_close(out.loss_distill, torch.stack(per_seq).mean())


def test_identical_teacher_gives_zero_and_student_moves_toward_teacher():
    loss, student, td = build_distill(DistillationLoss, "reverse_mean")
    with torch.no_grad():
        td["next", "teacher_log_probs", "full"] = student(td.select(("tokens", "full")))["log_probs", "full"]
    torch.testing.assert_close(loss(td).loss_distill, torch.tensor(0.0))
    loss, student, td = build_distill(DistillationLoss, "reverse_mean")
    opt = torch.optim.Adam(student.parameters(), lr=0.05)
    first = loss(td).loss_distill.item()
    for _ in range(30):
        opt.zero_grad()
        loss(td).loss_distill.backward()
        opt.step()
    assert loss(td).loss_distill.item() < 0.5 * first


def test_zero_filled_teacher_with_all_tokens_is_an_error():
    loss, _, td = build_distill(DistillationLoss, "reverse_none_all_tokens")
    assistant = td.get(("masks", "all_assistant_mask"), as_list=True)
    teacher = td.get(("next", "teacher_log_probs", "full"), as_list=True)
    for i, (t, a) in enumerate(zip(teacher, assistant)):
        td[i]["next", "teacher_log_probs", "full"] = torch.where(a, t, 0.0)
    with pytest.raises(RuntimeError, match="assistant_only=True"):
        loss(td)


def test_errors():
    student = TinyTokenActor()
    with pytest.raises(ValueError, match="kl_direction"):
        DistillationLoss(student, kl_direction="sideways")
    with pytest.raises(ValueError, match="reduction"):
        DistillationLoss(student, reduction="max")
    loss, _, td = build_distill(DistillationLoss, "reverse_mean")
    with pytest.raises(KeyError, match="teacher_log_probs"):
        loss(td.exclude(("next", "teacher_log_probs", "full")))
    no_masks = td.exclude(("masks", "all_assistant_mask"))
    with pytest.raises(ValueError, match="tokenizer"):
        DistillationLoss(student).set_keys(history=("tokens", "full"))(no_masks)
    empty = TensorDict({("history", "full"): torch.zeros(1, 3),
                        ("masks", "all_assistant_mask"): torch.zeros(1, 3, dtype=torch.bool),
                        ("masks", "all_attention_mask"): torch.ones(1, 3, dtype=torch.bool),
                        ("next", "teacher_log_probs", "full"): torch.zeros(1, 3)}, [1])
    with pytest.raises(ValueError, match="no token selected"):
        DistillationLoss(student)(empty)
    short = td.clone()
    for i in range(len(short.tensordicts)):
        short[i]["next", "teacher_log_probs", "full"] = torch.zeros(1)
    with pytest.raises(ValueError, match="differ in shape"):
        loss(short)
