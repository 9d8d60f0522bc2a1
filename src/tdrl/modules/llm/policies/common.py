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
from tensordict import NestedKey, TensorDict, TensorDictBase, lazy_stack
from tensordict.nn import TensorDictModuleBase

from tdrl.modules.llm.policies import _history
from tdrl.modules.llm.policies._batching import RequestBatcher, resolve_batching
from tdrl.modules.llm.policies._dists import LLMDistributions, LogProbDistribution
from tdrl.modules.llm.policies._layout import pad, read_ragged, scatter_like, unpad
from tdrl.modules.llm.policies._outputs import Ragged, group, layout_generation, layout_scores
from tdrl.modules.llm.policies.containers import ChatHistory, LogProbs, Masks, Text, Tokens

__all__ = ["ChatHistory", "LLMWrapperBase", "LogProbDistribution", "LogProbs", "Masks", "Text", "Tokens"]

_INPUT_MODES = ("history", "text", "tokens")
# padding is the wrapper's job (through masks), so these tokenizer options are not forwarded
_TOKENIZER_LAYOUT_KWARGS = ("padding", "padding_side", "return_tensors", "return_attention_mask")


class LLMWrapperBase(LLMDistributions, TensorDictModuleBase):
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
        self._batcher: RequestBatcher | None = None

    # ----------------------------------------------------------------- constructor helpers (shared)
    def _setup_common(self, model: Any, tokenizer: Any, options: dict[str, Any]) -> dict:  # noqa: ANN401
        """Validates and stores the constructor options every backend shares; sets ``in_keys``/``out_keys``.

        Args:
            model: the backend model or engine.
            tokenizer: the resolved tokenizer (or ``None``).
            options: the constructor's keyword arguments.

        Returns:
            The standardised generation arguments, without ``num_return_sequences`` (folded into
            ``num_samples``).
        """
        o = options
        min_bs, max_bs = resolve_batching(o["batching"], o["min_batch_size"], o["max_batch_size"])
        self._batcher = None if min_bs is None else RequestBatcher(
            min_batch_size=min_bs, max_batch_size=max_bs, timeout=o["batching_timeout"]
        )
        input_mode, generate = o["input_mode"], bool(o["generate"])
        if input_mode not in _INPUT_MODES:
            raise ValueError(f"input_mode must be one of {_INPUT_MODES}, got {input_mode!r}")
        if not isinstance(o["pad_output"], bool):
            raise ValueError(f"pad_output must be a bool, got {o['pad_output']!r}")
        if o["pad_model_input"] is not None and generate:
            raise ValueError("pad_model_input only applies to scoring (generate=False); leave it None when generating")
        if o["return_log_probs"] is False and not generate:
            raise ValueError("return_log_probs must be True when generate=False (scoring returns log-probs)")
        if input_mode in ("text", "history") and tokenizer is None:
            raise ValueError(f"input_mode={input_mode!r} needs a tokenizer")
        self.model, self.tokenizer = model, tokenizer
        self.tokenizer_kwargs = dict(o["tokenizer_kwargs"] or {})
        self.attention_mask_key = o["attention_mask_key"]
        self.chat_template_name, self.chat_template = o["chat_template_name"], o["chat_template"]
        self.prefer_tokens = bool(o["prefer_tokens"])
        self._device = None if o["device"] is None else torch.device(o["device"])
        self.input_mode, self.generate, self.pad_output = input_mode, generate, o["pad_output"]
        self.pad_model_input = True if o["pad_model_input"] is None else bool(o["pad_model_input"])
        self.return_log_probs = True if o["return_log_probs"] is None else bool(o["return_log_probs"])
        self.layout = torch.strided if o["layout"] is None and not o["pad_output"] else o["layout"]
        for name in ("history_key", "text_key", "tokens_key", "masks_key", "log_probs_key"):
            setattr(self, name, o[name])
        kwargs = self._standardize_generate_kwargs(o["generate_kwargs"])
        n = int(kwargs.pop("num_return_sequences", 1))
        self.num_samples, self.inplace = self._resolve_samples(o["num_samples"], n, o["inplace"])
        default = (input_mode, "prompt" if generate else "full")
        self.in_keys = [default if o["input_key"] is None else o["input_key"]]
        self.input_key = self.in_keys[0]
        self.return_history = input_mode == "history"
        self.return_text = input_mode in ("history", "text")
        self.return_tokens = self.return_masks = True
        out_keys = [self.text_key] if self.return_text else []
        out_keys += [self.masks_key, self.tokens_key]
        out_keys += [self.log_probs_key] if self.return_log_probs else []
        out_keys += [self.history_key] if self.return_history else []
        self.out_keys = out_keys
        return kwargs

    def get_new_version(self, **kwargs: Any) -> LLMWrapperBase:
        """A new wrapper on the same model with the options in ``kwargs`` changed (e.g. ``generate=False``).

        Switching ``generate`` resets ``pad_model_input`` (it only applies to scoring) unless it is given.
        """
        init = dict(self._init_kwargs)
        init.update(model=self.model, tokenizer=self.tokenizer)
        if "generate" in kwargs and "pad_model_input" not in kwargs:
            init["pad_model_input"] = None
        init.update(kwargs)
        return type(self)(**init)

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

    # ----------------------------------------------------------------- tokenizer helpers (shared)
    @property
    def pad_token_id(self) -> int:
        """The id written at padded positions (padding is never read back from ids: masks locate it)."""
        tok = getattr(self, "tokenizer", None)
        pad_id = getattr(tok, "pad_token_id", None)
        if pad_id is None:
            pad_id = getattr(tok, "eos_token_id", None)
        return 0 if pad_id is None else int(pad_id)

    def _encode(self, strings: list[str]) -> list[torch.Tensor]:
        if self.tokenizer is None:
            raise ValueError(f"input_mode={self.input_mode!r} needs a tokenizer; pass tokenizer=...")
        # the wrapper pads by itself (through masks): the tokenizer only splits strings into ids
        kwargs = {k: v for k, v in self.tokenizer_kwargs.items() if k not in _TOKENIZER_LAYOUT_KWARGS}
        ids = self.tokenizer(list(strings), padding=False, **kwargs)["input_ids"]
        return [torch.as_tensor(i, dtype=torch.long).reshape(-1) for i in ids]

    def _decode(self, seqs: list[torch.Tensor]) -> list[str]:
        skip = bool(self.generate_kwargs.get("skip_special_tokens", False)) if hasattr(self, "generate_kwargs") else False
        return self.tokenizer.batch_decode([s.tolist() for s in seqs], skip_special_tokens=skip)

    def _strings(self, td: TensorDictBase, key: NestedKey) -> list[str]:
        if key not in td.keys(True):
            raise KeyError(f"Expected the text input {key!r}; found {sorted(map(str, td.keys(True)))}")
        value = td.get(key)
        value = value.tolist() if hasattr(value, "tolist") else value
        value = [value] if isinstance(value, str) else list(value)
        if not all(isinstance(v, str) for v in value):
            raise TypeError(f"{key!r} must hold strings, got {[type(v).__name__ for v in value][:4]}")
        return value

    def _mask_keys(self) -> list[NestedKey]:
        parent = self.input_key[:-1] if isinstance(self.input_key, tuple) else ()
        return [(self.masks_key, "all_attention_mask"), (*parent, self.attention_mask_key)]

    def _tokens_from(self, td: TensorDictBase, field: str) -> tuple[list[torch.Tensor], torch.Tensor | None] | None:
        key = (self.tokens_key, field)
        if key not in td.keys(True):
            return None
        return read_ragged(td, key, [(self.masks_key, "all_attention_mask")] if field == "full" else [])

    # ----------------------------------------------------------------- forward (shared)
    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        tensordict_out: TensorDictBase | None = None,
        logits_only: bool = False,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Generates (``generate=True``) or scores (``generate=False``) the batch and writes the containers.

        ``kwargs`` override generation arguments for this call. A 0-d input is treated as a batch of one, a
        ``[*B]`` input is flattened and reshaped back (with a trailing ``num_samples`` dimension). With request
        batching on, the samples join the shared queue and run with other threads' samples (the generation
        ``kwargs`` of the thread that runs a batch apply to all of it).
        """
        if self._batcher is not None and tensordict_out is None and not logits_only:
            return self._batcher.submit(lambda td: self._forward_batch(td, kwargs), tensordict)
        return self._forward_batch(tensordict, kwargs, tensordict_out=tensordict_out, logits_only=logits_only)

    def _forward_batch(
        self,
        tensordict: TensorDictBase,
        kwargs: dict[str, Any],
        *,
        tensordict_out: TensorDictBase | None = None,
        logits_only: bool = False,
    ) -> TensorDictBase:
        if tensordict.batch_dims != 1:
            if tensordict_out is not None:
                raise ValueError("tensordict_out is only supported for 1-d batches")
            if tensordict.batch_dims == 0:
                return self._forward_batch(lazy_stack([tensordict]), kwargs, logits_only=logits_only)[0]
            flat = self._forward_batch(tensordict.reshape(-1), kwargs, logits_only=logits_only)
            return flat.unflatten(0, tensordict.batch_size)
        if self.generate:
            out = self._forward_generate(tensordict, kwargs)
        else:
            out = self._forward_score(tensordict, logits_only)
            if logits_only:
                return out
        if tensordict.device is not None:
            out = out.to(tensordict.device)
        return self._write_back(tensordict, out, tensordict_out)

    def _write_back(
        self, tensordict: TensorDictBase, out: TensorDictBase, tensordict_out: TensorDictBase | None
    ) -> TensorDictBase:
        if tensordict_out is None:
            if self.inplace is False:
                return out
            tensordict_out = tensordict if self.inplace is True else tensordict.empty()
        tensordict_out.exclude(*self.out_keys, inplace=True)
        tensordict_out.update(out, keys_to_update=self.out_keys)
        return tensordict_out

    def _read_prompts(self, td: TensorDictBase) -> tuple[list[torch.Tensor], list[str] | None, Any]:
        """The prompt ids (and strings / histories in text / history mode) of a 1-d batch."""
        if self.input_mode == "tokens":
            return read_ragged(td, self.input_key, self._mask_keys())[0], None, None
        if self.input_mode == "text":
            texts = self._strings(td, self.input_key)
            known = self._tokens_from(td, "prompt") if self.prefer_tokens else None
            return (known[0] if known is not None else self._encode(texts)), texts, None
        history = self._history_input(td)
        texts = self._apply_template(history, add_generation_prompt=True)
        return self._encode(texts), texts, history

    def _forward_generate(self, td: TensorDictBase, kwargs: dict) -> TensorDictBase:
        prompts, texts, history = self._read_prompts(td)
        n = self.num_samples or 1
        device = self._model_device()
        prompts = [p.to(device) for p in prompts]
        responses, response_lp, prompt_lp = self._generate_ragged(prompts, n, kwargs)
        if len(responses) != len(prompts) * n:
            raise RuntimeError(f"backend returned {len(responses)} responses for {len(prompts)} prompts x {n} samples")
        rep = [p for p in prompts for _ in range(n)]
        rep_lp = None if prompt_lp is None else [lp for lp in prompt_lp for _ in range(n)]
        batch = (len(prompts),) if self.num_samples is None else (len(prompts), n)
        ragged = Ragged(prompt=rep, response=responses, prompt_lp=rep_lp, response_lp=response_lp)
        parts = layout_generation(
            ragged, padded=self.pad_output, pad_id=self.pad_token_id, batch=batch, with_log_probs=self.return_log_probs
        )
        out = TensorDict(batch_size=batch)
        out.set(self.tokens_key, parts["tokens"])
        out.set(self.masks_key, parts["masks"])
        if self.return_log_probs:
            out.set(self.log_probs_key, parts["log_probs"])
        if self.return_text:
            reply = self._decode(responses)
            prompt_text = [t for t in texts for _ in range(n)]
            items = [Text(prompt=p, response=r, full=p + r) for p, r in zip(prompt_text, reply)]
            out.set(self.text_key, group(items, batch))
            if self.return_history:
                out.set(self.history_key, self._history_output(history, reply, n, batch))
        return out

    def _read_sequences(
        self, td: TensorDictBase
    ) -> tuple[list[torch.Tensor], torch.Tensor | None, list[int] | None, list[torch.Tensor] | None]:
        """The scored ids, the dense mask that located them (``None`` if ragged), the prompt lengths and the
        assistant masks (each ``None`` when unknown)."""
        # prefer_tokens: the sampled tokens themselves (re-rendering decoded text is not always the identity)
        if self.input_mode == "history" and not (self.prefer_tokens and self._tokens_from(td, "full") is not None):
            return self._history_sequences(td)
        seqs, dense, plen = self._read_token_sequences(td)
        return seqs, dense, plen, self._assistant_masks(td, dense, len(seqs))

    def _read_token_sequences(self, td: TensorDictBase) -> tuple[list[torch.Tensor], torch.Tensor | None, list[int] | None]:
        if self.input_mode == "tokens" or (self.prefer_tokens and self._tokens_from(td, "full") is not None):
            key = self.input_key if self.input_mode == "tokens" else (self.tokens_key, "full")
            seqs, dense = read_ragged(td, key, self._mask_keys())
            prompt = self._tokens_from(td, "prompt")
            if prompt is None:
                return seqs, dense, None
            ids, _ = prompt
            if dense is not None and isinstance(td.get((self.tokens_key, "prompt")), torch.Tensor):
                # padded data from the wrappers: full = cat(left-padded prompt, response)
                width = td.get((self.tokens_key, "prompt")).shape[-1]
                ids = unpad(td.get((self.tokens_key, "prompt")), dense[:, :width])
            return seqs, dense, self._prompt_lengths(seqs, ids)
        if self.input_mode == "text":
            full = self._strings(td, self.input_key)
            seqs = self._encode(full)
            prompt_key = (*self.input_key[:-1], "prompt") if isinstance(self.input_key, tuple) else None
            if prompt_key is None or prompt_key not in td.keys(True):
                return seqs, None, None
            prompts = self._encode(self._strings(td, prompt_key))
            return seqs, None, self._prompt_lengths(seqs, prompts, strict=False)
        raise ValueError(f"unknown input_mode {self.input_mode!r}")

    @staticmethod
    def _prompt_lengths(seqs: list[torch.Tensor], prompts: list[torch.Tensor], strict: bool = True) -> list[int] | None:
        lengths = []
        for i, (s, p) in enumerate(zip(seqs, prompts, strict=True)):
            n = p.numel()
            if n > s.numel() or not torch.equal(s[:n].cpu(), p.reshape(-1).cpu()):
                if not strict:
                    return None  # re-tokenized text whose prompt is not a token prefix: no prompt split
                raise ValueError(f"sample {i}: the prompt tokens are not a prefix of the full tokens")
            lengths.append(n)
        return lengths

    def _forward_score(self, td: TensorDictBase, logits_only: bool) -> TensorDictBase:
        seqs, dense, plen, assistant = self._read_sequences(td)
        device = self._model_device()
        seqs = [s.to(device) for s in seqs]
        lps, logits = self._score_ragged(seqs, return_logits=logits_only)
        batch = (len(seqs),)
        if logits_only:
            return self._logits_output(seqs, logits, dense, plen, assistant)
        prompts = [s[:n] for s, n in zip(seqs, plen)] if plen is not None else []
        ragged = Ragged(prompt=prompts, full=seqs, full_lp=lps, assistant=assistant)
        parts = layout_scores(ragged, padded=self.pad_output, pad_id=self.pad_token_id, batch=batch, dense_mask=dense)
        out = TensorDict(batch_size=batch)
        out.set(self.tokens_key, parts["tokens"])
        out.set(self.masks_key, parts["masks"])
        out.set(self.log_probs_key, parts["log_probs"])
        if self.return_text:
            out.set(self.text_key, self._score_text(td, seqs, plen))
        if self.return_history:
            out.set(self.history_key, td.get(self.history_key))
        return out

    def _score_text(self, td: TensorDictBase, seqs: list[torch.Tensor], plen: list[int] | None) -> TensorDictBase:
        full = self._decode(seqs)
        if plen is None:
            return group([Text(full=f) for f in full], (len(seqs),))
        prompts = self._decode([s[:n] for s, n in zip(seqs, plen)])
        items = [Text(prompt=p, response=f[len(p) :] if f.startswith(p) else None, full=f) for p, f in zip(prompts, full)]
        return group(items, (len(seqs),))

    def _assistant_masks(self, td: TensorDictBase, dense: torch.Tensor | None, n: int) -> list[torch.Tensor] | None:
        key = (self.masks_key, "all_assistant_mask")
        if key not in td.keys(True):
            return None
        if dense is not None:
            value = td.get(key)
            if value.shape != dense.shape:
                raise ValueError(f"{key!r} has shape {tuple(value.shape)}, expected the tokens' {tuple(dense.shape)}")
            return unpad(value, dense)
        seqs, _ = read_ragged(td, key)
        return [s.bool() for s in seqs][:n]

    def _logits_output(
        self,
        seqs: list[torch.Tensor],
        logits: list[torch.Tensor],
        dense: torch.Tensor | None,
        plen: list[int] | None,
        assistant: list[torch.Tensor] | None,
    ) -> TensorDictBase:
        def lay(values: list[torch.Tensor], fill: float | bool) -> torch.Tensor:
            return pad(values, fill, "left") if dense is None else scatter_like(values, dense, fill)

        attn = lay([torch.ones(s.numel(), dtype=torch.bool, device=s.device) for s in seqs], False)
        # a sequence's first token has no conditional (its log-prob is 0 by contract): no dist counts it
        scored = lay([torch.arange(s.numel(), device=s.device) > 0 for s in seqs], False)
        out = TensorDict(logits=lay(logits, 0.0), attention_mask=scored, batch_size=[len(seqs)])
        out.set((self.masks_key, "all_attention_mask"), attn)
        if plen is not None:
            out.set("prompt_mask", lay([torch.arange(s.numel(), device=s.device) < k for s, k in zip(seqs, plen)], False))
            if assistant is None:
                assistant = [torch.arange(s.numel(), device=s.device) >= k for s, k in zip(seqs, plen)]
        if assistant is not None:
            out.set("assistant_mask", lay([a.to(attn.device) for a in assistant], False))
            out.set((self.masks_key, "all_assistant_mask"), out.get("assistant_mask"))
        return out

    # ----------------------------------------------------------------- history mode
    def _template(self) -> dict[str, Any]:
        return _history.template_kwargs(self.chat_template_name, self.chat_template)

    def _history_input(self, td: TensorDictBase) -> Any:  # noqa: ANN401
        if self.input_key not in td.keys(True):
            raise KeyError(f"Expected the history input {self.input_key!r}; found {sorted(map(str, td.keys(True)))}")
        history = td.get(self.input_key)
        if not hasattr(history, "apply_chat_template"):
            raise TypeError(f"{self.input_key!r} must hold a History, got {type(history).__name__}")
        return history

    def _apply_template(self, history: Any, add_generation_prompt: bool) -> list[str]:  # noqa: ANN401
        return _history.render(history, self.tokenizer, add_generation_prompt, **self._template())

    def _history_output(self, prompt: Any, reply: list[str], n: int, batch: tuple[int, ...]) -> ChatHistory:  # noqa: ANN401
        prompts = [prompt[b] for b in range(prompt.batch_size[0]) for _ in range(n)]
        prompt_text = self._apply_template(lazy_stack(prompts), add_generation_prompt=True)
        full_text = [p + r for p, r in zip(prompt_text, reply)]
        responses = _history.responses_from_full_text(
            lazy_stack(prompts), full_text, reply, self.tokenizer, self.chat_template_name
        )
        items = [
            ChatHistory(prompt=p, response=r, full=p.extend(r, inplace=False, dim=-1))
            for p, r in zip(prompts, responses.unbind(0))
        ]
        return group(items, batch)

    def _history_sequences(
        self, td: TensorDictBase
    ) -> tuple[list[torch.Tensor], None, list[int] | None, list[torch.Tensor] | None]:
        full = self._history_input(td)
        seqs, assistant = _history.tokenize_with_assistant_mask(full, self.tokenizer, **self._template())
        prompt_key = (*self.input_key[:-1], "prompt") if isinstance(self.input_key, tuple) else None
        if prompt_key is None or prompt_key not in td.keys(True):
            return seqs, None, None, assistant
        prompts = self._encode(self._apply_template(td.get(prompt_key), add_generation_prompt=True))
        return seqs, None, self._prompt_lengths(seqs, prompts, strict=False), assistant

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
        """Whether multi-threaded request batching is on (``batching`` / ``min_batch_size`` / ``max_batch_size``)."""
        return self._batcher is not None

    def cleanup_batching(self, *, flush: bool = False) -> None:
        """Empties the request queue: ``flush=True`` runs the queued requests, otherwise they are cancelled
        (their callers get ``concurrent.futures.CancelledError``)."""
        if self._batcher is not None:
            self._batcher.cleanup((lambda td: self._forward_batch(td, {})) if flush else None)

    def get_batching_state(self) -> dict[str, Any]:
        """The request-batching state: sizes, queue length, whether a batch is running, batches run."""
        return {"batching_enabled": False} if self._batcher is None else self._batcher.state()

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
