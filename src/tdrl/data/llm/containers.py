"""Output containers of the LLM wrappers: ``Text``, ``Tokens``, ``Masks``, ``LogProbs``, ``ChatHistory``.

Each container is a tensorclass with ``prompt``/``response``/``full`` fields (``Masks`` holds
``all_attention_mask``/``all_assistant_mask``), as in TorchRL 0.14.1. A batch is either *padded* (one tensor
per field: prompt left-padded, response right-padded, ``full`` = prompt then response, so it can carry pads
on both sides) or *ragged* (a lazy stack of per-sample containers holding 1-D tensors; read it with
``get(field, as_list=True)`` or ``as_padded_tensor=True``). Indexing a batch gives one sample's container.

Padding is never inferred from token ids: the ``Masks.all_attention_mask`` of a padded batch tells real
tokens from pads, so a pad id equal to the EOS id is harmless.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import LazyStackedTensorDict, lazy_stack

from tdrl._utils.tensorclass import NoCastTensorClass
from tdrl.data.llm.history import History
from tdrl.data.tensor_specs import Composite, NonTensor, Unbounded

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["ChatHistory", "LogProbs", "Masks", "Text", "Tokens", "template_kwargs"]


def template_kwargs(chat_template_name: str | None, chat_template: str | None) -> dict[str, Any]:
    """The ``apply_chat_template`` options naming the template (those that are set).

    Examples:
        >>> template_kwargs("chatml_format", None)
        {'chat_template_name': 'chatml_format'}
    """
    out: dict[str, Any] = {}
    if chat_template_name is not None:
        out["chat_template_name"] = chat_template_name
    if chat_template is not None:
        out["chat_template"] = chat_template
    return out

_PRF: tuple[Literal["prompt", "response", "full"], ...] = ("prompt", "response", "full")


def _tensor_spec(cls: type, shape: tuple[int, ...], keys: Sequence[str] | None, default: Sequence[str]) -> Composite:
    # One spec per field with a free trailing (sequence) dimension, plus the non-tensor ``padded`` flag.
    keys = list(default if keys is None else keys)
    specs: dict[str, Any] = {k: Unbounded(shape=(*shape, -1)) for k in keys}
    specs["padded"] = NonTensor(shape=shape, example_data=False)
    return Composite(specs, shape=shape[:-1], data_cls=cls, step_mdp_static=True)


def _prf_spec(
    cls: type, shape: tuple[int, ...] = (-1,), keys: list[Literal["prompt", "response", "full"]] | None = None
) -> Composite:
    """A ``Composite`` spec describing a batch of the container (batch ``shape[:-1]``, free length)."""
    return _tensor_spec(cls, tuple(shape), keys, _PRF)


def _as_list(container: Any, field: str) -> list:
    # one entry per sample, whether the batch is a lazy stack or a dense container holding a list
    if isinstance(container._tensordict, LazyStackedTensorDict):
        return list(container._tensordict.get(field, as_list=True))  # type: ignore[call-overload]  # tensordict's stubs lack as_list
    value = getattr(container, field)
    if isinstance(value, torch.Tensor):
        return list(value.unbind(0)) if container.batch_dims else [value]
    return [value] if isinstance(value, str) or not container.batch_dims else list(value)


def _is_padded(container: Any) -> bool:
    padded = container.padded
    if padded is None or isinstance(padded, bool):
        return bool(padded)
    return any(bool(p) for p in container.view(-1).padded)


class Tokens(NoCastTensorClass):
    """Token ids of the prompt, the response and both (``full``).

    Args:
        prompt: prompt ids, ``[B, P]`` left-padded when ``padded``.
        response: response ids, ``[B, R]`` right-padded when ``padded``.
        full: prompt then response, ``[B, P + R]``.
        padded: whether the tensors are padded (``False``: each sample holds its own 1-D tensors).

    Examples:
        >>> import torch
        >>> from tensordict import lazy_stack
        >>> t = lazy_stack([Tokens(prompt=torch.tensor([5, 6]), padded=False),
        ...                 Tokens(prompt=torch.tensor([7]), padded=False)])
        >>> t[1].prompt
        tensor([7])
        >>> [x.tolist() for x in t.get("prompt", as_list=True)]
        [[5, 6], [7]]
    """

    prompt: torch.Tensor | None = None
    response: torch.Tensor | None = None
    full: torch.Tensor | None = None
    padded: bool | None = None

    @classmethod
    def default_spec(
        cls, shape: tuple[int, ...] = (-1,), keys: list[Literal["prompt", "response", "full"]] | None = None
    ) -> Composite:
        """A ``Composite`` spec of a batch of this container (prompt/response/full entries)."""
        return _prf_spec(cls, shape, keys)

    def to_text(self, tokenizer: PreTrainedTokenizerBase, skip_special_tokens: bool = False) -> Text:
        """Decodes every present field with ``tokenizer.batch_decode``.

        Raises:
            ValueError: for padded tokens (pads would be decoded as text; unpad them first).
        """
        if _is_padded(self):
            raise ValueError("Tokens.to_text needs unpadded (ragged) tokens: padded=True would decode the pads.")
        out = Text._from_tensordict(self._tensordict.empty())
        for field in _PRF:
            if field in self._tensordict.keys():
                seqs = [t.reshape(-1).tolist() for t in _as_list(self, field)]
                out.set(field, tokenizer.batch_decode(seqs, skip_special_tokens=skip_special_tokens))
        return out

    def to_history(
        self,
        tokenizer: PreTrainedTokenizerBase,
        chat_template_name: str | None = None,
        skip_special_tokens: bool = False,
    ) -> ChatHistory:
        """Decodes (:meth:`to_text`), then parses the chat text into ``History`` (:meth:`Text.to_history`)."""
        text = self.to_text(tokenizer, skip_special_tokens=skip_special_tokens)
        return text.to_history(tokenizer, chat_template_name=chat_template_name)


class Masks(NoCastTensorClass):
    """Masks aligned with ``Tokens.full``: real tokens (``all_attention_mask``) and assistant tokens.

    Args:
        all_attention_mask: ``True`` where ``full`` holds a real (non-pad) token.
        all_assistant_mask: ``True`` where the token was written by the assistant (the chat template's
            ``assistant_masks``, or the generated response).
        padded: whether the masks are padded like ``Tokens.full``.

    Examples:
        >>> import torch
        >>> m = Masks(all_attention_mask=torch.tensor([[0, 1, 1]]).bool(), padded=True, batch_size=[1])
        >>> m[0].all_attention_mask
        tensor([False,  True,  True])
    """

    all_attention_mask: torch.Tensor | None = None
    all_assistant_mask: torch.Tensor | None = None
    padded: bool | None = None

    @classmethod
    def default_spec(
        cls,
        shape: tuple[int, ...] = (-1,),
        keys: list[Literal["all_attention_mask", "all_assistant_mask"]] | None = None,
    ) -> Composite:
        """A ``Composite`` spec describing a batch of ``Masks``."""
        return _tensor_spec(cls, tuple(shape), keys, ("all_attention_mask", "all_assistant_mask"))


class LogProbs(NoCastTensorClass):
    """Per-token log-probabilities aligned with ``Tokens``.

    ``full[i] = log p(full[i] | full[:i])``; entry 0 of each sequence and every pad are exactly ``0.0``.
    ``response`` holds the last ``R`` entries of ``full`` (its first entry is the real log-prob of the first
    generated token) and ``prompt`` the first ``P``.

    Args:
        prompt: log-probs of the prompt tokens.
        response: log-probs of the response tokens.
        full: log-probs of all tokens.
        padded: whether the tensors are padded like ``Tokens``.

    Examples:
        >>> import torch
        >>> lp = LogProbs(full=torch.tensor([[0.0, -1.5, -0.2]]), padded=True, batch_size=[1])
        >>> lp[0].full
        tensor([ 0.0000, -1.5000, -0.2000])
    """

    prompt: torch.Tensor | None = None
    response: torch.Tensor | None = None
    full: torch.Tensor | None = None
    padded: bool | None = None

    @classmethod
    def default_spec(
        cls, shape: tuple[int, ...] = (-1,), keys: list[Literal["prompt", "response", "full"]] | None = None
    ) -> Composite:
        """A ``Composite`` spec of a batch of this container (prompt/response/full entries)."""
        return _prf_spec(cls, shape, keys)


class Text(NoCastTensorClass):
    """Strings of the prompt, the response and both (``full``).

    Args:
        prompt: the prompt string (a list of strings for a batch).
        response: the generated string.
        full: prompt followed by response.

    Examples:
        >>> t = Text(prompt=["a", "b"], response=["x", "y"], batch_size=[2])
        >>> t[1].response
        'y'
    """

    prompt: str | None = None
    response: str | None = None
    full: str | None = None

    @classmethod
    def default_spec(
        cls, shape: tuple[int, ...] = (-1,), keys: list[Literal["prompt", "response", "full"]] | None = None
    ) -> Composite:
        """A ``Composite`` spec describing a batch of ``Text``."""
        keys = list(_PRF if keys is None else keys)
        shape = tuple(shape)
        specs: dict[str, NonTensor] = {k: NonTensor(shape=shape, example_data="a string") for k in keys}
        return Composite(specs, shape=shape[:-1], data_cls=cls, step_mdp_static=True)

    def to_tokens(
        self,
        tokenizer: PreTrainedTokenizerBase,
        padding: bool = False,
        truncation: bool = False,
        return_tensors: str = "pt",
    ) -> Tokens:
        """Tokenizes every present field into ragged (``padded=False``) ``Tokens``.

        Raises:
            ValueError: for ``padding=True`` (a padded result would need a mask; use the wrappers instead).
        """
        if padding:
            raise ValueError("Text.to_tokens(padding=True) is not supported: it returns ragged tokens only.")
        del return_tensors  # ragged ids are always returned as one int64 tensor per sample
        out = Tokens._from_tensordict(self._tensordict.empty())
        for field in _PRF:
            value = getattr(self, field)
            if value is None:
                continue
            strings = [value] if isinstance(value, str) else list(value)
            ids = tokenizer(strings, padding=False, truncation=truncation, add_special_tokens=False)["input_ids"]
            out.set(field, [torch.as_tensor(i, dtype=torch.long) for i in ids])
        out.padded = False
        return out

    def to_history(self, tokenizer: PreTrainedTokenizerBase, chat_template_name: str | None = None) -> ChatHistory:
        """Parses each present field's chat text into a ``History`` (``History.from_text``)."""
        out = ChatHistory._from_tensordict(self._tensordict.empty())
        for field in _PRF:
            value = getattr(self, field)
            if value is None:
                continue
            strings = [value] if isinstance(value, str) else list(value)
            parsed = [History.from_text(t, chat_template_name=chat_template_name, tokenizer=tokenizer) for t in strings]
            out.set(field, lazy_stack(parsed))
        return out


