"""The shared part of the answer-checking reward transforms (GSM8K, Countdown).

A parser reads the policy's last reply (the last message of ``("history", "full")``, or the text /
decoded tokens in the other input modes) and the reference ``"answer"``, finds the ``<think>...</think>``
and ``<answer>...</answer>`` blocks and writes, per env, ``reward_answer`` (an answer block exists),
``reward_think`` (a think block exists), ``reward_right`` (``correct_reward`` when right,
``format_reward`` when an answer was given but wrong, else 0), ``reward`` (= ``reward_right``) and
``success``, each of shape ``[*batch, 1, 1]`` as TorchRL 0.14.1 does. With ``set_done_if_answer`` an
answered env is done.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import torch
from tensordict import NestedKey, NonTensorData, NonTensorStack, TensorDictBase

from tdrl.data import Composite, Unbounded
from tdrl.envs.transforms import Transform

__all__ = ["AnswerRewardParser", "extract_tags"]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
REWARD_KEYS = ["reward_answer", "reward_think", "reward_right", "reward", "success"]


def extract_tags(text: str) -> tuple[str, str]:
    """The stripped contents of the first ``<think>`` and ``<answer>`` blocks ('' when absent).

    Examples:
        >>> extract_tags("<think>2 + 3</think> <answer> 5 </answer>")
        ('2 + 3', '5')
    """
    think, answer = _THINK.search(text), _ANSWER.search(text)
    return (think.group(1).strip() if think else "", answer.group(1).strip() if answer else "")


def _as_list(value: Any) -> list:
    if isinstance(value, NonTensorData):
        value = value.data
    elif isinstance(value, NonTensorStack):
        value = value.tolist()
    return list(value) if isinstance(value, (list, tuple)) else [value]


class AnswerRewardParser(Transform):
    """Base of the answer-checking reward transforms; subclasses implement ``is_correct``.

    Args:
        tokenizer: decodes token responses (``input_mode="tokens"``) and supplies the EOS string.
        in_keys: ``[response_key, answer_key]`` (default: ``(<mode>, "full")`` and ``"answer"``).
        out_keys: the five reward entries (default ``reward_answer``, ``reward_think``, ``reward_right``,
            ``reward``, ``success``).
        eos_token: stripped from the end of a response (default: the tokenizer's).
        set_done_if_answer: mark an env done once it answered.
        input_mode: the env's input mode (default: read from the parent env).
        format_reward: the reward of a wrong but well-formed answer.
        correct_reward: the reward of a right answer.
    """

    def __init__(
        self,
        tokenizer: Any = None,
        in_keys: list[NestedKey] | None = None,
        out_keys: list[NestedKey] | None = None,
        eos_token: str | None = None,
        set_done_if_answer: bool = True,
        input_mode: Literal["history", "text", "tokens"] | None = None,
        format_reward: float = 0.1,
        correct_reward: float = 1.0,
    ) -> None:
        super().__init__(in_keys=in_keys, out_keys=REWARD_KEYS if out_keys is None else out_keys)
        if len(self.out_keys) != 5:
            raise ValueError(f"{type(self).__name__}: out_keys must name 5 entries ({REWARD_KEYS}), got {self.out_keys}")
        self.tokenizer = tokenizer
        self.eos_token = eos_token if eos_token is not None else getattr(tokenizer, "eos_token", None)
        self.set_done_if_answer = set_done_if_answer
        self._input_mode = input_mode
        self.format_reward = format_reward
        self.correct_reward = correct_reward

    @property
    def input_mode(self) -> str:
        if self._input_mode is None:
            base = getattr(self.parent, "base_env", None) if self.parent is not None else None
            return getattr(base, "input_mode", "history")
        return self._input_mode

    def _keys(self) -> list[NestedKey]:
        return self.in_keys if self.in_keys else [(self.input_mode, "full"), "answer"]

    def is_correct(self, answer: str, reference: str) -> bool:
        """Whether the extracted ``answer`` is right for the dataset's ``reference`` answer."""
        raise TypeError(f"{type(self).__name__} must define is_correct(answer, reference)")

    def _responses(self, tensordict: TensorDictBase, key: NestedKey) -> list[str]:
        mode = self.input_mode
        if mode == "history":
            history = tensordict.get(key)
            texts = [str(row[-1].content) for row in history.unbind(0)]
        elif mode == "text":
            texts = [str(t) for t in _as_list(tensordict.get(key))]
            prompts = tensordict.get((*key[:-1], "prompt"), None) if isinstance(key, tuple) else None
            if prompts is not None:
                # Score the reply only: the prompt (a system prompt may quote "<answer></answer>") is cut off.
                texts = [t[len(p):] if t.startswith(p) else t for t, p in zip(texts, map(str, _as_list(prompts)))]
        elif mode == "tokens":
            if self.tokenizer is None:
                raise ValueError(f"{type(self).__name__}(input_mode='tokens') needs a `tokenizer` to decode responses.")
            seqs = [torch.as_tensor(s).reshape(-1) for s in tensordict.get(key, as_list=True)]
            prompt_key = (*key[:-1], "prompt") if isinstance(key, tuple) else None
            if prompt_key is not None and tensordict.get(prompt_key, None) is not None:
                prompts = tensordict.get(prompt_key, as_list=True)
                seqs = [s[len(p):] if torch.equal(s[: len(p)], p.reshape(-1)) else s for s, p in zip(seqs, prompts)]
            texts = [self.tokenizer.decode(s.tolist()) for s in seqs]
        else:
            raise ValueError(f"{type(self).__name__}: unknown input_mode {mode!r}")
        if self.eos_token:
            texts = [t.removesuffix(self.eos_token) for t in texts]
        return [t.removesuffix("<|im_end|>") for t in texts]

    def score(self, response: str, reference: str) -> dict[str, float | bool]:
        """The reward entries of one response.

        Examples:
            >>> from tdrl.envs.llm import GSM8KRewardParser
            >>> GSM8KRewardParser().score("<think>2+2</think><answer>4</answer>", "2 + 2 = 4 #### 4")["reward"]
            1.0
        """
        cot, answer = extract_tags(response)
        correct = bool(answer) and self.is_correct(answer, reference)
        right = self.correct_reward if correct else (self.format_reward if answer else 0.0)
        return {"reward_answer": float(bool(answer)), "reward_think": float(bool(cot)),
                "reward_right": right, "reward": right, "success": correct}

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if next_tensordict.batch_dims > 1:
            flat_next = next_tensordict.reshape(-1)
            self._step(tensordict.reshape(-1), flat_next)
            return next_tensordict.update(flat_next.reshape(next_tensordict.batch_size))
        response_key, answer_key = self._keys()
        responses = self._responses(tensordict, response_key)
        references = [str(a) for a in _as_list(next_tensordict.get(answer_key))]
        if len(references) != len(responses):
            raise ValueError(
                f"{type(self).__name__}: {len(responses)} responses at {response_key!r} but {len(references)} "
                f"reference answers at {answer_key!r}."
            )
        scores = [self.score(r, a) for r, a in zip(responses, references)]
        for name, out_key in zip(REWARD_KEYS, self.out_keys):
            dtype = torch.bool if name == "success" else torch.float32
            value = torch.tensor([s[name] for s in scores], dtype=dtype, device=next_tensordict.device)
            value = value.reshape(*next_tensordict.batch_size, 1, 1)
            previous = next_tensordict.get(out_key, None)
            if previous is not None and name != "success" and previous.shape == value.shape:
                value = value + previous  # rewards from earlier transforms add up (TorchRL does the same)
            next_tensordict.set(out_key, value)
        if self.set_done_if_answer:
            answered = next_tensordict.get(self.out_keys[0]) > 0
            for done_key in ("done", "terminated"):
                done = next_tensordict.get(done_key, None)
                if done is not None:
                    next_tensordict.set(done_key, done | answered.reshape(done.shape))
        return next_tensordict

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        shape = (*reward_spec.shape, 1, 1)
        for name, out_key in zip(REWARD_KEYS, self.out_keys):
            dtype = torch.bool if name == "success" else torch.float32
            reward_spec[out_key] = Unbounded(shape=shape, dtype=dtype, device=reward_spec.device)
        return reward_spec

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """On stored data: scores the responses of ``tensordict`` against its answers, in place."""
        return self._step(tensordict, tensordict)
