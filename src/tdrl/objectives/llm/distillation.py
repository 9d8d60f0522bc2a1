"""Token-level knowledge distillation of an LLM policy toward a teacher: :class:`DistillationLoss`.

The student scores the history; the teacher's per-token log-probabilities are read from the batch (written by
``RetrieveLogProb(teacher, log_probs_full_key=("teacher_log_probs", "full"))`` or an offline scoring pass).
The per-token KL is the k3 estimate (Agarwal et al., 2024, "On-Policy Distillation of Language Models",
https://arxiv.org/abs/2306.13649).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.objectives.common import LossModule
from tdrl.objectives.llm._utils import k3_kl_token_estimate
from tdrl.objectives.llm.sft import _as_list, _reduce, chat_template_kwargs

__all__ = ["DistillationLoss", "DistillationLossOutput"]

# RetrieveLogProb(assistant_only=True) writes exact zeros outside the assistant tokens; more than this share
# of zeros among the attended non-assistant tokens means the teacher log-probs cannot serve assistant_only=False.
_ZERO_FILLED_SHARE = 0.9


class DistillationLossOutput(NoCastTensorClass):
    """Output of :class:`DistillationLoss`.

    ``loss_distill`` is the loss to back-propagate; ``kl_to_teacher`` (the mean per-sequence KL estimate) is
    detached, for logging, so back-propagate ``loss_distill`` rather than ``output.sum(reduce=True)``.

    Examples:
        >>> out = DistillationLossOutput(loss_distill=torch.tensor(0.5), kl_to_teacher=torch.tensor(0.5))
        >>> float(out.loss_distill)
        0.5
    """

    loss_distill: Tensor
    kl_to_teacher: Tensor


class DistillationLoss(LossModule["DistillationLoss._AcceptedKeys"]):
    """Distills a student LLM policy toward a teacher by minimising a per-token k3 KL estimate.

    ``kl_direction="reverse"`` (default) estimates ``KL(student || teacher)`` (tokens sampled from the
    student: on-policy distillation); ``"forward"`` estimates ``KL(teacher || student)`` (teacher-generated
    tokens). Gradients flow through the student's log-probs only; the teacher's are detached.

    Per sequence, the KL is summed over the selected tokens (the assistant tokens with
    ``assistant_only=True``, else every attended token) and divided by their count when
    ``normalize_by_seq_length``; ``reduction`` then reduces over the sequences. The masks are read from
    ``("masks", "all_assistant_mask")`` / ``("masks", "all_attention_mask")`` or, when absent, from
    ``history.apply_chat_template(tokenizer, **tokenizer_kwargs)``.

    Args:
        actor_network: the student in scoring mode (e.g. ``TransformersWrapper(..., generate=False,
            input_mode="history")``); it writes ``("log_probs", "full")``.
        tokenizer: the tokenizer used to recover the masks (default: ``actor_network.tokenizer``).
        tokenizer_kwargs: extra arguments of ``History.apply_chat_template``.
        kl_direction: ``"reverse"`` or ``"forward"``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (one value per sequence).
        normalize_by_seq_length: divide each sequence's KL by its number of selected tokens.
        assistant_only: only the assistant tokens enter the loss; pair it with the same flag of the
            ``RetrieveLogProb`` that wrote the teacher log-probs.
        device: fallback device (the loss follows the student's device).

    Examples:
        >>> from tensordict import TensorDict
        >>> class Student(nn.Module):  # scores every token with log(1/2) + w
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = nn.Parameter(torch.zeros(()))
        ...     def forward(self, td):
        ...         td["log_probs", "full"] = torch.full(td["history", "full"].shape, -0.6931) + self.w
        ...         return td
        >>> td = TensorDict({("history", "full"): torch.zeros(2, 3),
        ...     ("masks", "all_assistant_mask"): torch.tensor([[0, 1, 1], [0, 0, 1]]).bool(),
        ...     ("masks", "all_attention_mask"): torch.ones(2, 3, dtype=torch.bool),
        ...     ("next", "teacher_log_probs", "full"): torch.full((2, 3), -0.6931)}, [2])
        >>> DistillationLoss(Student())(td).loss_distill
        tensor(0., grad_fn=<MeanBackward0>)
    """

    @dataclasses.dataclass
    class _AcceptedKeys(LossModule._AcceptedKeys):
        """Keys of :class:`DistillationLoss`."""

        history: NestedKey = ("history", "full")
        teacher_log_prob: NestedKey = ("next", "teacher_log_probs", "full")
        log_probs: NestedKey = ("log_probs", "full")

    def __init__(
        self,
        actor_network: nn.Module,
        tokenizer: Any = None,
        tokenizer_kwargs: dict | None = None,
        kl_direction: Literal["reverse", "forward"] = "reverse",
        reduction: Literal["mean", "sum", "none"] = "mean",
        normalize_by_seq_length: bool = True,
        assistant_only: bool = True,
        device: torch.device | None = None,
    ) -> None:
        if kl_direction not in ("reverse", "forward"):
            raise ValueError(f"kl_direction must be 'reverse' or 'forward', got {kl_direction!r}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        super().__init__()
        self.actor_network = actor_network
        self.tokenizer = tokenizer if tokenizer is not None else getattr(actor_network, "tokenizer", None)
        self.tokenizer_kwargs = chat_template_kwargs(tokenizer_kwargs)
        self.kl_direction = kl_direction
        self.reduction = reduction
        self.normalize_by_seq_length = normalize_by_seq_length
        self.assistant_only = assistant_only
        self.device = device

    def _collect_in_keys(self) -> list[NestedKey]:
        return [self._tensor_keys.history, self._tensor_keys.teacher_log_prob]

    def _masks(self, td: TensorDictBase) -> tuple[list[Tensor], list[Tensor], list[Tensor] | None]:
        """The selected-token masks, the attention masks and (when known) the assistant masks, per sample."""
        assistant = _as_list(td, ("masks", "all_assistant_mask"))
        attention = _as_list(td, ("masks", "all_attention_mask"))
        if attention is None or (self.assistant_only and assistant is None):
            if self.tokenizer is None:
                raise ValueError(
                    "DistillationLoss needs a tokenizer to recover the token masks: the batch has no "
                    "('masks', 'all_assistant_mask') / ('masks', 'all_attention_mask') entries; pass "
                    "tokenizer=... or put the masks in the batch."
                )
            tokens = td.get(self._tensor_keys.history).apply_chat_template(
                tokenizer=self.tokenizer, **self.tokenizer_kwargs
            )
            if assistant is None and "assistant_masks" in tokens.keys():
                assistant = _as_list(tokens, "assistant_masks")
            if self.assistant_only and assistant is None:
                raise ValueError(
                    "DistillationLoss(assistant_only=True): the chat template gave no 'assistant_masks'; use a "
                    "template with {% generation %} markers (e.g. chat_template_name='chatml_format')."
                )
            if attention is None:
                attention = _as_list(tokens, "attention_mask")
        if attention is None:
            # tokens built without an attention mask attend to every position
            attention = [torch.ones_like(a, dtype=torch.bool) for a in assistant or []]
        attention = [a.bool() for a in attention]
        assistant = None if assistant is None else [a.bool() for a in assistant]
        if not self.assistant_only:
            return attention, attention, assistant
        assert assistant is not None
        return [s & a for s, a in zip(assistant, attention, strict=True)], attention, assistant

    @staticmethod
    def _check_not_zero_filled(teacher: list[Tensor], attention: list[Tensor], assistant: list[Tensor]) -> None:
        zeros, total = 0, 0
        for t, att, ast in zip(teacher, attention, assistant, strict=True):
            if t.shape != att.shape or t.shape != ast.shape:
                return
            outside = att & ~ast
            total += int(outside.sum())
            zeros += int(((t == 0.0) & outside).sum())
        if total and zeros > _ZERO_FILLED_SHARE * total:
            raise RuntimeError(
                f"DistillationLoss(assistant_only=False): {zeros} of {total} attended non-assistant tokens have a "
                "teacher log-prob of exactly 0.0, the zero-fill of RetrieveLogProb(assistant_only=True); use "
                "DistillationLoss(assistant_only=True) or RetrieveLogProb(assistant_only=False)."
            )

    def forward(self, tensordict: TensorDictBase) -> DistillationLossOutput:
        """Computes ``loss_distill`` and ``kl_to_teacher``."""
        masks, attention, assistant = self._masks(tensordict)
        if not all(bool(m.any()) for m in masks):
            raise ValueError("DistillationLoss: some sequences have no token selected for distillation; check the "
                             "assistant / attention masks of the batch.")
        teacher = _as_list(tensordict, self._tensor_keys.teacher_log_prob)
        if teacher is None:
            raise KeyError(
                f"DistillationLoss: no teacher log-probs at {self._tensor_keys.teacher_log_prob!r}; write them with "
                "RetrieveLogProb(teacher, log_probs_full_key=('teacher_log_probs', 'full')) or point the "
                "teacher_log_prob key at them with set_keys()."
            )
        scored = self.actor_network(tensordict.select(self._tensor_keys.history))
        student = _as_list(scored, self._tensor_keys.log_probs)
        if student is None:
            raise self._missing(self._tensor_keys.log_probs, scored)
        if len(student) != len(teacher) or any(s.shape != t.shape for s, t in zip(student, teacher)):
            raise ValueError(
                f"DistillationLoss: student log-probs {[tuple(s.shape) for s in student]} and teacher log-probs "
                f"{[tuple(t.shape) for t in teacher]} differ in shape; both models must score the same tokens."
            )
        if any(m.shape != s.shape for m, s in zip(masks, student, strict=True)):
            raise ValueError(f"DistillationLoss: masks {[tuple(m.shape) for m in masks]} and log-probs "
                             f"{[tuple(s.shape) for s in student]} differ in shape.")
        if not self.assistant_only and assistant is not None:
            self._check_not_zero_filled(teacher, attention, assistant)
        summed = []
        for s, t, m in zip(student, teacher, masks, strict=True):
            s, t = s.masked_fill(~m, 0.0), t.detach().to(s.device).masked_fill(~m, 0.0)
            kl = k3_kl_token_estimate(t, s) if self.kl_direction == "reverse" else k3_kl_token_estimate(s, t)
            summed.append(kl.sum())
        per_seq = torch.stack(summed)
        if self.normalize_by_seq_length:
            per_seq = per_seq / torch.stack([m.sum() for m in masks]).to(per_seq.device).clamp_min(1)
        return DistillationLossOutput(loss_distill=_reduce(per_seq, self.reduction),
                                      kl_to_teacher=per_seq.detach().mean(), batch_size=[])
