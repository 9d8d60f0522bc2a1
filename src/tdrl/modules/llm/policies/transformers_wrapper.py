"""``TransformersWrapper``: a Hugging Face causal LM as a TensorDict policy (generate or score).

``transformers`` is imported when the wrapper is built (extra ``llm``), never when this module is imported.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from typing import Any, Literal

import torch
from tensordict import NestedKey

from tdrl.modules.llm.policies._layout import pad
from tdrl.modules.llm.policies._prefill import (
    PrefillCapture,
    gathered_log_probs,
    prefill_prompts,
    split_model,
)
from tdrl.modules.llm.policies._scoring import score_sequences
from tdrl.modules.llm.policies.common import LLMWrapperBase

__all__ = ["TransformersWrapper"]


def _require_transformers() -> Any:  # noqa: ANN401
    try:
        return importlib.import_module("transformers")
    except ImportError as err:
        raise ImportError(
            "TransformersWrapper needs the `transformers` package: install the llm extra, pip install 'tdrl[llm]'"
        ) from err


def _from_hub(loader: Any, name: str, what: str) -> Any:  # noqa: ANN401
    try:
        return loader.from_pretrained(name)
    except OSError as err:
        raise OSError(
            f"could not load the {what} {name!r}: it is neither a local directory nor in the Hugging Face cache, "
            "and the hub cannot be reached (offline, or HF_HUB_OFFLINE=1). Pass a model / tokenizer object or a "
            "local path instead."
        ) from err


class TransformersWrapper(LLMWrapperBase):
    """Wraps a ``transformers`` causal LM to generate from, or score, history / text / token inputs.

    Generation (``generate=True``) reads ``(<input_mode>, "prompt")`` and writes ``tokens``, ``masks``,
    ``log_probs`` (unless ``return_log_probs=False``) and, in text / history modes, ``text`` / ``history``.
    Scoring (``generate=False``) reads ``(<input_mode>, "full")`` and writes the teacher-forced log-probs.

    Log-probs follow one contract for both paths: ``log_probs.full[i] = log p(full[i] | full[:i])`` from the
    model's raw logits (temperature, top-k and the other sampling processors shape the samples, not the scores),
    ``0.0`` at entry 0 and at pads, and ``response`` holds the last ``R`` entries with the real log-prob of the
    first generated token. Pads are located with masks, so a pad id equal to the EOS id keeps EOS tokens.

    Args:
        model: a ``PreTrainedModel`` (or a local path / cached hub name, loaded with ``AutoModelForCausalLM``).

    Keyword Args:
        tokenizer: a tokenizer (or name / path); required for text and history inputs and for decoding.
        input_mode: ``"history"`` (default), ``"text"`` or ``"tokens"``.
        input_key: the input entry; defaults to ``(input_mode, "prompt" if generate else "full")``.
        attention_mask_key: name of a mask stored beside dense input tokens (used if ``masks`` is absent).
        generate: generate (``True``) or score (``False``).
        generate_kwargs: generation arguments (``max_new_tokens``/``max_tokens``, ``temperature``, ``top_p``,
            ``top_k``, ``do_sample``, ``num_return_sequences``/``n``, ``repetition_penalty``, ...).
        tokenizer_kwargs: extra tokenizer arguments (e.g. ``add_special_tokens``); padding is the wrapper's.
        pad_output: padded tensors (``True``) or a ragged lazy stack (``False``, default).
        pad_model_input: score with a left-padded batch (``True``, default) or padding-free packed rows
            (``False``). Only for ``generate=False``.
        inplace: write into the input (``True``), return a new tensordict (``False``) or an empty copy of the
            input (``"empty"``). Defaults to ``True`` (``False`` with several samples).
        device: the device the model runs on (defaults to the model's).
        layout: layout of ragged outputs (kept for TorchRL compatibility; ragged outputs are lazy stacks).
        num_samples: samples per prompt; the output gains a trailing dimension of this size.
        chat_template_name: a named chat template (history mode), passed to ``History.apply_chat_template``.
        chat_template: a Jinja chat template string (history mode).
        return_log_probs: whether to return log-probs when generating (default ``True``).
        history_key, text_key, tokens_key, masks_key, log_probs_key: output keys.
        batching, min_batch_size, max_batch_size, batching_timeout: multi-threaded request batching: calls
            from several threads queue their samples, which run together once ``min_batch_size`` are queued
            (``batching=True``: 1), at most ``max_batch_size`` per model call; a request waits at most
            ``batching_timeout`` seconds for a full batch before what is queued runs as it is.
        prefer_tokens: in text / history modes, use ``tokens.prompt`` / ``tokens.full`` when present instead of
            re-tokenizing the text (re-tokenizing decoded text is not always the identity).

    Examples:
        >>> import torch, transformers
        >>> from tensordict import TensorDict
        >>> model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=16))
        >>> policy = TransformersWrapper(model.eval(), input_mode="tokens", generate=False, pad_output=True)
        >>> td = TensorDict(tokens=TensorDict(full=torch.tensor([[3, 4, 5]]), batch_size=[1]), batch_size=[1])
        >>> lp = policy(td)["log_probs", "full"]
        >>> lp.shape, lp[0, 0].item()
        (torch.Size([1, 3]), 0.0)
    """

    def __init__(
        self,
        model: Any,  # noqa: ANN401
        *,
        tokenizer: Any | str | None = None,  # noqa: ANN401
        input_mode: str = "history",
        input_key: NestedKey | None = None,
        attention_mask_key: str = "attention_mask",
        generate: bool = True,
        generate_kwargs: dict | None = None,
        tokenizer_kwargs: dict | None = None,
        pad_output: bool = False,
        pad_model_input: bool | None = None,
        inplace: Literal[True, False, "empty"] | None = None,
        device: torch.device | str | None = None,
        layout: torch.layout | None = None,
        num_samples: int | None = None,
        chat_template_name: str | None = None,
        chat_template: str | None = None,
        return_log_probs: bool | None = None,
        history_key: NestedKey | None = "history",
        text_key: NestedKey | None = "text",
        tokens_key: NestedKey | None = "tokens",
        masks_key: NestedKey | None = "masks",
        log_probs_key: NestedKey | None = "log_probs",
        batching: bool | None = None,
        min_batch_size: int | None = None,
        max_batch_size: int | None = None,
        batching_timeout: float = 10.0,
        prefer_tokens: bool = False,
    ) -> None:
        super().__init__()
        self._init_kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        tf = _require_transformers()
        if isinstance(model, str):
            tokenizer = tokenizer if tokenizer is not None else model
            model = _from_hub(tf.AutoModelForCausalLM, model, "model")
        if isinstance(tokenizer, str):
            tokenizer = _from_hub(tf.AutoTokenizer, tokenizer, "tokenizer")
        kwargs = self._setup_common(model, tokenizer, self._init_kwargs)
        self.generate_kwargs = self._to_hf_kwargs(kwargs)

    def _to_hf_kwargs(self, kwargs: dict) -> dict:
        out = dict(kwargs)
        if out.pop("stop_sequences", None) is not None:
            warnings.warn(
                "stop_sequences is ignored by TransformersWrapper (generation stops at the EOS token ids)",
                UserWarning,
                stacklevel=3,
            )
        out.pop("logprobs", None)  # log-probs always come from the raw logits (return_log_probs)
        if int(out.get("num_beams", 1)) > 1:
            raise ValueError("num_beams > 1 is not supported: beam search has no per-sample token log-probs")
        return out

    def _model_device(self) -> torch.device:
        if self._device is not None:
            return self._device
        param = next(iter(self.model.parameters()), None)
        return torch.device("cpu") if param is None else param.device

    def _eos_ids(self, gen: dict) -> set[int]:
        eos = gen.get("eos_token_id")
        if eos is None:
            eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if eos is None and self.tokenizer is not None:
            eos = self.tokenizer.eos_token_id
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def _score_ragged(
        self, seqs: list[torch.Tensor], return_logits: bool
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        return score_sequences(self.model, seqs, packed=not self.pad_model_input, return_logits=return_logits)

    def _generate_ragged(
        self, prompts: list[torch.Tensor], n: int, call_kwargs: dict
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None, list[torch.Tensor] | None]:
        gen = dict(self.generate_kwargs)
        gen.update(self._to_hf_kwargs(self._standardize_generate_kwargs(call_kwargs)))
        gen.pop("num_return_sequences", None)
        gen.pop("skip_special_tokens", None)
        pad_id = self.pad_token_id
        ids = pad(prompts, pad_id, "left")
        attn = pad([torch.ones_like(p) for p in prompts], 0, "left")
        capture = self._capture(ids, n)
        prompt_lp, cache = None, {}
        if capture is None and self.return_log_probs:
            prompt_lp, cache = self._prefill(prompts, ids, attn, n)
        # each prompt repeated n times (grouped): greedy decoding refuses num_return_sequences > 1
        rep_ids, rep_attn = ids.repeat_interleave(n, 0), attn.repeat_interleave(n, 0)
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=rep_ids,
                    attention_mask=rep_attn,
                    pad_token_id=gen.pop("pad_token_id", pad_id),
                    output_logits=self.return_log_probs,
                    return_dict_in_generate=True,
                    **cache,
                    **gen,
                )
        finally:
            if capture is not None:
                capture.close()
        if capture is not None:
            prompt_lp = capture.log_probs(ids, attn)
            if prompt_lp is None:  # generate did not prefill the whole prompt at once: score it apart
                prompt_lp = self._prefill(prompts, ids, attn, 1)[0]
        new = out.sequences[:, ids.shape[1] :]
        lengths = self._response_lengths(new, self._eos_ids(gen))
        responses = [row[:k] for row, k in zip(new, lengths)]
        if not self.return_log_probs:
            return responses, None, None
        # scored from the raw logits (output_logits), not the processed scores generate samples from
        lp = gathered_log_probs(torch.stack(list(out.logits), 1), new)
        return responses, [row[:k] for row, k in zip(lp, lengths)], prompt_lp

    def _capture(self, ids: torch.Tensor, n: int) -> PrefillCapture | None:
        """With one sample per prompt, the prompt log-probs come from ``generate``'s own prefill (see
        ``_prefill``); with several, one separate prefill per prompt is cheaper than ``n`` in ``generate``."""
        if not self.return_log_probs or n != 1 or ids.shape[1] < 2:
            return None
        parts = split_model(self.model, ids[:1, -min(4, ids.shape[1]) :])
        return None if parts is None else PrefillCapture(parts)

    def _prefill(
        self, prompts: list[torch.Tensor], ids: torch.Tensor, attn: torch.Tensor, n: int
    ) -> tuple[list[torch.Tensor], dict[str, Any]]:
        """Prompt log-probs and the KV cache ``generate`` continues from (see ``_prefill.prefill_prompts``)."""
        if ids.shape[1] < 2:
            return [torch.zeros(p.numel(), device=p.device) for p in prompts], {}
        prompt_lp, cache = prefill_prompts(self.model, prompts, ids, attn, n)
        return prompt_lp, {self._cache_kwarg: cache}

    @property
    def _cache_kwarg(self) -> str:
        # transformers 5 renamed generate's past_key_values argument to cache
        params = inspect.signature(self.model.forward).parameters
        return "cache" if "cache" in params else "past_key_values"

    @staticmethod
    def _response_lengths(new: torch.Tensor, eos: set[int]) -> list[int]:
        # a response ends at its first EOS (kept); what generate writes after it is filler, whatever its id
        if not eos or new.shape[1] == 0:
            return [new.shape[1]] * new.shape[0]
        is_eos = torch.isin(new, torch.tensor(sorted(eos), device=new.device))
        first = torch.where(is_eos.any(-1), is_eos.float().argmax(-1) + 1, torch.full_like(is_eos[:, 0], new.shape[1], dtype=torch.long))
        return first.tolist()
