"""Tokenizer transforms: ``Tokenizer`` (text <-> token entries) and ``IncrementalTokenizer`` (chat tokens).

TorchRL exports ``Tokenizer`` from ``torchrl.envs.transforms`` (and ``torchrl.envs``) as well as from
``torchrl.envs.llm``; tdrl has one class, defined here (no ``transformers`` import until a tokenizer name
must be loaded) and re-exported by ``tdrl.envs.llm.transforms.tokenizer``.

``Tokenizer`` tokenizes its ``in_keys`` strings into ``out_keys`` token tensors (with an
``attention_mask`` beside each, ``(*out_key[:-1], "attention_mask")``) on every reset and step; its
inverse decodes the policy's token action (``out_keys_inv``) into the text action the base env reads
(``in_keys_inv``). ``IncrementalTokenizer`` keeps ``("tokens", "prompt")`` next to a ``ChatEnv``'s
history: the template tokens on reset, then the policy's own ``("tokens", "full")`` as the next prompt,
so the tokens the policy saw are never re-derived from text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs.transforms._base import Transform

if TYPE_CHECKING:
    import transformers

__all__ = ["IncrementalTokenizer", "Tokenizer"]


def _mask_key(key: NestedKey) -> NestedKey:
    key = unravel_key(key)
    return (*key[:-1], "attention_mask") if isinstance(key, tuple) else "attention_mask"


def _token_spec(batch_shape: torch.Size, device: Any, high: int, length: int | None) -> Bounded | Unbounded:
    # TorchRL declares Bounded(0, vocab) specs of length -1; tdrl's Bounded needs a fixed shape, so a
    # variable length is an int64 Unbounded spec.
    if length is None:
        return Unbounded(shape=(*batch_shape, -1), dtype=torch.int64, device=device)
    return Bounded(0, high, shape=(*batch_shape, length), dtype=torch.int64, device=device)


def _strings(value: Any) -> str | list[str]:
    if isinstance(value, NonTensorData):
        return value.data
    if isinstance(value, NonTensorStack):
        return value.tolist()
    if isinstance(value, (str, list)):
        return value
    raise TypeError(f"Tokenizer: expected text (a string or strings), got {type(value).__name__}")


class Tokenizer(Transform):
    """Tokenizes text entries (and decodes token actions back to text).

    Args:
        in_keys: the text entries to tokenize.
        out_keys: where the token ids go (default: ``in_keys``); a mask goes beside each.
        in_keys_inv: the text action entries of the base env (written by the inverse).
        out_keys_inv: the token action entries the policy writes (read by the inverse).
        tokenizer: a ``transformers`` tokenizer. Required: tdrl has no hub default (TorchRL downloads
            ``bert-base-uncased``); a string is loaded with ``AutoTokenizer.from_pretrained`` (local
            paths, or the cache under ``HF_HUB_OFFLINE``).
        use_raw_nontensor: accepted for TorchRL compatibility (strings are always read raw).
        additional_tokens: tokens added to the tokenizer's vocabulary.
        skip_special_tokens: drop special tokens when decoding.
        add_special_tokens: let the tokenizer add its special tokens (BOS, ...) when encoding.
        padding: pad a batch of strings (the tokenizer's padding side) when encoding.
        max_length: pad (and truncate) to this length.
        return_attention_mask: write the attention mask beside the tokens.
        missing_tolerance: skip absent entries instead of raising.
        call_before_reset: tokenize the reset input (e.g. a primer's text) before the base env resets.

    Examples:
        >>> from tensordict import TensorDict
        >>> from transformers import PreTrainedTokenizerFast
        >>> from tokenizers import Tokenizer as RawTokenizer, models, pre_tokenizers
        >>> raw = RawTokenizer(models.WordLevel({"[PAD]": 0, "hi": 1, "there": 2}, unk_token="[PAD]"))
        >>> raw.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="[PAD]")
        >>> t = Tokenizer(in_keys=["text"], out_keys=["tokens"], tokenizer=tok)
        >>> out = t(TensorDict(text=["hi there", "hi"], batch_size=[2]))
        >>> out["tokens"], out["attention_mask"]
        (tensor([[1, 2],
                [1, 0]]), tensor([[1, 1],
                [1, 0]]))
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        tokenizer: transformers.PreTrainedTokenizerBase | str | None = None,
        use_raw_nontensor: bool = False,
        additional_tokens: list[str] | None = None,
        skip_special_tokens: bool = True,
        add_special_tokens: bool = False,
        padding: bool = True,
        max_length: int | None = None,
        return_attention_mask: bool = True,
        missing_tolerance: bool = True,
        call_before_reset: bool = False,
    ) -> None:
        if tokenizer is None:
            raise ValueError(
                "Tokenizer needs a `tokenizer` (a transformers tokenizer or a local path): tdrl does not download "
                "TorchRL's default 'bert-base-uncased'."
            )
        if isinstance(tokenizer, str):
            from transformers import AutoTokenizer  # noqa: PLC0415 (optional extra `llm`)

            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        if additional_tokens:
            tokenizer.add_tokens(additional_tokens)
        super().__init__(in_keys=in_keys, out_keys=out_keys, in_keys_inv=in_keys_inv, out_keys_inv=out_keys_inv)
        self.tokenizer = tokenizer
        self.use_raw_nontensor = use_raw_nontensor
        self.skip_special_tokens = skip_special_tokens
        self.add_special_tokens = add_special_tokens
        self.padding = padding
        self.max_length = max_length
        self.return_attention_mask = return_attention_mask
        self.call_before_reset = call_before_reset
        self.set_missing_tolerance(missing_tolerance)

    @property
    def out_device(self) -> torch.device | None:
        """The device of the tokens: the parent env's."""
        return None if self.parent is None else self.parent.device

    def call_tokenizer_fn(self, value: str | list[str]) -> tuple[torch.Tensor, torch.Tensor] | torch.Tensor:
        """Token ids (and the attention mask) of one string (1-d) or a batch of strings (2-d, padded)."""
        kwargs: dict[str, Any] = {"add_special_tokens": self.add_special_tokens, "return_tensors": "pt"}
        if self.max_length is not None:
            kwargs.update(padding="max_length", max_length=self.max_length, truncation=True)
        elif not isinstance(value, str):
            kwargs["padding"] = self.padding
        out = self.tokenizer(value, return_attention_mask=True, **kwargs)
        ids, mask = out["input_ids"], out["attention_mask"]
        if isinstance(value, str):
            ids, mask = ids[0], mask[0]
        device = self.out_device
        if device is not None:
            ids, mask = ids.to(device), mask.to(device)
        return (ids, mask) if self.return_attention_mask else ids

    def call_tokenizer_inv_fn(self, value: torch.Tensor) -> NonTensorData | NonTensorStack:
        """The text of token ids (one sequence, or a batch)."""
        if value.ndim == 1:
            return NonTensorData(self.tokenizer.decode(value.tolist(), skip_special_tokens=self.skip_special_tokens))
        texts = self.tokenizer.batch_decode(value.tolist(), skip_special_tokens=self.skip_special_tokens)
        return NonTensorStack(*[NonTensorData(t) for t in texts])

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = next_tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, next_tensordict)
                continue
            tokens = self.call_tokenizer_fn(_strings(value))
            if self.return_attention_mask:
                tokens, mask = tokens
                next_tensordict.set(_mask_key(out_key), mask)
            next_tensordict.set(out_key, tokens)
        return next_tensordict

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if self.call_before_reset and tensordict is not None:
            previous = self.missing_tolerance
            self.set_missing_tolerance(True)
            try:
                tensordict = self._call(tensordict)
            finally:
                self.set_missing_tolerance(previous)
        return tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset if self.call_before_reset else self._call(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None, as_padded_tensor=True)
            if value is None:
                continue  # no action to decode (a reset input carries none), as in Transform._inv_call
            mask = tensordict.get(_mask_key(out_key), None, as_padded_tensor=True)
            if mask is not None and mask.shape == value.shape and value.ndim > 1:
                # Decode only the real tokens: the pads come from the mask, never from the pad id.
                texts = [self.tokenizer.decode(v[m.bool()].tolist(), skip_special_tokens=self.skip_special_tokens)
                         for v, m in zip(value, mask)]
                tensordict.set(in_key, NonTensorStack(*[NonTensorData(t) for t in texts]))
            else:
                tensordict.set(in_key, self.call_tokenizer_inv_fn(value))
        return tensordict

    def _token_spec(self, batch_shape: torch.Size, device: Any, high: int | None = None) -> Bounded | Unbounded:
        return _token_spec(batch_shape, device, high or len(self.tokenizer), self.max_length)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for out_key in self.out_keys:
            observation_spec[out_key] = self._token_spec(observation_spec.shape, observation_spec.device)
            if self.return_attention_mask:
                observation_spec[_mask_key(out_key)] = self._token_spec(observation_spec.shape, observation_spec.device, 2)
        return observation_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        input_spec = input_spec.clone()
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            for part in ("full_action_spec", "full_state_spec"):
                spec = input_spec[part] if part in input_spec.keys() else None
                if spec is not None and in_key in spec.keys(True, True):
                    local = spec[in_key]
                    del spec[in_key]
                    spec[out_key] = self._token_spec(spec.shape, local.device)
                    break
            else:
                raise KeyError(f"Tokenizer: the inverse key {in_key!r} is not in the env's action or state specs.")
        return input_spec


