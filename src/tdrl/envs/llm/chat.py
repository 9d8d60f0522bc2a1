"""``ChatEnv``: a conversation as an environment; ``DatasetChatEnv``: one fed with queries from a dataset.

The env holds no model. On reset it reads the ``"query"`` entry (a string, a chat, or a ``History``),
builds the conversation (system prompt first, when set) and writes the policy's prompt under
``("history", "prompt")``, ``("text", "prompt")`` or ``("tokens", "prompt")`` (``input_mode``). The
policy wrapper writes the conversation with its reply under ``(<mode>, "full")``; the step makes that
the next prompt, so a multi-turn rollout carries the whole conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase, lazy_stack

from tdrl.data import Composite, NonTensor, Unbounded
from tdrl.data.llm import History
from tdrl.envs.common import EnvBase, _EnvPostInit
from tdrl.envs.llm._containers import ChatHistory, Text, Tokens
from tdrl.envs.llm._data import load_local_dataset, make_dataloader
from tdrl.envs.llm.transforms.dataloading import DataLoadingPrimer
from tdrl.envs.llm.transforms.tokenizer import IncrementalTokenizer
from tdrl.envs.transforms import TransformedEnv

if TYPE_CHECKING:
    import transformers

__all__ = ["ChatEnv", "DatasetChatEnv"]

InputMode = Literal["history", "text", "tokens"]


class _ChatEnvMeta(_EnvPostInit):
    """``ChatEnv(..., with_tokenizer=True)`` returns the env wrapped in an ``IncrementalTokenizer``."""

    def __call__(cls, *args: Any, with_tokenizer: bool = False, **kwargs: Any) -> Any:
        env = super().__call__(*args, **kwargs)
        if not with_tokenizer:
            return env
        if kwargs.get("tokenizer") is None:
            raise ValueError(f"{cls.__name__}(with_tokenizer=True) needs a `tokenizer`.")
        return TransformedEnv(env, IncrementalTokenizer(kwargs["tokenizer"]))


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and "role" in obj and "content" in obj


def _plain(content: Any) -> Any:
    """A reset query as Python data: strings, chats (lists of message dicts) or Histories."""
    if isinstance(content, History):
        return content
    if isinstance(content, NonTensorData):
        return _plain(content.data)
    if isinstance(content, NonTensorStack):
        return [_plain(item) for item in content.tolist()]
    if isinstance(content, torch.Tensor):
        raise TypeError(f"ChatEnv: the reset query must be text or a chat, got a tensor of shape {tuple(content.shape)}")
    return content


def _repeat(value: Any, batch_size: torch.Size) -> Any:
    for size in reversed(batch_size):
        value = [value for _ in range(size)]
    return value


class ChatEnv(EnvBase, metaclass=_ChatEnvMeta):
    """A chat environment: the observation is the conversation so far, the action the policy's reply.

    Args:
        input_mode: ``"history"`` (``History`` objects), ``"text"`` (the chat template applied) or
            ``"tokens"`` (the template tokenized); decides the ``history``/``text``/``tokens`` entry.
        batch_size: the env batch (1-d or more; ``()`` is rejected: an LLM env is always batched).
        system_prompt: a system message put first in every conversation.
        tokenizer: renders the chat template in ``"text"``/``"tokens"`` mode.
        template_kwargs: extra arguments of ``History.apply_chat_template`` (``chat_template_name``, ...).
        system_role, user_role, policy_role: the message roles.
        data_key: the reset entry holding the query (``"query"``).
        device: the env device.
        with_tokenizer: return the env wrapped in an ``IncrementalTokenizer`` (needs ``tokenizer``).

    Examples:
        >>> from tensordict import TensorDict
        >>> env = ChatEnv(batch_size=(1,), system_prompt="Be brief.")
        >>> td = env.reset(TensorDict(query=["Hi!"], batch_size=(1,)))
        >>> list(td["history"].prompt[0].role)
        ['system', 'user']
    """

    text_key = ("text", "prompt")
    response_key = ("text", "response")
    data_key = "query"

    @classmethod
    def with_tokenizer(cls, tokenizer: transformers.PreTrainedTokenizerBase, **kwargs: Any) -> TransformedEnv:
        """The env wrapped in an ``IncrementalTokenizer`` (the prompt tokens kept alongside the history)."""
        return cls(tokenizer=tokenizer, with_tokenizer=True, **kwargs)

    def __init__(
        self,
        *,
        input_mode: InputMode = "history",
        batch_size: tuple | torch.Size | int | None = None,
        system_prompt: str | None = None,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        template_kwargs: dict[str, Any] | None = None,
        system_role: str = "system",
        user_role: str = "user",
        policy_role: str | None = "assistant",
        data_key: str | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        if input_mode not in ("history", "text", "tokens"):
            raise ValueError(f"ChatEnv: input_mode must be 'history', 'text' or 'tokens', got {input_mode!r}")
        if input_mode != "history" and tokenizer is None:
            raise ValueError(f"ChatEnv(input_mode={input_mode!r}) needs a `tokenizer` to apply the chat template.")
        batch_size = (1,) if batch_size is None else batch_size
        batch_size = torch.Size((batch_size,) if isinstance(batch_size, int) else batch_size)
        if batch_size == ():
            raise ValueError(f"{type(self).__name__} must have at least one batch dimension, got batch_size=().")
        super().__init__(batch_size=batch_size, device=device)
        self.input_mode = input_mode
        if data_key is not None:
            self.data_key = data_key
        self.system_prompt = system_prompt
        self.template_kwargs = dict(template_kwargs or {})
        self.system_role = system_role
        self.user_role = user_role
        self.policy_role = policy_role
        self.tokenizer = tokenizer
        self._make_specs()

    # ------------------------------------------------------------------ specs
    def _container_spec(self, field: str) -> Composite:
        bs, dev = self.batch_size, self.device
        if self.input_mode == "history":
            inner = History.default_spec(shape=(*bs, -1))
            return Composite({field: inner}, shape=bs, device=dev, data_cls=ChatHistory)
        if self.input_mode == "text":
            return Composite({field: NonTensor(shape=bs, example_data="a string")}, shape=bs, device=dev, data_cls=Text)
        inner = Unbounded(shape=(*bs, -1), dtype=torch.int64, device=dev)
        return Composite({field: inner}, shape=bs, device=dev, data_cls=Tokens)

    def _make_specs(self) -> None:
        bs, dev = self.batch_size, self.device
        mode = self.input_mode
        self.full_observation_spec = Composite({mode: self._container_spec("prompt")}, shape=bs, device=dev)
        self.full_action_spec = Composite({mode: self._container_spec("full")}, shape=bs, device=dev)
        self.full_state_spec = Composite(
            {self.data_key: NonTensor(shape=bs, example_data="a string", device=dev)}, shape=bs, device=dev
        )
        # TorchRL's reward parsers write [*batch, 1, 1] rewards; the env declares the same (zero) reward.
        self.full_reward_spec = Composite(reward=Unbounded(shape=(*bs, 1, 1), device=dev), shape=bs, device=dev)

    # ------------------------------------------------------------------ reset
    def _query_to_history(self, content: Any) -> History:
        """The user turn(s) of each conversation, shaped ``[*batch, n_messages]``."""
        payload = _plain(content)
        nb = len(self.batch_size)
        if isinstance(payload, (list, tuple)) and payload and all(isinstance(p, History) for p in payload):
            payload = lazy_stack(list(payload))
        if isinstance(payload, History):
            if payload.batch_dims > nb and payload.batch_size[:nb] == self.batch_size:
                return payload
            if payload.batch_dims <= 1:  # one conversation, shared by every env
                for size in reversed(self.batch_size):
                    payload = lazy_stack([payload] * size)
                return payload if payload.batch_dims > nb else payload.unsqueeze(-1)
            raise RuntimeError(
                f"{type(self).__name__}: the reset History has batch_size {tuple(payload.batch_size)}, which does "
                f"not start with the env batch_size {tuple(self.batch_size)}."
            )
        if _is_message(payload) or (isinstance(payload, (list, tuple)) and payload and _is_message(payload[0])):
            chat = [payload] if _is_message(payload) else list(payload)
            return self._query_to_history(History.from_chats(chat))
        if isinstance(payload, (list, tuple)) and payload and isinstance(payload[0], list) and _is_message_list(payload):
            return self._query_to_history(History.from_chats(list(payload)))
        if isinstance(payload, str):
            payload = _repeat(payload, self.batch_size)
        if _depth(payload) != nb:
            raise ValueError(
                f"{type(self).__name__}: the {self.data_key!r} entry must hold one string per env "
                f"(batch_size {tuple(self.batch_size)}), got {payload!r:.120}"
            )
        history = History(role=_repeat(self.user_role, self.batch_size), content=payload, batch_size=self.batch_size)
        return history.unsqueeze(-1)

    def _with_system_prompt(self, history: History) -> History:
        if self.system_prompt is None:
            return history
        system = History(role=self.system_role, content=self.system_prompt)
        for size in reversed(self.batch_size):
            system = lazy_stack([system] * size)
        return system.unsqueeze(-1).extend(history, inplace=False, dim=-1)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        if tensordict is None or tensordict.get(self.data_key, None) is None:
            keys = None if tensordict is None else sorted(map(str, tensordict.keys()))
            raise RuntimeError(
                f"{type(self).__name__}.reset needs a tensordict with the query entry {self.data_key!r} "
                f"(e.g. from a DataLoadingPrimer); got keys {keys}."
            )
        history = self._with_system_prompt(self._query_to_history(tensordict.get(self.data_key)))
        out = tensordict.empty(device=self.device)
        out.set(self.input_mode, self._prompt_container(history))
        return out.update(tensordict.exclude(*out.keys())).to_lazystack(0)

    def _prompt_container(self, history: History) -> Any:
        if self.input_mode == "history":
            return ChatHistory(prompt=history, batch_size=self.batch_size)
        text = history.apply_chat_template(tokenizer=self.tokenizer, add_generation_prompt=True, **self.template_kwargs)
        if self.input_mode == "text":
            return Text(prompt=text, batch_size=self.batch_size)
        ids = self.tokenizer(list(text), add_special_tokens=False, padding=False)["input_ids"]
        samples = [Tokens(prompt=torch.as_tensor(i, dtype=torch.int64, device=self.device), padded=False) for i in ids]
        return lazy_stack(samples).reshape(self.batch_size) if len(self.batch_size) > 1 else lazy_stack(samples)

    # ------------------------------------------------------------------- step
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        mode = self.input_mode
        if (mode, "full") not in tensordict.keys(True):
            raise KeyError(
                f"{type(self).__name__}.step needs the policy's output at {(mode, 'full')!r} (the conversation with "
                "its reply): build the policy wrapper with the same input_mode as the env."
            )
        out = tensordict.empty(device=self.device)
        if mode == "tokens":  # ragged: one 1-d tensor per env
            seqs = tensordict.get((mode, "full"), as_list=True)
            out.set(mode, lazy_stack([Tokens(prompt=s, padded=False) for s in seqs]))
        else:
            cls = ChatHistory if mode == "history" else Text
            out.set(mode, cls(prompt=tensordict.get((mode, "full")), batch_size=self.batch_size))
        out.set("reward", torch.zeros((*self.batch_size, 1, 1), device=self.device))
        return out

    def _set_seed(self, seed: int | None) -> None:
        return None  # the env is deterministic; sampling lives in the policy and the data loader

    @classmethod
    def from_dataloader(cls, dataloader: Iterable, **kwargs: Any) -> DatasetChatEnv:
        """A ``DatasetChatEnv`` fed by ``dataloader`` (see :meth:`DatasetChatEnv.from_dataloader`)."""
        return DatasetChatEnv.from_dataloader(dataloader, **kwargs)


def _is_message_list(payload: list) -> bool:
    return all(isinstance(chat, list) and chat and _is_message(chat[0]) for chat in payload)


def _depth(payload: Any) -> int:
    depth = 0
    while isinstance(payload, (list, tuple)):
        depth += 1
        payload = payload[0] if payload else None
    return depth


class DatasetChatEnv(TransformedEnv):
    """A ``ChatEnv`` whose queries come from a dataset, through a ``DataLoadingPrimer``.

    tdrl never downloads: ``dataset`` is a local dataset (a list of records, a ``torch.utils.data.Dataset``,
    or a ``datasets.Dataset``/``DatasetDict`` already loaded). A hub name (a string) is loaded with
    ``datasets.load_dataset`` only when ``datasets`` is installed and the hub is reachable; otherwise it
    raises an error naming the ``dataset`` argument.

    Args:
        dataset: the records (each a dict with the query under ``"query"``, or ``"text"``, renamed).
        shuffle: shuffle the records (with ``seed``).
        name, split: the hub config name / split (``"train"`` by default when the dataset has it).
        num_envs: the env batch size.
        repeats: how many consecutive resets see each query (grouped sampling, e.g. GRPO).
        batch_size_dl: the data loader's batch size.
        seed: the shuffling seed.
        group_repeats: put the repeats of a query side by side in one batch (``num_envs * repeats`` envs).
        tokenizer, template_kwargs, input_mode, data_key, system_prompt: as in ``ChatEnv``.
        collate_fn: the data loader's collate function (default: rename ``"text"`` to ``"query"``).
        primers: the specs of the loaded entries (inferred from the first batch when None).
        device: the env device.

    Examples:
        >>> records = [{"query": "1 + 1?", "answer": "2"}, {"query": "2 + 2?", "answer": "4"}]
        >>> env = DatasetChatEnv(dataset=records, shuffle=False)
        >>> env.reset()["history"].prompt[0, -1].content
        '1 + 1?'
    """

    SYSTEM_PROMPT: str | None = None

    def __init__(
        self,
        *,
        dataset: Any,
        shuffle: bool = True,
        name: str | None = None,
        split: Literal["train", "val", "test"] | None = None,
        num_envs: int = 1,
        repeats: int | None = None,
        batch_size_dl: int = 1,
        seed: int | None = None,
        group_repeats: bool = False,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        device: torch.device | str | None = None,
        template_kwargs: dict[str, Any] | None = None,
        apply_template: bool | None = False,
        collate_fn: Callable[[Any], Any] | None = None,
        input_mode: InputMode = "history",
        data_key: str | None = None,
        primers: Composite | None = None,
        system_prompt: str | None = None,
        ray_backend: bool = False,
        dataloader_actor_name: str | None = None,
    ) -> None:
        if ray_backend or dataloader_actor_name is not None:
            raise ValueError(
                f"{type(self).__name__}: ray_backend=True (a Ray-served data loader) is not available in tdrl; "
                "each env owns its DataLoadingPrimer."
            )
        records = self._prepare_dataset(dataset, name=name, split=split)
        loader = make_dataloader(
            records, batch_size=batch_size_dl, shuffle=shuffle, seed=seed, collate_fn=collate_fn
        )
        self._build(
            loader, repeats=repeats, device=device, group_repeats=group_repeats, batch_size=(num_envs,),
            primers=primers, tokenizer=tokenizer, template_kwargs=template_kwargs, input_mode=input_mode,
            data_key=data_key, system_prompt=system_prompt,
        )

    def _prepare_dataset(self, dataset: Any, *, name: str | None, split: str | None) -> Any:
        """Hook for task envs: the records to load (a task env maps its raw records here)."""
        return load_local_dataset(dataset, name=name, split=split)

    def _build(self, dataloader: Iterable, *, batch_size: Any, repeats: int | None, group_repeats: bool,
               primers: Composite | None, device: Any, system_prompt: str | None, **env_kwargs: Any) -> None:
        primer = DataLoadingPrimer(
            dataloader=dataloader, repeats=repeats, device=device, group_repeats=group_repeats,
            batch_size=batch_size, primers=primers,
        )
        base = ChatEnv(
            batch_size=primer.batch_size or batch_size,
            system_prompt=self.SYSTEM_PROMPT if system_prompt is None else system_prompt,
            device=device,
            **env_kwargs,
        )
        TransformedEnv.__init__(self, base, primer)

    @classmethod
    def from_dataloader(
        cls,
        dataloader: Iterable,
        *,
        repeats: int | None = None,
        device: torch.device | str | None = None,
        group_repeats: bool = False,
        batch_size: tuple | torch.Size | None = None,
        primers: Composite | None = None,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        template_kwargs: dict[str, Any] | None = None,
        input_mode: InputMode = "history",
        data_key: str | None = None,
        system_prompt: str | None = None,
    ) -> DatasetChatEnv:
        """A ``DatasetChatEnv`` around any iterable of dict batches (e.g. a ``torch`` ``DataLoader``)."""
        self = cls.__new__(cls)
        self._build(
            dataloader, repeats=repeats, device=device, group_repeats=group_repeats, batch_size=batch_size,
            primers=primers, tokenizer=tokenizer, template_kwargs=template_kwargs, input_mode=input_mode,
            data_key=data_key, system_prompt=system_prompt,
        )
        return self

    def reset_dataloader(self) -> DatasetChatEnv:
        """Restarts the data loader from its first batch (a fresh pass, reshuffled)."""
        primer = self.transform[0] if hasattr(self.transform, "__getitem__") else self.transform
        primer.reset_dataloader()
        return self

