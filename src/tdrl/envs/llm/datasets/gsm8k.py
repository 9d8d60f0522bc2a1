"""``GSM8KEnv``: grade-school maths word problems as a chat task, from local question/answer records.

A record is ``{"question": ..., "answer": "... #### 42"}`` (GSM8K's layout); ``"question"`` becomes the
``"query"``. tdrl never downloads GSM8K: pass the records (or a dataset loaded beforehand) as ``dataset``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase

from tdrl.envs.llm._data import default_collate_fn, load_local_dataset, make_dataloader
from tdrl.envs.llm.chat import DatasetChatEnv
from tdrl.envs.llm.envs import LLMEnv
from tdrl.envs.llm.reward.gsm8k import GSM8KRewardParser
from tdrl.envs.transforms import StepCounter, Transform

if TYPE_CHECKING:
    import transformers

__all__ = ["GSM8KEnv", "GSM8KPrepareQuestion", "gsm8k_collate_fn", "make_gsm8k_env"]

BASE_PROMPT = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
    "assistant first thinks about the reasoning process in the mind and then provides the user with the answer. "
    "The reasoning process and answer are enclosed within <think></think> and <answer></answer> tags, "
    "respectively, i.e., <think>reasoning process here</think> <answer>answer here</answer>. User: %s. "
    "Assistant: <think>"
)


def gsm8k_collate_fn(batch: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """Stacks GSM8K records, renaming ``"question"`` to ``"query"``.

    Examples:
        >>> gsm8k_collate_fn([{"question": "1+1?", "answer": "#### 2"}])
        {'answer': ['#### 2'], 'query': ['1+1?']}
    """
    out = default_collate_fn(batch)
    if "question" in out:
        out["query"] = out.pop("question")
    return out


def _text_collate_fn(batch: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    # the question goes to LLMEnv's text observation, where GSM8KPrepareQuestion (in_keys=["text"]) reads it;
    # TorchRL 0.14.1 names it "query", which its GSM8KPrepareQuestion never reads (docs/differences.md)
    out = gsm8k_collate_fn(batch)
    out["text"] = out.pop("query")
    return out


class GSM8KPrepareQuestion(Transform):
    """Wraps each question in the R1-style reasoning prompt (``BASE_PROMPT``) before the env resets.

    Args:
        in_keys: the question entries (default ``["text"]``).
        out_keys: where the prompts go (default: ``in_keys``).

    Examples:
        >>> from tensordict import TensorDict
        >>> t = GSM8KPrepareQuestion(in_keys=["query"])
        >>> t._reset_env_preprocess(TensorDict(query=["1+1?"], batch_size=[1]))["query"][0].endswith("User: 1+1?. Assistant: <think>")
        True
    """

    def __init__(self, in_keys: list | None = None, out_keys: list | None = None) -> None:
        in_keys = ["text"] if in_keys is None else in_keys
        super().__init__(in_keys=in_keys, out_keys=list(in_keys) if out_keys is None else out_keys)

    def _modify(self, value: Any) -> NonTensorData | NonTensorStack:
        if isinstance(value, NonTensorData):
            value = value.data
        elif isinstance(value, NonTensorStack):
            value = value.tolist()
        if isinstance(value, list):
            return NonTensorStack(*[NonTensorData(BASE_PROMPT % q) for q in value])
        return NonTensorData(BASE_PROMPT % value)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        if tensordict is None:
            return None
        # a shallow copy: a primer serving repeats hands out its cached batch, which must stay unwrapped
        tensordict = tensordict.copy()
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is None:
                self._missing(in_key, tensordict)
                continue
            tensordict.set(out_key, self._modify(value))
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict  # the prompt is built once, before reset

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if out_key != in_key and in_key in observation_spec.keys(True, True):
                observation_spec[out_key] = observation_spec[in_key].clone()
        return observation_spec


class GSM8KEnv(DatasetChatEnv):
    """GSM8K as a ``DatasetChatEnv``: one turn, rewarded by ``GSM8KRewardParser``.

    Args:
        dataset: the records (``[{"question", "answer"}, ...]``), a local dataset, or a hub name (loaded
            only when ``datasets`` can reach it; the default ``"openai/gsm8k"`` needs that).
        shuffle, num_envs, repeats, batch_size_dl, seed: as in ``DatasetChatEnv``; so are
            ``group_repeats``, ``tokenizer``, ``device``, ``template_kwargs`` and ``input_mode``.
        compute_reward: append the ``GSM8KRewardParser``.
        collate_fn: the data loader's collate function (default: ``gsm8k_collate_fn``).
        max_steps: turns per episode (a ``StepCounter``; 0 for none).
        apply_template, ray_backend, dataloader_actor_name: as in ``DatasetChatEnv``.

    Examples:
        >>> env = GSM8KEnv(dataset=[{"question": "What is 2 + 3?", "answer": "2 + 3 = 5 #### 5"}])
        >>> env.reset()["history"].prompt[0, -1].content
        'What is 2 + 3?'
    """

    SYSTEM_PROMPT = (
        "A conversation between User and Assistant. The user asks a question, and the Assistant solves it.\n"
        "The assistant first thinks about the reasoning process in the mind and then provides the user with "
        "the answer.\nThe reasoning process and answer are enclosed within <think></think> and <answer></answer> "
        "tags, respectively,\ni.e., <think>reasoning process here</think> <answer>answer here</answer>. The "
        "answer should be a number."
    )

    def __init__(
        self,
        *,
        dataset: Any = "openai/gsm8k",
        shuffle: bool = True,
        num_envs: int = 1,
        repeats: int | None = None,
        batch_size_dl: int = 1,
        seed: int | None = None,
        group_repeats: bool = False,
        tokenizer: transformers.PreTrainedTokenizerBase | None = None,
        device: torch.device | str | None = None,
        template_kwargs: dict[str, Any] | None = None,
        apply_template: bool | None = False,
        compute_reward: bool = True,
        collate_fn: Callable | None = None,
        max_steps: int = 1,
        input_mode: Literal["history", "text", "tokens"] = "history",
        ray_backend: bool = False,
        dataloader_actor_name: str | None = None,
    ) -> None:
        super().__init__(
            dataset=dataset, shuffle=shuffle, name="main", num_envs=num_envs, repeats=repeats,
            batch_size_dl=batch_size_dl, seed=seed, group_repeats=group_repeats, tokenizer=tokenizer,
            device=device, template_kwargs=template_kwargs, apply_template=apply_template,
            collate_fn=gsm8k_collate_fn if collate_fn is None else collate_fn, input_mode=input_mode,
            ray_backend=ray_backend, dataloader_actor_name=dataloader_actor_name,
        )
        if max_steps:
            self.append_transform(StepCounter(max_steps=max_steps))
        if compute_reward:
            self.append_transform(GSM8KRewardParser(tokenizer=tokenizer))


def make_gsm8k_env(
    dataset: Any = "openai/gsm8k",
    num_envs: int = 1,
    repeats: int | None = None,
    batch_size_dl: int = 1,
    seed: int | None = None,
    group_repeats: bool = False,
    tokenizer: transformers.PreTrainedTokenizerBase | None = None,
) -> Any:
    """A one-step text ``LLMEnv`` over GSM8K (the older builder; prefer :class:`GSM8KEnv`).

    The data loader shuffles the train split (seeded); each reset wraps the question in the R1-style prompt
    (``GSM8KPrepareQuestion`` on ``"text"``), a ``StepCounter(max_steps=1)`` ends the episode after the
    answer, and with a ``tokenizer`` a ``GSM8KRewardParser`` scores ``"text_response"`` against ``"answer"``.

    Args:
        dataset: the records (``[{"question", "answer"}, ...]``), a local dataset, or a hub name already in
            the ``datasets`` cache (nothing is downloaded).
        num_envs: the env batch size.
        repeats: times each question is served (Monte-Carlo groups).
        batch_size_dl: questions per data-loader batch.
        seed: the data loader's shuffle seed (random when ``None``).
        group_repeats: serve the repeats of a question side by side in one batch.
        tokenizer: the tokenizer of the reward parser; without one no reward is assigned (a warning says so).

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     env = make_gsm8k_env([{"question": "What is 2 + 3?", "answer": "#### 5"}], seed=0)
        >>> env.reset()["text"][0].endswith("User: What is 2 + 3?. Assistant: <think>")
        True
    """
    warnings.warn("make_gsm8k_env is deprecated (as in TorchRL 0.14.1); use GSM8KEnv instead.",
                  DeprecationWarning, stacklevel=2)
    records = load_local_dataset(dataset, name="main", split="train")
    loader = make_dataloader(records, batch_size=batch_size_dl, shuffle=True, seed=seed,
                             collate_fn=_text_collate_fn)
    env = LLMEnv.from_dataloader(dataloader=loader, from_text=True, batch_size=(num_envs,), repeats=repeats,
                                 group_repeats=group_repeats)
    env.insert_transform(0, GSM8KPrepareQuestion())
    env.append_transform(StepCounter(max_steps=1))
    if tokenizer is not None:
        env.append_transform(GSM8KRewardParser(tokenizer=tokenizer, input_mode="text",
                                               in_keys=["text_response", "answer"]))
    else:
        warnings.warn("make_gsm8k_env: no tokenizer given, so no reward is assigned.", UserWarning, stacklevel=2)
    return env
