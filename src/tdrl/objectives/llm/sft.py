"""Supervised fine-tuning on chat data: :class:`SFTLoss` (negative log-likelihood of the assistant tokens,
or the MinorSFT variant) with an optional k3 KL to a reference model."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Literal

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase
from tensordict.utils import NestedKey
from torch import Tensor, nn

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.objectives.common import LossModule
from tdrl.objectives.llm._utils import k3_kl_token_estimate

__all__ = ["SFTLoss", "SFTLossOutput", "minor_sft_loss", "sft_loss"]


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"Invalid reduction {reduction!r}; expected 'mean', 'sum' or 'none'.")


def sft_loss(summed_log_probs: Tensor, reduction: str) -> Tensor:
    """Negative log-likelihood of each sequence's assistant tokens, reduced.

    Examples:
        >>> sft_loss(torch.tensor([-1.0, -3.0]), "mean")
        tensor(2.)
    """
    return _reduce(-summed_log_probs, reduction)


def minor_sft_loss(log_probs: Tensor, ref_log_probs: Tensor, beta: float, reduction: str) -> Tensor:
    """MinorSFT: ``-log sigmoid(beta * (log_probs - ref_log_probs))`` per sequence (Xie et al., 2024,
    https://arxiv.org/abs/2408.10642), a DPO-like, gentler alternative to plain SFT.

    Examples:
        >>> minor_sft_loss(torch.tensor([0.0]), torch.tensor([0.0]), 0.1, "mean")
        tensor(0.6931)
    """
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"log-probs and reference log-probs differ in shape: {log_probs.shape} vs {ref_log_probs.shape}")
    return _reduce(-nn.functional.logsigmoid(beta * (log_probs - ref_log_probs)), reduction)


class SFTLossOutput(NoCastTensorClass):
    """Output of :class:`SFTLoss`: ``loss_sft`` and, with a KL term, ``loss_kl_to_ref`` / ``kl_to_ref``.

    ``output.sum(reduce=True)`` is the total loss to back-propagate.

    Examples:
        >>> SFTLossOutput(loss_sft=torch.tensor(1.0)).kl_to_ref is None
        True
    """

    loss_sft: Tensor
    loss_kl_to_ref: Tensor | None = None
    kl_to_ref: Tensor | None = None


def chat_template_kwargs(tokenizer_kwargs: dict | None) -> dict:
    """``tokenizer_kwargs`` completed with what the token losses need from ``History.apply_chat_template``:
    assistant masks, token tensors, no padding and no generation prompt.

    Examples:
        >>> chat_template_kwargs({"padding": True})["padding"], chat_template_kwargs(None)["return_tensors"]
        (True, 'pt')
    """
    kwargs = dict(tokenizer_kwargs or {})
    for name, value in (("return_assistant_tokens_mask", True), ("tokenize", True), ("return_tensors", "pt"),
                        ("padding", False), ("add_generation_prompt", False)):
        kwargs.setdefault(name, value)
    return kwargs


def _as_list(td: TensorDictBase, key: NestedKey) -> list[Tensor] | None:
    """The per-sample tensors of ``key`` (ragged lazy-stack entries, nested or dense rows)."""
    if isinstance(td, LazyStackedTensorDict):
        return td.get(key, None, as_list=True)  # type: ignore[call-overload]  # a LazyStackedTensorDict keyword
    value = td.get(key, None)
    if value is None:
        return None
    return list(value.unbind(0))


class SFTLoss(LossModule["SFTLoss._AcceptedKeys"]):
    """Supervised fine-tuning loss on the assistant tokens of a chat history.

    The actor scores the history (``actor_network(td.select(history_key))`` writes ``("log_probs", "full")``,
    aligned with the tokens); tokens outside the assistant mask are ignored. The assistant mask is read from
    ``("masks", "all_assistant_mask")`` (intersected with ``("masks", "all_attention_mask")``) or, when the
    batch has none, from ``history.apply_chat_template(tokenizer, return_assistant_tokens_mask=True, ...)``.

    Args:
        actor_network: the policy in scoring mode (e.g. ``TransformersWrapper(..., generate=False,
            input_mode="history")``).
        tokenizer: the tokenizer for the chat template (default: ``actor_network.tokenizer``).
        tokenizer_kwargs: extra arguments of ``apply_chat_template`` (e.g. ``chat_template_name``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (one value per sequence).
        normalize_by_seq_length: divide each sequence's log-likelihood by its assistant-token count.
        kl_to_ref_coeff: weight of the k3 KL to ``("next", "ref_log_probs", "full")``.
        loss_function: ``"sft"`` (default) or ``"minor_sft"`` (needs reference log-probs).
        beta: MinorSFT temperature.
        device: kept for TorchRL's signature (the loss follows the actor's device).

    Examples:
        >>> class Actor(nn.Module):  # scores every token with log(1/2)
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = nn.Parameter(torch.zeros(()))
        ...     def forward(self, td):
        ...         td["log_probs", "full"] = torch.full(td["history", "full"].shape, -0.6931) + self.w
        ...         return td
        >>> from tensordict import TensorDict
        >>> td = TensorDict({("history", "full"): torch.zeros(2, 3),
        ...     ("masks", "all_assistant_mask"): torch.tensor([[0, 1, 1], [0, 0, 1]]).bool()}, [2])
        >>> SFTLoss(Actor(), tokenizer="unused")(td).loss_sft
        tensor(0.6931, grad_fn=<MeanBackward0>)
    """

    @dataclasses.dataclass
    class _AcceptedKeys(LossModule._AcceptedKeys):
        """Keys of :class:`SFTLoss`."""

        history: NestedKey = ("history", "full")
        ref_log_prob: NestedKey = ("next", "ref_log_probs", "full")
        log_probs: NestedKey = ("log_probs", "full")

    def __init__(
        self,
        actor_network: nn.Module,
        tokenizer: Any = None,
        tokenizer_kwargs: dict | None = None,
        reduction: Literal["mean", "sum", "none"] = "mean",
        normalize_by_seq_length: bool = True,
        kl_to_ref_coeff: float | None = None,
        loss_function: Literal["sft", "minor_sft"] = "sft",
        beta: float = 0.1,
        device: torch.device | None = None,
    ) -> None:
        if tokenizer is None:
            tokenizer = getattr(actor_network, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("SFTLoss needs a tokenizer: pass tokenizer=... or an actor with a .tokenizer.")
        if loss_function not in ("sft", "minor_sft"):
            raise ValueError(f"loss_function must be 'sft' or 'minor_sft', got {loss_function!r}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        super().__init__()
        self.actor_network = actor_network
        self.tokenizer = tokenizer
        self.tokenizer_kwargs = chat_template_kwargs(tokenizer_kwargs)
        self.reduction = reduction
        self.normalize_by_seq_length = normalize_by_seq_length
        if loss_function == "minor_sft" and kl_to_ref_coeff:
            warnings.warn("kl_to_ref_coeff is ignored by minor_sft, whose KL regularisation is implicit; using 0.0.",
                          stacklevel=2)
            kl_to_ref_coeff = 0.0
        self.kl_to_ref_coeff = kl_to_ref_coeff
        self.loss_function = loss_function
        self.beta = beta

    def _collect_in_keys(self) -> list[NestedKey]:
        keys = [self._tensor_keys.history]
        if self.kl_to_ref_coeff is not None or self.loss_function == "minor_sft":
            keys.append(self._tensor_keys.ref_log_prob)
        return keys

    def _assistant_masks(self, td: TensorDictBase) -> list[Tensor]:
        assistant = _as_list(td, ("masks", "all_assistant_mask"))
        attention = _as_list(td, ("masks", "all_attention_mask"))
        if assistant is None:
            history = td.get(self._tensor_keys.history)
            tokens = history.apply_chat_template(tokenizer=self.tokenizer, **self.tokenizer_kwargs)
            if "assistant_masks" not in tokens:
                raise ValueError(
                    "SFTLoss: the chat template gave no 'assistant_masks'; use a template with "
                    "{% generation %} markers (e.g. chat_template_name='chatml_format')."
                )
            assistant = _as_list(tokens, "assistant_masks")
            attention = _as_list(tokens, "attention_mask")
            if assistant is None:
                raise ValueError("SFTLoss: the chat template's tokens hold no 'assistant_masks' entry.")
        masks = [m.bool() for m in assistant]
        if attention is not None:
            masks = [m & a.bool() for m, a in zip(masks, attention)]
        if not all(bool(m.any()) for m in masks):
            raise ValueError("SFTLoss: some sequences have no assistant token to train on.")
        return masks

    def _ref_list(self, td: TensorDictBase, masks: list[Tensor]) -> list[Tensor]:
        key = self._tensor_keys.ref_log_prob
        ref = _as_list(td, key)
        if ref is None:
            raise self._missing(key, td)
        return [r.to(m.device).masked_fill(~m, 0.0) if r.shape == m.shape else r for r, m in zip(ref, masks)]

    def forward(self, tensordict: TensorDictBase) -> SFTLossOutput:
        """Computes ``loss_sft`` (and the KL terms)."""
        masks = self._assistant_masks(tensordict)
        scored = self.actor_network(tensordict.select(self._tensor_keys.history))
        log_probs = _as_list(scored, self._tensor_keys.log_probs)
        if log_probs is None:
            raise self._missing(self._tensor_keys.log_probs, scored)
        if any(m.shape != lp.shape for m, lp in zip(masks, log_probs)) or len(masks) != len(log_probs):
            raise ValueError(
                f"SFTLoss: assistant masks {[tuple(m.shape) for m in masks]} and log-probs "
                f"{[tuple(lp.shape) for lp in log_probs]} differ in shape; the masks must come from the same "
                "tokens the actor scores."
            )
        masked = [lp.masked_fill(~m, 0.0) for lp, m in zip(log_probs, masks)]
        counts = torch.stack([m.sum() for m in masks]).clamp_min(1)
        summed = torch.stack([lp.sum() for lp in masked])
        if self.normalize_by_seq_length:
            summed = summed / counts
        kl = None
        if self.loss_function == "sft":
            loss = sft_loss(summed, self.reduction)
            if self.kl_to_ref_coeff is not None:
                kl = self._kl(masked, self._ref_list(tensordict, masks), masks)
        else:
            ref = self._ref_list(tensordict, masks)
            ref_summed = torch.stack([r.sum() for r in ref]).to(summed.device)
            if self.normalize_by_seq_length:
                ref_summed = ref_summed / counts
            loss = minor_sft_loss(summed, ref_summed, self.beta, self.reduction)
            if self.kl_to_ref_coeff is not None:
                with torch.no_grad():
                    kl = self._kl(masked, ref, masks)
        if kl is None or self.kl_to_ref_coeff is None:
            return SFTLossOutput(loss_sft=loss, batch_size=[])
        return SFTLossOutput(loss_sft=loss, loss_kl_to_ref=self.kl_to_ref_coeff * kl, kl_to_ref=kl.detach(),
                             batch_size=[])

    @staticmethod
    def _kl(cur: list[Tensor], ref: list[Tensor], masks: list[Tensor]) -> Tensor:
        """k3 KL averaged over the assistant tokens (TorchRL averages over every position, see
        docs/differences.md)."""
        cur_flat, ref_flat, mask = torch.cat(cur), torch.cat(ref).to(cur[0].device), torch.cat(masks)
        if cur_flat.shape != ref_flat.shape:
            raise ValueError(f"log-probs and reference log-probs differ in shape: {cur_flat.shape} vs {ref_flat.shape}")
        return k3_kl_token_estimate(ref_flat, cur_flat)[mask].mean()
