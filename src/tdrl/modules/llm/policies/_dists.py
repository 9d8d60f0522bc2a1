"""The distributions the LLM losses ask a scoring wrapper for (``get_dist`` and its masking variants).

``LLMDistributions`` is a mixin of :class:`~tdrl.modules.llm.policies.common.LLMWrapperBase`: every method
runs the wrapper's scoring forward with ``logits_only=True`` (logits aligned with ``tokens.full`` and the
masks, in the input's padded layout) and returns an ``LLMMaskedCategorical`` over the positions that count.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from tensordict import NestedKey, TensorDictBase
from torch import distributions as D

from tdrl.modules.distributions.llm import LLMMaskedCategorical

__all__ = ["LLMDistributions", "LogProbDistribution"]


class LogProbDistribution(D.Distribution):
    """A distribution that only knows precomputed per-token log-probabilities (e.g. from an engine).

    ``log_prob(tokens)`` returns the stored values (zeroed where ``mask`` is false); the tokens must have the
    stored shape. It has no logits, so it cannot sample nor give an entropy.

    Args:
        log_probs: ``[*B, T]`` log-probabilities.
        mask: optional ``[*B, T]`` mask of the positions that count.

    Examples:
        >>> import torch
        >>> d = LogProbDistribution(torch.tensor([[-1.0, -2.0]]), mask=torch.tensor([[False, True]]))
        >>> d.log_prob(torch.tensor([[3, 4]]))
        tensor([[ 0., -2.]])
    """

    arg_constraints: ClassVar[dict] = {}

    def __init__(self, log_probs: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        self.log_probs = log_probs
        self.mask = None if mask is None else mask.bool()
        super().__init__(batch_shape=log_probs.shape, event_shape=torch.Size(), validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The stored log-probabilities (``value`` only fixes the shape)."""
        if value.shape != self.log_probs.shape:
            raise ValueError(f"tokens of shape {tuple(value.shape)} != stored log-probs {tuple(self.log_probs.shape)}")
        if self.mask is None:
            return self.log_probs.clone()
        return torch.where(self.mask, self.log_probs, torch.zeros((), dtype=self.log_probs.dtype))


