"""A small in-process stand-in for ``vllm.LLM``, backed by a tiny transformers model (CPU tests only).

It answers ``generate(prompts, sampling_params, use_tqdm=False)`` with objects shaped like vLLM's:
``RequestOutput(prompt_token_ids, prompt_logprobs, outputs, finished)``, ``CompletionOutput(index, text,
token_ids, cumulative_logprob, logprobs, finish_reason)`` and ``Logprob(logprob, rank, decoded_token)``.
As in vLLM, ``prompt_logprobs[0]`` is ``None`` and log-probs are the raw model's (before temperature/top-k).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch


@dataclasses.dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclasses.dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclasses.dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: list[dict[int, Logprob] | None] | None
    outputs: list[CompletionOutput]
    finished: bool


class FakeLLM:
    """Greedy (temperature 0) or sampled (temperature, top-k) decoding, one token at a time, no cache."""

    def __init__(self, model: Any, tokenizer: Any, omit_prompt_logprobs: bool = False) -> None:  # noqa: ANN401
        self.model = model
        self.tokenizer = tokenizer
        self.omit_prompt_logprobs = omit_prompt_logprobs
        self.calls: list[Any] = []
        self.prefix_resets = 0

    def get_tokenizer(self) -> Any:  # noqa: ANN401
        return self.tokenizer

    @torch.no_grad()
    def _raw_log_probs(self, ids: list[int]) -> torch.Tensor:
        return self.model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)

    def _entry(self, lp_row: torch.Tensor, token: int) -> dict[int, Logprob]:
        top = int(lp_row.argmax())
        entry = {top: Logprob(float(lp_row[top]), rank=1)}
        entry[token] = Logprob(float(lp_row[token]), rank=int((lp_row > lp_row[token]).sum()) + 1)
        return entry

    def _complete(self, prompt: list[int], params: Any, index: int) -> CompletionOutput:  # noqa: ANN401
        ids, tokens, entries = list(prompt), [], []
        eos = self.tokenizer.eos_token_id
        reason = "length"
        for _ in range(params.max_tokens):
            lp = self._raw_log_probs(ids)[-1]
            if params.temperature == 0:
                token = int(lp.argmax())
            else:
                scores = lp / params.temperature
                if params.top_k and params.top_k > 0:
                    kth = scores.topk(params.top_k).values[-1]
                    scores = scores.masked_fill(scores < kth, float("-inf"))
                token = int(torch.multinomial(scores.softmax(-1), 1))
            tokens.append(token)
            entries.append(self._entry(lp, token))
            ids.append(token)
            if token == eos:
                reason = "stop"
                break
        logprobs = entries if params.logprobs is not None else None
        cum = sum(e[t].logprob for e, t in zip(entries, tokens))
        text = self.tokenizer.decode(tokens) if params.detokenize else ""
        return CompletionOutput(index, text, tokens, cum, logprobs, finish_reason=reason)

    def generate(self, prompts: list[dict], sampling_params: Any, use_tqdm: bool = False) -> list[RequestOutput]:  # noqa: ANN401
        self.calls.append(sampling_params)
        outs = []
        for r, request in enumerate(prompts):
            prompt = list(request["prompt_token_ids"])
            prompt_lp = None
            if sampling_params.prompt_logprobs is not None and not self.omit_prompt_logprobs:
                lp = self._raw_log_probs(prompt)
                prompt_lp = [None] + [self._entry(lp[i - 1], prompt[i]) for i in range(1, len(prompt))]
            completions = [self._complete(prompt, sampling_params, k) for k in range(sampling_params.n)]
            outs.append(RequestOutput(str(r), None, prompt, prompt_lp, completions, finished=True))
        return outs

    def update_weights(self, weights: Any) -> None:  # noqa: ANN401
        self.model.load_state_dict(dict(weights))

    def reset_prefix_cache(self) -> None:
        self.prefix_resets += 1
