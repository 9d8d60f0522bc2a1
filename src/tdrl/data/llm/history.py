"""``History``: a conversation as a tensorclass of messages, and ``ContentBase`` for multi-part content.

A ``History`` holds one message per batch element along its last dimension: ``History`` of shape ``[T]``
is one conversation of ``T`` messages; ``[B, T]`` is a batch of ``B`` conversations (a lazy stack when
their lengths differ). ``apply_chat_template`` renders it with a tokenizer's own template or one of the
named templates (:mod:`tdrl.data.llm._templates`); ``from_text`` parses rendered text back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, list_to_stack
from tensordict.utils import _maybe_correct_neg_dim

from tdrl._utils.tensorclass import NoCastTensorClass, ShadowTensorClass
from tdrl.data.llm._parsers import PARSERS
from tdrl.data.llm._templates import CHAT_TEMPLATES, INVERSE_PARSERS, template_name_for
from tdrl.data.tensor_specs import Composite, NonTensor

if TYPE_CHECKING:
    import transformers

__all__ = ["ContentBase", "History"]


class ContentBase(ShadowTensorClass):
    """One part of a multi-part message (text, an image URL, a function call, ...).

    Attributes:
        type: ``"text"``, ``"image"``, ``"audio"``, ``"video"``, ``"file"`` or ``"function_call"``.
        text: the text of a text part.
        url: where the media lives; data: base64 media; mime_type, name, size: file metadata.
        function_name, function_args: a function call's name and arguments.

    Examples:
        >>> from tensordict import lazy_stack
        >>> parts = lazy_stack([ContentBase(type="text", text="hi"), ContentBase(type="image", url="a.png")])
        >>> list(parts.type)
        ['text', 'image']
    """

    type: Literal["text", "image", "audio", "video", "file", "function_call"]
    text: str | None = None
    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    name: str | None = None
    size: int | None = None
    function_name: str | None = None
    function_args: dict | None = None


def _to_device(td: Any, device: torch.device | None) -> Any:
    if td.device == device:
        return td
    return td.copy().clear_device_() if device is None else td.to(device)


class History(NoCastTensorClass):
    """A conversation: role/content messages along the last batch dimension.

    Attributes:
        role: who wrote the message (``"system"``, ``"user"``, ``"assistant"``, ``"tool"``; ``"<none>"``
            marks padding elements, dropped when rendering).
        content: the message text (or ``ContentBase`` parts).
        is_complete: False for a message whose end marker was not generated (a truncated response).
        tool_calls: the tool calls the message makes (list of dicts), if any.
        tool_responses: the tool outputs the message carries, if any.

    Examples:
        >>> h = History.from_chats([[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]])
        >>> h.shape
        torch.Size([1, 2])
        >>> list(h[0].role)
        ['user', 'assistant']
        >>> list(h[0].append(History(role="user", content="Again?")).role)
        ['user', 'assistant', 'user']
    """

    role: str | list[str] | list[list[str]]
    content: str | ContentBase | list[str] | list[ContentBase] | list[list[str]] | list[list[ContentBase]]
    is_complete: bool = True
    tool_calls: list[dict] | None = None
    tool_responses: list[str] | None = None

    def __post_init__(self) -> None:
        if not list_to_stack():
            raise RuntimeError(
                "History needs lists to be stacked: call tensordict.set_list_to_stack(True).set() at the start "
                "of the program or set the LIST_TO_STACK=1 environment variable."
            )

    # ------------------------------------------------------------ rendering
    def apply_chat_template(
        self,
        *,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        add_generation_prompt: bool = True,
        chat_template: str | None = None,
        chat_template_name: str | None = None,
        continue_final_message: bool = False,
        tokenize: bool | None = None,
        padding: bool | str = False,
        truncation: bool | str = False,
        return_tensors: str | None = None,
        return_dict: bool | None = None,
        return_assistant_tokens_mask: bool = False,
        **kwargs: Any,
    ) -> str | list[str] | torch.Tensor | list[torch.Tensor] | TensorDict:
        """Renders the conversation(s) with a chat template, as text or tokens.

        The template is, in order: ``chat_template``; the named template ``chat_template_name``; the
        template of the model family ``tokenizer.name_or_path`` names (qwen, dialogpt, falcon,
        deepseek, llama, or one added by ``add_chat_template``); the tokenizer's own template when it
        has ``{% generation %}`` blocks; else ``chatml_format``.

        Args:
            tokenizer: a ``transformers`` tokenizer (it renders the Jinja template and tokenizes).
            add_generation_prompt: append the assistant header that prompts a reply.
            chat_template: a Jinja template string.
            chat_template_name: a registered template name (see ``add_chat_template``).
            continue_final_message: leave the last message open (no end marker) to continue it.
            tokenize: return tokens instead of text; defaults to True when ``return_tensors`` or
                ``return_assistant_tokens_mask`` is set.
            padding: passed to the tokenizer.
            truncation: passed to the tokenizer.
            return_tensors: tensor type when tokenizing (``"pt"`` by default then).
            return_dict: return a TensorDict (``input_ids``, ``attention_mask``, ...); defaults to True
                with ``return_assistant_tokens_mask``.
            return_assistant_tokens_mask: write ``assistant_masks`` (1 on tokens inside assistant
                ``{% generation %}`` blocks).
            **kwargs: passed to ``tokenizer.apply_chat_template`` (``tools=...``, template variables).

        Returns:
            A string for one conversation (a list for a batch); tokens or a TensorDict when tokenizing.

        Raises:
            RuntimeError: without a tokenizer (it renders the template).
            KeyError: for an unknown ``chat_template_name``.
        """
        if tokenizer is None:
            raise RuntimeError("History.apply_chat_template needs a `tokenizer` (it renders the template).")
        template = self._resolve_template(tokenizer, chat_template, chat_template_name)
        if tokenize is None:
            tokenize = bool(return_assistant_tokens_mask or return_tensors is not None)
        if tokenize:
            return_tensors = "pt" if return_tensors is None else return_tensors
            if return_dict is None:
                return_dict = bool(return_assistant_tokens_mask)
        elif return_dict is None:
            return_dict = False
        options = dict(
            add_generation_prompt=add_generation_prompt,
            chat_template=template,
            continue_final_message=continue_final_message,
            tokenize=tokenize,
            padding=padding,
            truncation=truncation,
            return_tensors=return_tensors,
            return_dict=return_dict,
            return_assistant_tokens_mask=return_assistant_tokens_mask,
            **kwargs,
        )
        if self.batch_dims > 1:
            results = [self[i]._render(tokenizer, options) for i in range(self.batch_size[0])]
            return lazy_stack(results) if return_dict else results
        return self._render(tokenizer, options)

    @staticmethod
    def _resolve_template(tokenizer: Any, chat_template: str | None, chat_template_name: str | None) -> str:
        if chat_template is not None:
            return chat_template
        if chat_template_name is not None:
            if chat_template_name not in CHAT_TEMPLATES:
                raise KeyError(
                    f"Unknown chat_template_name {chat_template_name!r}; registered templates: "
                    f"{sorted(CHAT_TEMPLATES)} (add one with add_chat_template)."
                )
            return CHAT_TEMPLATES[chat_template_name]
        family = template_name_for(tokenizer)
        if family is not None:
            return CHAT_TEMPLATES[family]
        own = getattr(tokenizer, "chat_template", None)
        # Only a template with generation blocks can produce assistant masks: prefer ChatML otherwise.
        if isinstance(own, str) and "generation" in own and "{%" in own:
            return own
        return CHAT_TEMPLATES["chatml_format"]

    def messages(self) -> list[dict[str, Any]]:
        """The messages of a 1-d History as plain dicts, ``"<none>"`` placeholders dropped.

        Examples:
            >>> History.from_chats([{"role": "user", "content": "Hi"}]).messages()[0]["content"]
            'Hi'
        """
        if self.batch_dims != 1:
            raise RuntimeError(f"messages() needs a 1-d History (one conversation); got shape {tuple(self.shape)}.")
        flat = self.tolist(tolist_first=True)
        return [m for m in flat if m["role"] != "<none>"]

    def _render(self, tokenizer: Any, options: dict[str, Any]) -> Any:
        view = self if self.batch_dims == 1 else self.view(-1)
        result = tokenizer.apply_chat_template(conversation=view.messages(), **options)
        if isinstance(result, (str, list, torch.Tensor)):
            return result
        result = TensorDict.from_dict(dict(result), auto_batch_size=True, batch_dims=1)
        # One conversation: drop the tokenizer's batch dimension of 1.
        if result.batch_size[0] != 1:
            raise RuntimeError(f"Expected one rendered conversation, got a batch of {result.batch_size[0]}.")
        return result.squeeze(0)

    # -------------------------------------------------------------- parsing
    @classmethod
    def from_text(
        cls,
        text: str | list[str],
        chat_template_name: str | None = None,
        chat_template: str | None = None,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
    ) -> History:
        """Parses rendered chat text back into a History (a lazy stack for a list of texts).

        Args:
            text: the rendered conversation(s).
            chat_template_name: the template the text was rendered with; inferred from the tokenizer's
                model family when None (``chatml_format`` by default).
            chat_template: accepted for TorchRL compatibility; a template string cannot be inverted, so
                parsing follows ``chat_template_name``.
            tokenizer: supplies BOS/EOS strings (DialoGPT, DeepSeek) and the model family.

        Examples:
            >>> h = History.from_text("<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\nHel")
            >>> list(h.role), list(h.is_complete)
            (['user', 'assistant'], [True, False])
        """
        if chat_template_name is None:
            chat_template_name = template_name_for(tokenizer) or "chatml_format"
        parser = INVERSE_PARSERS.get(chat_template_name)
        if parser is None and chat_template_name in PARSERS:
            builtin = PARSERS[chat_template_name]

            def parser(t: str) -> History:
                return lazy_stack([cls(**m) for m in builtin(t, tokenizer)])

        if parser is None:
            raise ValueError(
                f"No inverse parser for chat_template_name {chat_template_name!r}; known: "
                f"{sorted(set(PARSERS) | set(INVERSE_PARSERS))}. Register one with add_chat_template(..., inverse_parser=...)."
            )
        if isinstance(text, str):
            return parser(text)
        return lazy_stack([parser(t) for t in text])

    @classmethod
    def from_chats(cls, chats: list[dict] | list[list[dict]]) -> History:
        """Builds a History from a chat (list of message dicts) or a batch of chats (lazily stacked).

        Examples:
            >>> History.from_chats([[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]).shape
            torch.Size([2, 1])
        """
        if not chats:
            raise ValueError("from_chats needs at least one message or chat; got an empty list.")
        if isinstance(chats[0], dict):
            return lazy_stack([cls(**message) for message in chats])
        return lazy_stack([cls.from_chats(chat) for chat in chats])

    # ---------------------------------------------------------- composition
    def append(self, history: History, *, inplace: bool = True, dim: int = -1) -> History:
        """Appends one message (or one message per conversation) along ``dim``.

        Args:
            history: a History with one dimension fewer than ``self``.
            inplace: update ``self`` (returned) instead of returning a new History.
            dim: the message dimension (the last by default).

        Examples:
            >>> h = History(role=["user"], content=["Hi"], batch_size=(1,))
            >>> h.append(History(role="assistant", content="Yo"), inplace=False).shape
            torch.Size([2])
        """
        if not self.batch_dims:
            raise RuntimeError("Cannot append to a batchless History: call unsqueeze(0) on it first.")
        if self.batch_dims != history.batch_dims + 1:
            raise RuntimeError(
                "The History to append must have one dimension fewer than self; got "
                f"self.shape={tuple(self.shape)} and history.shape={tuple(history.shape)}."
            )
        dim = _maybe_correct_neg_dim(dim, self.batch_size)
        if not inplace:
            return lazy_stack([*self.unbind(dim), _to_device(history, self.device)], dim=dim)
        td = _to_device(history._tensordict, self.device)
        own = self._tensordict
        if isinstance(own, LazyStackedTensorDict) and own.stack_dim == dim:
            own.append(td)
        else:
            self.__dict__["_tensordict"] = lazy_stack([*own.unbind(dim), td], dim=dim)
        return self

    def extend(self, history: History, *, inplace: bool = True, dim: int = 0) -> History:
        """Concatenates ``history`` (same number of dimensions) along ``dim``.

        Args:
            history: a History with as many dimensions as ``self``.
            inplace: update ``self`` (returned) instead of returning a new History.
            dim: the dimension to extend (the first by default).

        Examples:
            >>> h = History(role=["user"], content=["Hi"], batch_size=(1,))
            >>> list(h.extend(History(role=["assistant", "user"], content=["Yo", "?"], batch_size=(2,))).role)
            ['user', 'assistant', 'user']
        """
        if not self.batch_dims:
            raise RuntimeError("Cannot extend a batchless History: call unsqueeze(0) on it first.")
        if self.batch_dims != history.batch_dims:
            raise RuntimeError(
                "The History to extend with must have as many dimensions as self; got "
                f"self.shape={tuple(self.shape)} and history.shape={tuple(history.shape)}."
            )
        dim = _maybe_correct_neg_dim(dim, self.batch_size)
        if not inplace:
            return lazy_stack([*self.unbind(dim), *_to_device(history, self.device).unbind(dim)], dim=dim)
        td = _to_device(history._tensordict, self.device)
        own = self._tensordict
        if isinstance(own, LazyStackedTensorDict) and own.stack_dim == dim:
            own.extend(td)
        else:
            self.__dict__["_tensordict"] = lazy_stack([*own.unbind(dim), *td.unbind(dim)], dim=dim)
        return self

    # ----------------------------------------------------------------- spec
    @classmethod
    def default_spec(cls, shape: Sequence[int] = (-1,)) -> Composite:
        """A spec for History entries: one ``NonTensor`` per field, ``shape[-1]`` messages (-1: any number).

        Examples:
            >>> spec = History.default_spec()
            >>> spec["role"].shape, spec.shape
            (torch.Size([-1]), torch.Size([]))
        """
        shape = tuple(shape)
        fields = {
            name: NonTensor(
                example_data=None if field.default is dataclasses.MISSING else field.default, shape=shape
            )
            for name, field in cls.__dataclass_fields__.items()
        }
        return Composite(fields, shape=shape[:-1], data_cls=cls)