class IncrementalTokenizer(Transform):
    """Keeps the prompt tokens of a ``ChatEnv`` (history mode) under ``tokens_key``.

    On reset the history prompt is tokenized through the chat template; on step the policy's
    ``("tokens", "full")`` becomes the next ``("tokens", "prompt")`` when present (the exact tokens the
    policy saw and produced), else the new history prompt is tokenized.

    Args:
        tokenizer: the tokenizer (and chat template) of the policy.
        history_key: where the prompt history is.
        tokens_key: where the prompt tokens go.
        chat_template_name, chat_template: the template (see ``History.apply_chat_template``).
        add_generation_prompt: append the assistant header.
    """

    def __init__(
        self,
        tokenizer: transformers.PreTrainedTokenizerBase,
        *,
        history_key: NestedKey = ("history", "prompt"),
        tokens_key: NestedKey = ("tokens", "prompt"),
        chat_template_name: str | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = True,
    ) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.history_key = unravel_key(history_key)
        self.tokens_key = unravel_key(tokens_key)
        self.chat_template_name = chat_template_name
        self.chat_template = chat_template
        self.add_generation_prompt = add_generation_prompt

    def _tokenize_history(self, history: Any) -> list[torch.Tensor]:
        kwargs: dict[str, Any] = {"tokenize": True, "padding": False, "return_dict": True}
        if self.chat_template_name is not None:
            kwargs["chat_template_name"] = self.chat_template_name
        if self.chat_template is not None:
            kwargs["chat_template"] = self.chat_template
        result = history.apply_chat_template(
            tokenizer=self.tokenizer, add_generation_prompt=self.add_generation_prompt, **kwargs
        )
        return [torch.as_tensor(t).reshape(-1) for t in result.get("input_ids", as_list=True)]

    def _set_tokens(self, tensordict: TensorDictBase, tokens: list[torch.Tensor]) -> None:
        tensordict.set(self.tokens_key, torch.nested.as_nested_tensor(tokens, layout=torch.jagged))

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        history = tensordict_reset.get(self.history_key, None)
        if history is not None:
            self._set_tokens(tensordict_reset, self._tokenize_history(history))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        full_key = (*self.tokens_key[:-1], "full") if isinstance(self.tokens_key, tuple) else (self.tokens_key, "full")
        full = tensordict.get(full_key, None, as_list=True) if full_key[0] in tensordict.keys() else None
        if full is not None:
            self._set_tokens(next_tensordict, [torch.as_tensor(t).reshape(-1) for t in full])
            return next_tensordict
        history = next_tensordict.get(self.history_key, None)
        if history is not None:
            self._set_tokens(next_tensordict, self._tokenize_history(history))
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.tokens_key] = _token_spec(
            observation_spec.shape, observation_spec.device, len(self.tokenizer), None
        )
        return observation_spec
