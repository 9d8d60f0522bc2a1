"""``vLLMWrapper``: a vLLM engine as a TensorDict policy, with the outputs of ``TransformersWrapper``.

``vllm`` is imported only when the wrapper must build an engine from a model name or build vLLM's own
``SamplingParams`` (extra ``vllm``); an engine object that follows ``vllm.LLM.generate`` is used as given.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import warnings
from typing import Any, Literal

import torch
from tensordict import NestedKey

from tdrl.modules.llm.policies.common import LLMWrapperBase

__all__ = ["SamplingParams", "push_weights_to_engine", "vLLMWrapper"]

_HAS_VLLM = importlib.util.find_spec("vllm") is not None

# generation arguments whose vLLM name differs from the common (transformers) one
_TO_VLLM = {"max_new_tokens": "max_tokens", "num_return_sequences": "n", "stop_sequences": "stop"}
_DROPPED = ("do_sample", "num_beams", "length_penalty", "early_stopping", "logprobs")


def _require_vllm() -> Any:  # noqa: ANN401
    try:
        return importlib.import_module("vllm")
    except ImportError as err:
        raise ImportError(
            "vLLMWrapper needs the `vllm` package to build an engine or vLLM's SamplingParams: install the vllm "
            "extra, pip install 'tdrl[vllm]' (Linux + CUDA), or pass an engine object"
        ) from err


@dataclasses.dataclass
class SamplingParams:
    """The sampling request handed to engines that are not ``vllm.LLM`` (test doubles, remote proxies).

    Field names are those of ``vllm.SamplingParams``; with vLLM installed its own class is used instead.
    """

    n: int = 1
    max_tokens: int | None = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    repetition_penalty: float = 1.0
    stop: list[str] | None = None
    seed: int | None = None
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    detokenize: bool = True
    skip_special_tokens: bool = False
    include_stop_str_in_output: bool = True


def _token_log_prob(entry: Any, token: int, where: str) -> float:  # noqa: ANN401
    # vLLM gives {token_id: Logprob(logprob=...)} per position (the sampled token is always among the keys)
    if entry is None or token not in entry:
        raise RuntimeError(f"the engine returned no log-prob for token {token} at {where}")
    value = entry[token]
    return float(getattr(value, "logprob", value))


class vLLMWrapper(LLMWrapperBase):  # noqa: N801 - TorchRL's name
    """Wraps a vLLM engine (``vllm.LLM`` or any object with its ``generate``) as a policy.

    Same constructor, inputs, outputs and log-prob contract as
    :class:`~tdrl.modules.llm.policies.TransformersWrapper`: prompts go to the engine as token ids
    (``{"prompt_token_ids": [...]}``), generated ids come back from ``CompletionOutput.token_ids`` with their
    log-probs from ``CompletionOutput.logprobs``, and prompt log-probs from ``RequestOutput.prompt_logprobs``,
    whose first entry (``None``: the first token has no conditional) becomes ``0.0``. vLLM computes them from
    the raw logits (its default ``logprobs_mode``), so they match teacher forcing. Scoring
    (``generate=False``) asks for one token with ``prompt_logprobs`` and returns those.

    vLLM returns no logits, so ``get_dist`` (which the losses call for gradients) is not available: train with a
    ``TransformersWrapper`` sharing the weights and push them with ``update_weights``.

    Args:
        model: a ``vllm.LLM`` (or compatible engine object), or a model name/path (builds ``vllm.LLM``).

    Keyword Args:
        **kwargs: see :class:`~tdrl.modules.llm.policies.TransformersWrapper`; ``pad_model_input`` is
            accepted for TorchRL compatibility and has no effect (the engine manages its own batching).

    Examples:
        >>> vLLMWrapper.__name__
        'vLLMWrapper'
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
        if isinstance(model, str):
            model = _require_vllm().LLM(model=model)
        if not callable(getattr(model, "generate", None)):
            raise TypeError(f"vLLMWrapper needs an engine with a generate() method, got {type(model).__name__}")
        if tokenizer is None and callable(getattr(model, "get_tokenizer", None)):
            tokenizer = model.get_tokenizer()
        if isinstance(tokenizer, str):
            tokenizer = importlib.import_module("transformers").AutoTokenizer.from_pretrained(tokenizer)
        # the engine batches and pads requests itself: pad_model_input is accepted and has no effect
        self.generate_kwargs = self._setup_common(model, tokenizer, {**self._init_kwargs, "pad_model_input": None})

    def _model_device(self) -> torch.device:
        return self._device if self._device is not None else torch.device("cpu")

    def _sampling_params(self, **kwargs: Any) -> Any:  # noqa: ANN401
        cls = _require_vllm().SamplingParams if _HAS_VLLM else SamplingParams
        return cls(**kwargs)

    def _vllm_kwargs(self, call_kwargs: dict) -> dict:
        merged = dict(self.generate_kwargs)
        merged.update(self._standardize_generate_kwargs(call_kwargs))
        if merged.get("do_sample") is False:
            merged["temperature"] = 0.0  # greedy in vLLM is temperature 0
        if int(merged.get("num_beams", 1)) > 1:
            raise ValueError("num_beams > 1 is not supported: beam search has no per-sample token log-probs")
        out = {_TO_VLLM.get(k, k): v for k, v in merged.items() if k not in _DROPPED}
        out.pop("n", None)
        out.setdefault("include_stop_str_in_output", True)
        out.setdefault("skip_special_tokens", False)
        return out

    def _request(self, prompts: list[torch.Tensor], params: Any) -> list[Any]:  # noqa: ANN401
        requests = [{"prompt_token_ids": p.tolist()} for p in prompts]
        outputs = list(self.model.generate(requests, params, use_tqdm=False))
        if len(outputs) != len(prompts):
            raise RuntimeError(f"the engine answered {len(outputs)} requests for {len(prompts)} prompts")
        return outputs

    @staticmethod
    def _prompt_log_probs(output: Any, prompt: torch.Tensor, where: str) -> torch.Tensor | None:  # noqa: ANN401
        entries = getattr(output, "prompt_logprobs", None)
        if entries is None:
            return None
        ids = prompt.tolist()
        if len(entries) != len(ids):
            raise RuntimeError(f"{where}: {len(entries)} prompt log-probs for {len(ids)} prompt tokens")
        # entry 0 is None in vLLM (nothing conditions the first token): the contract's exact 0.0
        values = [0.0] + [_token_log_prob(e, t, f"{where} prompt position {i + 1}") for i, (e, t) in enumerate(zip(entries[1:], ids[1:]))]
        return torch.tensor(values, dtype=torch.float32)

    def _generate_ragged(
        self, prompts: list[torch.Tensor], n: int, call_kwargs: dict
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None, list[torch.Tensor] | None]:
        want = self.return_log_probs
        params = self._sampling_params(
            n=n, logprobs=1 if want else None, prompt_logprobs=1 if want else None, **self._vllm_kwargs(call_kwargs)
        )
        responses, response_lp, prompt_lp = [], [] if want else None, [] if want else None
        for i, (prompt, output) in enumerate(zip(prompts, self._request(prompts, params))):
            completions = sorted(output.outputs, key=lambda c: c.index)
            if len(completions) != n:
                raise RuntimeError(f"request {i}: the engine returned {len(completions)} completions, expected {n}")
            for c in completions:
                ids = [int(t) for t in c.token_ids]
                responses.append(torch.tensor(ids, dtype=torch.long))
                if want:
                    if c.logprobs is None or len(c.logprobs) != len(ids):
                        raise RuntimeError(f"request {i}: the engine returned no per-token log-probs for its completion")
                    where = f"request {i} completion {c.index}"
                    lps = [_token_log_prob(e, t, f"{where} position {k}") for k, (e, t) in enumerate(zip(c.logprobs, ids))]
                    response_lp.append(torch.tensor(lps, dtype=torch.float32))
            if want:
                prompt_lp.append(self._prompt_log_probs(output, prompt, f"request {i}"))
        if want and any(lp is None for lp in prompt_lp):
            warnings.warn(
                "the engine omitted prompt_logprobs: log_probs.prompt / log_probs.full are not written",
                UserWarning,
                stacklevel=3,
            )
            prompt_lp = None
        return responses, response_lp, prompt_lp

    def _score_ragged(
        self, seqs: list[torch.Tensor], return_logits: bool
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        if return_logits:
            raise RuntimeError(
                "vLLMWrapper cannot build get_dist: the engine returns no logits. Compute the loss with a "
                "TransformersWrapper on the trained weights"
            )
        params = self._sampling_params(n=1, max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
        out = []
        for i, (seq, output) in enumerate(zip(seqs, self._request(seqs, params))):
            lp = self._prompt_log_probs(output, seq, f"request {i}")
            if lp is None:
                raise RuntimeError(f"request {i}: the engine returned no prompt_logprobs, so the sequence cannot be scored")
            out.append(lp)
        return out, None

    def update_weights(self, weights: dict[str, torch.Tensor] | Any) -> None:  # noqa: ANN401
        """Loads trainer weights (a state dict or ``(name, tensor)`` pairs) into the engine's model.

        See :func:`push_weights_to_engine`.
        """
        push_weights_to_engine(self.model, weights)


def push_weights_to_engine(engine: Any, weights: dict[str, torch.Tensor] | Any) -> None:  # noqa: ANN401
    """Loads weights (a state dict or ``(name, tensor)`` pairs, dotted names) into a vLLM engine.

    Uses the engine's ``update_weights(iterator)`` when it has one (TorchRL's ``RLvLLMEngine`` interface),
    else ``vllm.LLM.apply_model`` to run ``model.load_weights`` in every worker; then resets the engine's
    prefix cache (cached prefixes were computed with the old weights).

    Raises:
        TypeError: when the engine offers neither way in.
    """
    items = list(weights.items()) if hasattr(weights, "items") else list(weights)
    items = [(str(k), v.detach()) for k, v in items]
    if callable(getattr(engine, "update_weights", None)):
        engine.update_weights(iter(items))
    elif callable(getattr(engine, "apply_model", None)):
        engine.apply_model(lambda m: m.load_weights(items))
    else:
        raise TypeError(f"{type(engine).__name__} has neither update_weights() nor apply_model(): cannot load weights")
    reset = getattr(engine, "reset_prefix_cache", None)
    if callable(reset):
        reset()
