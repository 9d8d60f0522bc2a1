"""``LLMHashingEnv``: token-by-token text generation where every token chain is named by a chained hash, so
chains can be stored or de-duplicated by their hash alone (e.g. as tree nodes)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data import Categorical, Composite, NonTensor, Unbounded
from tdrl.envs.common import EnvBase

__all__ = ["LLMHashingEnv", "row_hash"]


def row_hash(x: torch.Tensor) -> torch.Tensor:
    """A reproducible int64 hash of each row of a ``[B, N]`` tensor (BLAKE2b of the row's bytes).

    TorchRL's default (``SipHash``) goes through Python's ``hash``, which changes between processes unless
    ``PYTHONHASHSEED`` is set; this one does not.

    Examples:
        >>> a = torch.tensor([[1, 2], [1, 2], [2, 1]])
        >>> h = row_hash(a)
        >>> bool(h[0] == h[1]), bool(h[0] == h[2])
        (True, False)
    """
    if x.ndim != 2:
        raise ValueError(f"row_hash expects a [batch, features] tensor, got shape {tuple(x.shape)}")
    rows = x.detach().cpu().contiguous().numpy()
    digests = [int.from_bytes(hashlib.blake2b(r.tobytes(), digest_size=8).digest(), "little", signed=True)
               for r in rows]
    return torch.tensor(digests, dtype=torch.int64, device=x.device)


class LLMHashingEnv(EnvBase):
    """A text-generation env whose state is a token chain and its hash.

    ``reset`` takes the prompt tokens under ``observation_key`` and writes their ``"hashing"`` ``[*B, 1]`` (and
    the decoded ``text_key``); each ``step`` appends the ``"action"`` token ``[*B, 1]`` and writes
    ``hash(previous hash, action)``, so equal chains get equal hashes. The reward is zero and the chain never
    ends: a transform (a reward model, a ``StepCounter``) decides.

    Args:
        vocab_size: the number of tokens (default: ``tokenizer.vocab_size``).
        hashing_module: maps a ``[B, N]`` int64 tensor to ``[B]`` hashes (default :func:`row_hash`).
        observation_key: the token entry.
        text_output: decode the tokens into ``text_key`` (needs ``tokenizer``).
        tokenizer: with ``decode`` / ``batch_decode`` (and ``__call__`` for :meth:`make_tensordict`).
        text_key: the decoded-text entry.

    Examples:
        >>> env = LLMHashingEnv(vocab_size=10, text_output=False)
        >>> td = env.reset(TensorDict(observation=torch.tensor([[1, 2]]), batch_size=[1]))
        >>> td["action"] = torch.tensor([[3]])
        >>> nxt = env.step(td)["next"]
        >>> nxt["observation"].tolist(), nxt["hashing"].shape
        ([[1, 2, 3]], torch.Size([1, 1]))
    """

    batch_locked = False

    def __init__(self, vocab_size: int | None = None, *, hashing_module: Callable[[torch.Tensor], torch.Tensor]
                 | None = None, observation_key: NestedKey = "observation", text_output: bool = True,
                 tokenizer: Any = None, text_key: NestedKey | None = "text") -> None:
        if vocab_size is None:
            if tokenizer is None:
                raise TypeError("LLMHashingEnv needs vocab_size=... when no tokenizer is given.")
            vocab_size = tokenizer.vocab_size
        if text_output and tokenizer is None:
            raise TypeError("LLMHashingEnv(text_output=True) decodes the tokens: pass tokenizer=... or "
                            "text_output=False.")
        super().__init__()
        self._hashing_module = row_hash if hashing_module is None else hashing_module
        self._tokenizer = tokenizer
        self.observation_key = observation_key
        self.text_output = text_output
        spec: dict[NestedKey, Any] = {
            observation_key: Unbounded(shape=(-1,), dtype=torch.int64),
            "hashing": Unbounded(shape=(1,), dtype=torch.int64),
        }
        self.text_key = (text_key if text_key is not None else "text") if text_output else None
        if self.text_key is not None:
            spec[self.text_key] = NonTensor(shape=(), example_data="a string")
        self.observation_spec = Composite(spec)
        self.action_spec = Composite(action=Categorical(vocab_size, shape=(1,), dtype=torch.int64))
        # every tdrl env has a reward entry (TorchRL's LLMHashingEnv has none): a zero one here
        self.reward_spec = Unbounded(shape=(1,))

    def make_tensordict(self, input: str | list[str]) -> TensorDictBase:
        """Tokenizes ``input`` (one string, or a list for a batch) and resets the env on it.

        Examples:
            >>> LLMHashingEnv.make_tensordict.__name__
            'make_tensordict'
        """
        tokens = self._tokenizer(input, return_tensors="pt")["input_ids"] if isinstance(input, list) else \
            torch.as_tensor(self._tokenizer(input)["input_ids"])
        batch = [len(input)] if isinstance(input, list) else []
        return self.reset(TensorDict({self.observation_key: tokens}, batch_size=batch, device=self.device))

    def _hash(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim > 1:
            return self._hashing_module(x).unsqueeze(-1)
        return self._hashing_module(x.unsqueeze(0)).transpose(0, -1)

    def _text(self, tokens: torch.Tensor) -> NonTensorData | NonTensorStack:
        if tokens.ndim > 1:
            return NonTensorStack.from_list(self._tokenizer.batch_decode(tokens))
        return NonTensorData(self._tokenizer.decode(tokens))

    def _flags(self, batch_size: torch.Size) -> dict[str, torch.Tensor]:
        zeros = torch.zeros((*batch_size, 1), dtype=torch.bool, device=self.device)
        return {"done": zeros, "terminated": zeros.clone()}

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        obs = None if tensordict is None else tensordict.get(self.observation_key, None)
        if obs is None:
            raise RuntimeError(f"Resetting LLMHashingEnv needs the prompt tokens under {self.observation_key!r} in "
                               "the input tensordict.")
        out = tensordict.empty()
        out.set(self.observation_key, obs)
        out.set("hashing", self._hash(obs))
        if self.text_key is not None:
            out.set(self.text_key, self._text(obs))
        return out.update(self._flags(tensordict.batch_size))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        obs = torch.cat([tensordict.get(self.observation_key), action], -1)
        out = tensordict.empty()
        out.set(self.observation_key, obs)
        out.set("hashing", self._hash(torch.cat([tensordict.get("hashing"), action], -1)))
        if self.text_key is not None:
            out.set(self.text_key, self._text(obs))
        out.set("reward", torch.zeros((*tensordict.batch_size, 1), device=self.device))
        return out.update(self._flags(tensordict.batch_size))

    def _set_seed(self, seed: int | None) -> None:
        """Nothing to seed: the env is deterministic."""