class LLMDistributions:
    """``get_dist`` and the ``sft`` / ``rlhf`` / ``generic`` masking dists of the LLM wrappers."""

    generate: bool
    masks_key: NestedKey
    tokens_key: NestedKey

    def _logits_and_masks(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, TensorDictBase]:
        """Runs a scoring forward keeping the logits. Returns the logits ``[B, L, V]`` aligned with the tokens,
        the attention mask ``[B, L]`` and the whole output, all in the input's padded layout (left-padded when
        the input is ragged, the layout in which the losses read ragged tokens)."""
        if self.generate:
            raise RuntimeError(
                "get_dist needs a scoring wrapper (generate=False); build one with get_new_version(generate=False)"
            )
        out = self.forward(tensordict.copy(), logits_only=True)
        return out.get("logits"), out.get("attention_mask"), out

    def _ragged_or_padded(self, out: TensorDictBase, key: NestedKey, like: torch.Tensor) -> torch.Tensor:
        value = out.get(key, None)
        if value is None:
            raise KeyError(f"no mask at {key!r} in the scoring output (keys: {sorted(map(str, out.keys(True, True)))})")
        if value.shape != like.shape:
            raise ValueError(f"{key!r}: mask shape {tuple(value.shape)} differs from the logits' {tuple(like.shape)}")
        return value.bool()

    def get_dist(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        logits_key: NestedKey = "logits",
        mask_key: NestedKey | None = None,
        as_padded_tensor: bool | None = None,
        as_nested_tensor: bool | None = None,
        padding_value: float | None = None,
        padding_side: str = "left",
        layout: torch.layout | None = None,
        **kwargs: Any,
    ) -> D.Distribution:
        """The per-position ``LLMMaskedCategorical`` over ``tokens.full`` (``generate=False`` only).

        ``logits[t]`` predicts token ``t`` (position 0 holds zeros); ``mask_key`` selects the positions that
        count, by default every real token. ``dist.log_prob(tokens.full)`` equals ``log_probs.full``.
        """
        del tensordict_out, as_padded_tensor, as_nested_tensor, padding_value, padding_side, layout, kwargs
        if logits_key != "logits":
            raise ValueError(f"get_dist computes the logits itself; logits_key must be 'logits', got {logits_key!r}")
        logits, attn, out = self._logits_and_masks(tensordict)
        mask = attn if mask_key is None else self._ragged_or_padded(out, mask_key, attn)
        return LLMMaskedCategorical(logits=logits, mask=mask)

    def _get_dist_with_custom_mask(
        self, tensordict: TensorDictBase, mask: torch.Tensor, logits_key: NestedKey = "logits", **kwargs: Any
    ) -> D.Distribution:
        """``LLMMaskedCategorical`` with a caller-given position mask (shaped like the padded logits)."""
        del logits_key, kwargs
        logits, _, _ = self._logits_and_masks(tensordict)
        if mask.shape != logits.shape[:-1]:
            raise ValueError(f"custom mask of shape {tuple(mask.shape)}, expected {tuple(logits.shape[:-1])}")
        return LLMMaskedCategorical(logits=logits, mask=mask.bool())

    def _get_dist_with_attention_mask(self, tensordict: TensorDictBase, **kwargs: Any) -> D.Distribution:
        """Every real token counts (``masking_strategy="generic"``)."""
        logits, attn, _ = self._logits_and_masks(tensordict)
        return LLMMaskedCategorical(logits=logits, mask=attn)

    def _get_dist_with_assistant_mask(
        self,
        tensordict: TensorDictBase,
        assistant_mask_key: NestedKey = ("masks", "all_assistant_mask"),
        **kwargs: Any,
    ) -> D.Distribution:
        """Only assistant tokens count (``masking_strategy="rlhf"``)."""
        del assistant_mask_key  # the scoring output always holds the assistant mask it found or derived
        logits, attn, out = self._logits_and_masks(tensordict)
        if out.get("assistant_mask", None) is None:
            raise KeyError(
                "no assistant mask: score history with an assistant-aware chat template, or pass tokens with "
                f"({self.masks_key!r}, 'all_assistant_mask') or ({self.tokens_key!r}, 'prompt')"
            )
        return LLMMaskedCategorical(logits=logits, mask=self._ragged_or_padded(out, "assistant_mask", attn) & attn)

    def _get_dist_with_prompt_mask(
        self,
        tensordict: TensorDictBase,
        tokens_key: NestedKey = ("tokens", "prompt"),
        assistant_mask_key: NestedKey = ("masks", "all_assistant_mask"),
        **kwargs: Any,
    ) -> D.Distribution:
        """Only response tokens count: the prompt is masked out (``masking_strategy="sft"``).

        The response positions are the real tokens after each sample's prompt length (read from
        ``tokens_key``); without prompt tokens the assistant mask is used instead.
        """
        del tokens_key  # the scoring forward reads the prompt under its own tokens_key
        logits, attn, out = self._logits_and_masks(tensordict)
        if out.get("prompt_mask", None) is None:
            return self._get_dist_with_assistant_mask(tensordict, assistant_mask_key=assistant_mask_key)
        prompt_mask = self._ragged_or_padded(out, "prompt_mask", attn)
        return LLMMaskedCategorical(logits=logits, mask=attn & ~prompt_mask)

    def _get_sft_dist(self, tensordict: TensorDictBase, **kwargs: Any) -> D.Distribution:
        """The distribution of ``masking_strategy="sft"`` (response tokens only)."""
        return self._get_dist_with_prompt_mask(tensordict, **kwargs)

    def _get_rlhf_dist(self, tensordict: TensorDictBase, **kwargs: Any) -> D.Distribution:
        """The distribution of ``masking_strategy="rlhf"`` (assistant tokens only)."""
        return self._get_dist_with_assistant_mask(tensordict, **kwargs)

    def _get_generic_dist(self, tensordict: TensorDictBase, **kwargs: Any) -> D.Distribution:
        """The distribution of ``masking_strategy="generic"`` (every real token)."""
        return self._get_dist_with_attention_mask(tensordict, **kwargs)
