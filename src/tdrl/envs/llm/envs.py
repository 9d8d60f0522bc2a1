"""``LLMEnv``: TorchRL's older text/token environment (superseded by ``ChatEnv``, kept for its programs).

The observation is a string (``from_text=True``, under ``"text"``) or a token tensor (under
``"tokens"``, with an ``"attention_mask"``); the action is the policy's continuation
(``"text_response"`` / ``"tokens_response"``), appended to the observation at every step. With an
``eos_token_id`` a step is done once the token action contains it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import (
    LazyStackedTensorDict,
    NestedKey,
    NonTensorData,
    NonTensorStack,
    TensorDictBase,
    unravel_key,
)

from tdrl.data import Composite, NonTensor, Unbounded
from tdrl.envs.common import EnvBase
from tdrl.envs.llm.transforms.dataloading import DataLoadingPrimer
from tdrl.envs.llm.transforms.tokenizer import Tokenizer

if TYPE_CHECKING:
    import transformers

__all__ = ["LLMEnv"]


def _texts(value: Any) -> list[str]:
    if isinstance(value, NonTensorData):
        value = value.data
    elif isinstance(value, NonTensorStack):
        value = value.tolist()
    return [value] if isinstance(value, str) else list(value)


class LLMEnv(EnvBase):
    """A text (or token) environment: each step appends the action to the observation.

    Args:
        token_key, str_key, attention_key: the observation keys (``"tokens"``, ``"text"``,
            ``"attention_mask"``).
        action_key: the action (``"text_response"`` when ``from_text``, else ``"tokens_response"``).
        reward_key: the reward entry (written per token with ``assign_reward``).
        from_text: text observations and actions (else token ones).
        device: the env device.
        vocab_size: accepted for TorchRL compatibility (token specs are unbounded int64 here).
        assign_reward: write a zero reward per action token (token mode only).
        assign_done: write per-token done flags under ``"tokens_data"`` (token mode only).
        batch_size: ``()`` or 1-d.
        has_attention: keep an attention mask beside the tokens (token mode).
        as_llm_data: not supported (TorchRL raises too); must be False.
        eos_token_id: the token that ends an episode when it appears in the token action.

    Examples:
        >>> from tensordict import TensorDict
        >>> env = LLMEnv(batch_size=(1,), eos_token_id=0)
        >>> td = env.reset(TensorDict(text=["Hello"], batch_size=(1,)))
        >>> td["text_response"] = ["!"]
        >>> td["tokens_response"] = torch.tensor([[1]])
        >>> list(env.step(td)["next", "text"])
        ['Hello!']
    """

    _DEFAULT_TOKEN_KEY = "tokens"
    _DEFAULT_STR_KEY = "text"
    _DEFAULT_ATTENTION_KEY = "attention_mask"
    _DEFAULT_ACTION_TOKENS_KEY = "tokens_response"
    _DEFAULT_ACTION_STR_KEY = "text_response"

    def __init__(
        self,
        *,
        token_key: NestedKey | None = None,
        str_key: NestedKey | None = None,
        attention_key: NestedKey | None = None,
        action_key: NestedKey | None = None,
        reward_key: NestedKey = "reward",
        from_text: bool = True,
        device: torch.device | str | None = None,
        vocab_size: int | None = None,
        assign_reward: bool = False,
        assign_done: bool = False,
        batch_size: int | torch.Size | tuple | None = None,
        has_attention: bool = True,
        as_llm_data: bool = False,
        eos_token_id: int | None = None,
    ) -> None:
        warnings.warn("LLMEnv is deprecated (as in TorchRL 0.14.1). Please use ChatEnv instead.", DeprecationWarning, stacklevel=2)
        if as_llm_data:
            raise ValueError("LLMEnv(as_llm_data=True) is not supported (TorchRL 0.14.1 does not implement it either).")
        if from_text and (assign_reward or assign_done):
            raise ValueError("LLMEnv: assign_reward/assign_done need token actions (from_text=False) to shape the entries.")
        batch_size = () if batch_size is None else ((batch_size,) if isinstance(batch_size, int) else tuple(batch_size))
        if len(batch_size) > 1:
            raise TypeError(f"LLMEnv's batch size must be 0-d or 1-d, got {batch_size}.")
        super().__init__(device=device, batch_size=batch_size)
        self.from_text = from_text
        self.token_key = unravel_key(token_key or self._DEFAULT_TOKEN_KEY)
        self.str_key = unravel_key(str_key or self._DEFAULT_STR_KEY)
        self.attention_key = unravel_key(attention_key or self._DEFAULT_ATTENTION_KEY)
        default_action = self._DEFAULT_ACTION_STR_KEY if from_text else self._DEFAULT_ACTION_TOKENS_KEY
        # EnvBase.action_key reads the action spec built below (one action entry).
        self._act_key = unravel_key(action_key or default_action)
        self._rew_key = unravel_key(reward_key)
        self.vocab_size = vocab_size
        self.has_attention = has_attention
        self.assign_reward = assign_reward
        self.assign_done = assign_done
        self.eos_token_id = eos_token_id
        self.as_llm_data = as_llm_data
        if eos_token_id is None:
            warnings.warn("LLMEnv: eos_token_id is missing, so the env cannot detect the end of a generation.", stacklevel=2)
        self._make_specs()

    def _make_specs(self) -> None:
        bs, dev = self.batch_size, self.device
        tokens = Unbounded(shape=(*bs, -1), dtype=torch.int64, device=dev)
        if self.from_text:
            self.full_observation_spec = Composite({self.str_key: NonTensor(shape=bs, example_data="a string")}, shape=bs)
            self.full_action_spec = Composite({self._act_key: NonTensor(shape=bs, example_data="a string")}, shape=bs)
        else:
            obs = {self.token_key: tokens}
            if self.has_attention:
                obs[self.attention_key] = tokens.clone()
            self.full_observation_spec = Composite(obs, shape=bs)
            self.full_action_spec = Composite({self._act_key: tokens.clone()}, shape=bs)
        reward_shape = (*bs, -1, 1) if self.assign_reward else (*bs, 1)
        self.full_reward_spec = Composite({self._rew_key: Unbounded(shape=reward_shape, device=dev)}, shape=bs)
        done = {k: Unbounded(shape=(*bs, 1), dtype=torch.bool, device=dev) for k in ("done", "terminated")}
        if self.assign_done:
            done["tokens_data"] = Composite(
                {k: Unbounded(shape=(*bs, -1), dtype=torch.bool, device=dev) for k in ("done", "terminated")}, shape=bs
            )
        self.full_done_spec = Composite(done, shape=bs)

    @classmethod
    def from_dataloader(
        cls,
        dataloader: Iterable,
        *,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        token_key: NestedKey | None = None,
        str_key: NestedKey | None = None,
        attention_key: NestedKey | None = None,
        action_key: NestedKey | None = None,
        reward_key: NestedKey = "reward",
        from_text: bool = True,
        device: torch.device | str | None = None,
        vocab_size: int | None = None,
        batch_size: int | torch.Size | None = None,
        has_attention: bool = True,
        assign_reward: bool = False,
        assign_done: bool = False,
        primers: Composite | None = None,
        example_data: Any = None,
        stack_method: Callable[[Any], Any] | Literal["as_nested_tensor", "as_padded_tensor"] | None = None,
        repeats: int | None = None,
        group_repeats: bool = True,
        eos_token_id: int | None = None,
    ) -> Any:
        """An ``LLMEnv`` fed by ``dataloader`` through a ``DataLoadingPrimer`` (plus a ``Tokenizer``).

        With a ``tokenizer`` (``from_text=True`` only) every step tokenizes the text observation into
        ``token_key`` (and its attention mask) and decodes the policy's ``"tokens_response"`` into the text
        action: the env is text-to-text with tokens alongside.
        """
        str_key = str_key or cls._DEFAULT_STR_KEY
        token_key = token_key or cls._DEFAULT_TOKEN_KEY
        mask_key = (*unravel_key(token_key)[:-1], "attention_mask") if isinstance(unravel_key(token_key), tuple) else "attention_mask"
        if attention_key is not None and tokenizer is not None and unravel_key(attention_key) != mask_key:
            raise ValueError(
                f"With a Tokenizer the attention key must be {mask_key!r} (beside token_key={token_key!r}); "
                f"got attention_key={attention_key!r}."
            )
        if tokenizer is not None and not from_text:
            raise RuntimeError("LLMEnv.from_dataloader: a tokenizer can only be used with from_text=True.")
        primer = DataLoadingPrimer(
            dataloader=dataloader, primers=primers, stack_method=stack_method, repeats=repeats, device=device,
            group_repeats=group_repeats, batch_size=batch_size,
        )
        env = cls(
            from_text=from_text, device=device, token_key=token_key, str_key=str_key, attention_key=attention_key,
            action_key=action_key, reward_key=reward_key, vocab_size=vocab_size, assign_reward=assign_reward,
            assign_done=assign_done, batch_size=primer.batch_size, has_attention=has_attention, eos_token_id=eos_token_id,
        )
        if tokenizer is not None:
            env = env.append_transform(Tokenizer(
                tokenizer=tokenizer, in_keys=[str_key], out_keys=[token_key], in_keys_inv=[env.action_key],
                out_keys_inv=[cls._DEFAULT_ACTION_TOKENS_KEY], call_before_reset=False, missing_tolerance=False,
            ))
        return env.append_transform(primer)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        key = self.str_key if self.from_text else self.token_key
        if tensordict is None or key not in tensordict.keys(True):
            raise KeyError(
                f"LLMEnv.reset needs the observation {key!r} in its input: append a DataLoadingPrimer "
                "(or use LLMEnv.from_dataloader)."
            )
        if tensordict.batch_dims and not isinstance(tensordict, LazyStackedTensorDict):
            tensordict = LazyStackedTensorDict(*tensordict.unbind(0))
        out = tensordict.copy()
        if self.assign_done:
            self._token_done(out, torch.zeros((*self.batch_size, 1), dtype=torch.bool, device=self.device))
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = tensordict.empty()
        if self.from_text:
            obs, act = _texts(tensordict.get(self.str_key)), _texts(tensordict.get(self.action_key))
            if len(obs) != len(act):
                raise ValueError(f"LLMEnv: {len(obs)} observations but {len(act)} text actions.")
            joined = [o + a for o, a in zip(obs, act)]
            out.set(self.str_key, NonTensorData(joined[0]) if not self.batch_size else NonTensorStack(*map(NonTensorData, joined)))
        else:
            self._append_tokens(tensordict, out)
        if self.assign_reward:
            action = tensordict.get(self.action_key)
            out.set(self._rew_key, torch.zeros((*action.shape, 1), device=action.device))
        else:
            out.set(self._rew_key, torch.zeros((*self.batch_size, 1), device=self.device))
        self._done(tensordict, out)
        return out

    def _append_tokens(self, tensordict: TensorDictBase, out: TensorDictBase) -> None:
        obs, action = tensordict.get(self.token_key), tensordict.get(self.action_key)
        if getattr(obs, "is_nested", False):
            joined = [torch.cat([o, a], -1) for o, a in zip(obs.unbind(0), action.unbind(0))]
            out.set(self.token_key, torch.nested.as_nested_tensor(joined, layout=obs.layout))
            return
        out.set(self.token_key, torch.cat([obs, action], -1))
        if self.has_attention:
            mask = tensordict.get(self.attention_key)
            out.set(self.attention_key, torch.cat([mask, mask.new_ones(action.shape)], -1))

    def _done(self, tensordict: TensorDictBase, out: TensorDictBase) -> None:
        if self.eos_token_id is None:
            if self.assign_done:
                action = tensordict.get(self.action_key)
                self._token_done(out, torch.zeros_like(action, dtype=torch.bool))
            return
        key = self._DEFAULT_ACTION_TOKENS_KEY if self.from_text else self.action_key
        if key not in tensordict.keys(True):
            raise KeyError(
                f"LLMEnv(eos_token_id=...) needs the token action {key!r} to detect the end of a generation."
            )
        # Padded actions carry -1 where there is no token, so a pad id equal to the EOS id is never a stop.
        action = tensordict.get(key, as_padded_tensor=True, padding_value=-1)
        per_token = action == self.eos_token_id
        done = per_token.any(-1, keepdim=True)
        out.set("done", done)
        out.set("terminated", done.clone())
        if self.assign_done:
            self._token_done(out, per_token)

    def _token_done(self, out: TensorDictBase, per_token: torch.Tensor) -> None:
        out.set(("tokens_data", "done"), per_token)
        out.set(("tokens_data", "terminated"), per_token.clone())
        out.set("done", per_token.any(-1, keepdim=True))
        out.set("terminated", per_token.any(-1, keepdim=True))

    def _set_seed(self, seed: int | None) -> None:
        return None
