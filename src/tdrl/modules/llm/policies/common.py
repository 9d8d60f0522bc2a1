"""``LLMWrapperBase``: the interface shared by ``TransformersWrapper`` and ``vLLMWrapper``.

The base class parses the constructor options every backend shares (input mode and keys, padding, log-probs,
samples, ``inplace``), standardises generation arguments across backends, routes ``forward`` to the backend's
generate or score path on ragged token lists, lays the results out in the output containers, and provides the
distributions the LLM losses ask for (``get_dist`` and its masking variants).

The output containers (``Text``, ``Tokens``, ``Masks``, ``LogProbs``, ``ChatHistory``) are defined in
:mod:`tdrl.modules.llm.policies.containers` and importable from here, as in TorchRL.
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar, Literal

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import distributions as D

from tdrl.modules.distributions.llm import LLMMaskedCategorical
from tdrl.modules.llm.policies._layout import pad
from tdrl.modules.llm.policies.containers import ChatHistory, LogProbs, Masks, Text, Tokens

__all__ = ["ChatHistory", "LLMWrapperBase", "LogProbDistribution", "LogProbs", "Masks", "Text", "Tokens"]

_INPUT_MODES = ("history", "text", "tokens")


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


class LLMWrapperBase(TensorDictModuleBase):
    """Base class of the LLM policy wrappers (TorchRL's ``LLMWrapperBase``).

    Subclasses implement two backend hooks on ragged int64 token lists: ``_generate_ragged(prompts)`` returning
    the responses and (optionally) their log-probs, and ``_score_ragged(sequences, return_logits)`` returning
    per-sequence log-probs (``lp[0] = 0``) and, for ``get_dist``, logits aligned with the tokens.

    Attributes:
        COMMON_GENERATION_PARAMS: generation arguments every backend understands.
        collector: the collector the wrapper was registered with, if any.
    """

    COMMON_GENERATION_PARAMS: ClassVar[set[str]] = {
        "max_new_tokens",
        "num_return_sequences",
        "temperature",
        "top_p",
        "top_k",
        "repetition_penalty",
        "do_sample",
        "num_beams",
        "length_penalty",
        "early_stopping",
        "stop_sequences",
        "skip_special_tokens",
        "logprobs",
    }

    def __init__(self) -> None:
        super().__init__()
        self._collector: weakref.ReferenceType | None = None

    # ----------------------------------------------------------------- constructor helpers (shared)
    def _setup_common(
        self,
        *,
        input_mode: str,
        input_key: NestedKey | None,
        generate: bool,
        pad_output: bool,
        pad_model_input: bool | None,
        return_log_probs: bool | None,
        inplace: Literal[True, False, "empty"] | None,
        num_samples: int | None,
        n_from_kwargs: int,
        layout: torch.layout | None,
        keys: dict[str, NestedKey],
    ) -> None:
        """Validates and stores the options shared by every backend; sets ``in_keys``/``out_keys``."""
        if input_mode not in _INPUT_MODES:
            raise ValueError(f"input_mode must be one of {_INPUT_MODES}, got {input_mode!r}")
        if not isinstance(pad_output, bool):
            raise ValueError(f"pad_output must be a bool, got {pad_output!r}")
        if pad_model_input is not None and generate:
            raise ValueError("pad_model_input only applies to scoring (generate=False); leave it None when generating")
        if return_log_probs is False and not generate:
            raise ValueError("return_log_probs must be True when generate=False (scoring returns log-probs)")
        self.input_mode = input_mode
        self.generate = bool(generate)
        self.pad_output = pad_output
        self.pad_model_input = True if pad_model_input is None else bool(pad_model_input)
        self.return_log_probs = True if return_log_probs is None else bool(return_log_probs)
        self.layout = torch.strided if layout is None and not pad_output else layout
        for name, key in keys.items():
            setattr(self, name, key)
        self.num_samples, self.inplace = self._resolve_samples(num_samples, n_from_kwargs, inplace)
        default = (input_mode, "prompt" if self.generate else "full")
        self.in_keys = [default if input_key is None else input_key]
        self.input_key = self.in_keys[0]
        self.return_history = input_mode == "history"
        self.return_text = input_mode in ("history", "text")
        self.return_tokens = True
        self.return_masks = True
        out_keys = [self.text_key] if self.return_text else []
        out_keys += [self.masks_key, self.tokens_key]
        out_keys += [self.log_probs_key] if self.return_log_probs else []
        out_keys += [self.history_key] if self.return_history else []
        self.out_keys = out_keys

    @staticmethod
    def _resolve_samples(
        num_samples: int | None, n_from_kwargs: int, inplace: Literal[True, False, "empty"] | None
    ) -> tuple[int | None, Literal[True, False, "empty"]]:
        if num_samples is not None and num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        if num_samples is None and n_from_kwargs == 1:
            return None, True if inplace is None else inplace
        if num_samples is not None and n_from_kwargs > 1 and num_samples != n_from_kwargs:
            raise ValueError(f"num_samples={num_samples} differs from generate_kwargs' n={n_from_kwargs}")
        if inplace in (True, "empty"):
            raise ValueError("inplace must be False (or None) when generating several samples per prompt")
        return (num_samples if num_samples is not None else n_from_kwargs), False

    @classmethod
    def _standardize_generate_kwargs(cls, generate_kwargs: dict | None) -> dict:
        """Renames backend-specific generation arguments to the common names and validates them.

        vLLM's ``max_tokens`` becomes ``max_new_tokens`` and ``n`` becomes ``num_return_sequences``; when both
        spellings are given, the backend-specific one wins (as in TorchRL).

        Examples:
            >>> LLMWrapperBase._standardize_generate_kwargs({"max_tokens": 4, "n": 2})
            {'max_new_tokens': 4, 'num_return_sequences': 2}
        """
        out = dict(generate_kwargs or {})
        for legacy, common in (("max_tokens", "max_new_tokens"), ("n", "num_return_sequences")):
            if legacy in out:
                out.pop(common, None)
                out[common] = out.pop(legacy)
        cls._validate_parameter_combinations(out)
        return out

    @classmethod
    def _validate_parameter_combinations(cls, generate_kwargs: dict) -> None:
        """Rejects out-of-range or contradictory generation arguments with a message naming them."""
        g = generate_kwargs
        if g.get("temperature") is not None and g["temperature"] < 0:
            raise ValueError(f"temperature must be non-negative, got {g['temperature']}")
        if g.get("top_p") is not None and not 0 <= g["top_p"] <= 1:
            raise ValueError(f"top_p must be in [0, 1], got {g['top_p']}")
        if g.get("top_k") is not None and g["top_k"] <= 0:
            raise ValueError(f"top_k must be positive, got {g['top_k']}")
        if g.get("repetition_penalty") is not None and g["repetition_penalty"] <= 0:
            raise ValueError(f"repetition_penalty must be positive, got {g['repetition_penalty']}")
        if g.get("do_sample") is False and g.get("temperature") not in (None, 0, 0.0):
            raise ValueError("do_sample=False means greedy decoding: temperature must be 0 or unset")
        for name in ("max_new_tokens", "num_return_sequences", "num_beams"):
            if g.get(name) is not None and int(g[name]) < 1:
                raise ValueError(f"{name} must be >= 1, got {g[name]}")

    @classmethod
    def _get_wrapper_specific_kwargs(cls, generate_kwargs: dict, wrapper_type: str) -> dict:
        """The generation arguments that are not common ones (passed to the backend untouched)."""
        if wrapper_type not in ("transformers", "vllm"):
            raise ValueError(f"wrapper_type must be 'transformers' or 'vllm', got {wrapper_type!r}")
        return {k: v for k, v in generate_kwargs.items() if k not in cls.COMMON_GENERATION_PARAMS}

    # ----------------------------------------------------------------- collector / versions
    def register_collector(self, collector: Any) -> None:  # noqa: ANN401
        """Remembers (weakly) the collector that runs this policy."""
        self._collector = weakref.ref(collector)

    @property
    def collector(self) -> Any | None:  # noqa: ANN401
        """The registered collector, or ``None``."""
        return None if self._collector is None else self._collector()

    @property
    def batching(self) -> bool:
        """Whether multi-threaded request batching is on (not supported by tdrl's wrappers: always False)."""
        return False

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """Where the log-probabilities are written: ``[(log_probs_key, "full")]``."""
        return getattr(self, "_log_prob_keys", [(self.log_probs_key, "full")])

    @log_prob_keys.setter
    def log_prob_keys(self, value: list[NestedKey]) -> None:
        self._log_prob_keys = list(value)

    @property
    def dist_params_keys(self) -> list[NestedKey]:
        """Not defined for LLM wrappers (the logits are an intermediate output)."""
        raise AttributeError("LLM wrappers have no dist_params_keys: use get_dist(tensordict)")

    @property
    def dist_sample_keys(self) -> list[NestedKey]:
        """The sampled tokens: ``[(tokens_key, "response")]``."""
        return [(self.tokens_key, "response")]

    def log_prob(self, data: TensorDictBase, **get_kwargs: Any) -> TensorDictBase:
        """Scores ``data`` (``generate=False`` only) and returns the ``LogProbs`` container."""
        if self.generate:
            raise RuntimeError("log_prob needs a scoring wrapper: use get_new_version(generate=False)")
        return self(data.copy()).get(self.log_probs_key, **get_kwargs)

    # ----------------------------------------------------------------- distributions for the losses
    def _logits_and_masks(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, TensorDictBase]:
        """Runs a scoring forward keeping the logits; returns them and the attention mask, left-padded
        when the tokens are ragged (the losses read ragged tokens left-padded)."""
        if self.generate:
            raise RuntimeError(
                "get_dist needs a scoring wrapper (generate=False); build one with get_new_version(generate=False)"
            )
        out = self.forward(tensordict.copy(), logits_only=True)
        logits = out.get("logits", as_list=True)
        attn = out.get((self.masks_key, "all_attention_mask"), as_list=True)
        if isinstance(logits, torch.Tensor) and not logits.is_nested:
            return logits, attn.bool(), out
        return pad(list(logits), 0.0, "left"), pad([a.bool() for a in attn], False, "left"), out

    def _ragged_or_padded(self, out: TensorDictBase, key: NestedKey, like: torch.Tensor) -> torch.Tensor:
        value = out.get(key, as_list=True)
        if isinstance(value, torch.Tensor) and not value.is_nested:
            return value.bool()
        padded = pad([v.bool() for v in value], False, "left")
        if padded.shape != like.shape:
            raise ValueError(f"{key!r}: padded shape {tuple(padded.shape)} differs from the logits' {tuple(like.shape)}")
        return padded

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
        logits, attn, out = self._logits_and_masks(tensordict)
        if out.get(assistant_mask_key, None) is None:
            raise KeyError(f"no assistant mask at {assistant_mask_key!r}: it needs history input with an assistant-aware template")
        return LLMMaskedCategorical(logits=logits, mask=self._ragged_or_padded(out, assistant_mask_key, attn) & attn)

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
        logits, attn, out = self._logits_and_masks(tensordict)
        prompt_mask = out.get("_prompt_mask", None)
        if prompt_mask is None:
            return self._get_dist_with_assistant_mask(tensordict, assistant_mask_key=assistant_mask_key)
        prompt_mask = self._ragged_or_padded(out, "_prompt_mask", attn)
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