class ChatHistory(NoCastTensorClass):
    """Conversation histories (``tdrl.data.llm.History``) before and after the policy's turn.

    Each field holds a ``History`` with one more (message) dimension than the ``ChatHistory``; a ``History``
    with the same batch dims is unsqueezed along its last dimension (with a warning, as TorchRL does).
    Policy wrappers always set ``full``: ``ChatEnv`` reads it as the next prompt.

    Args:
        prompt: the conversation up to the policy's turn.
        response: the message(s) the policy wrote.
        full: prompt followed by response.
    """

    prompt: History | None = None
    response: History | None = None
    full: History | None = None

    @classmethod
    def default_spec(
        cls, shape: tuple[int, ...] = (-1,), keys: list[Literal["prompt", "response", "full"]] | None = None
    ) -> Composite:
        """A ``Composite`` spec describing a batch of ``ChatHistory`` (one ``History`` spec per field)."""
        shape = tuple(shape)
        specs: dict[str, Composite] = {k: History.default_spec(shape=(*shape, -1)) for k in (_PRF if keys is None else keys)}
        return Composite(specs, shape=shape[:-1], data_cls=cls, step_mdp_static=True)

    def __post_init__(self) -> None:
        for field in _PRF:
            value = getattr(self, field)
            if value is not None and getattr(value, "batch_dims", None) == self.batch_dims:
                warnings.warn(
                    f"ChatHistory.{field} should have one more batch dimension (messages) than the ChatHistory "
                    f"(got {value.batch_dims} and {self.batch_dims}); unsqueezing it along the last dimension.",
                    stacklevel=3,
                )
                setattr(self, field, lazy_stack([value], -1))

    def _templated(self, field: str, tokenizer: PreTrainedTokenizerBase, tokenize: bool, **kwargs: Any) -> Any:
        return getattr(self, field).apply_chat_template(
            tokenizer=tokenizer, tokenize=tokenize, add_generation_prompt=(field == "prompt"), **kwargs
        )

    def to_text(
        self,
        tokenizer: PreTrainedTokenizerBase,
        chat_template_name: str | None = None,
        chat_template: str | None = None,
    ) -> Text:
        """Applies the chat template: ``prompt`` with the generation prompt, ``full`` without, and
        ``response`` = ``full`` minus its ``prompt`` prefix.

        Raises:
            ValueError: when a templated ``full`` does not start with its templated ``prompt``.
        """
        kwargs = template_kwargs(chat_template_name, chat_template)
        out = Text._from_tensordict(self._tensordict.empty())
        for field in ("prompt", "full"):
            if getattr(self, field) is not None:
                out.set(field, self._templated(field, tokenizer, False, **kwargs))
        if self.prompt is not None and self.full is not None:
            responses = []
            for p, f in zip(_as_list(out, "prompt"), _as_list(out, "full"), strict=True):
                if not f.startswith(p):
                    raise ValueError(f"ChatHistory.to_text: full text {f[:60]!r} does not start with prompt {p[:60]!r}")
                responses.append(f[len(p) :])
            out.set("response", responses)
        elif self.response is not None:
            out.set("response", self._templated("response", tokenizer, False, **kwargs))
        return out

    def to_tokens(
        self,
        tokenizer: PreTrainedTokenizerBase,
        chat_template_name: str | None = None,
        chat_template: str | None = None,
    ) -> Tokens:
        """Tokenizes through the chat template into ragged ``Tokens``; ``response`` = ``full[len(prompt):]``."""
        kwargs = template_kwargs(chat_template_name, chat_template)
        kwargs.update(return_dict=True, padding=False)
        out = Tokens._from_tensordict(self._tensordict.empty())
        for field in ("prompt", "full"):
            if getattr(self, field) is not None:
                ids = self._templated(field, tokenizer, True, **kwargs).get("input_ids", as_list=True)
                out.set(field, [torch.as_tensor(i).reshape(-1) for i in ids])
        if self.prompt is not None and self.full is not None:
            pairs = zip(_as_list(out, "prompt"), _as_list(out, "full"), strict=True)
            out.set("response", [f[p.numel() :] for p, f in pairs])
        elif self.response is not None:
            ids = self._templated("response", tokenizer, True, **kwargs).get("input_ids", as_list=True)
            out.set("response", [torch.as_tensor(i).reshape(-1) for i in ids])
        out.padded = False
        return out
