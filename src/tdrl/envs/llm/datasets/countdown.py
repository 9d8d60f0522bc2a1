"""``CountdownEnv``: reach a target number with arithmetic on given numbers (problems generated locally)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch.utils.data import DataLoader, IterableDataset

from tdrl.envs.llm._data import default_collate_fn
from tdrl.envs.llm.chat import DatasetChatEnv
from tdrl.envs.llm.reward.countdown import CountdownRewardParser
from tdrl.envs.transforms import StepCounter

if TYPE_CHECKING:
    import transformers

__all__ = ["CountdownEnv", "CountdownProblemGenerator"]


class CountdownProblemGenerator(IterableDataset):
    """An endless stream of Countdown problems ``{"query", "answer"}`` from a seeded RNG.

    The target combines the numbers (in a random order) with random ``+``, ``-``, ``*``; its absolute
    value is used, and the plain sum when that is 0 or above ``max_target``, so a solution always exists.
    The same seed gives TorchRL 0.14.1's problems.

    Examples:
        >>> problem = next(iter(CountdownProblemGenerator(num_count=2, max_number=9, seed=0)))
        >>> problem["answer"]
        'target=14, numbers=7,7'
    """

    def __init__(self, num_count: int = 4, max_number: int = 100, max_target: int = 1000, seed: int | None = None) -> None:
        if num_count < 1 or max_number < 1:
            raise ValueError(f"CountdownProblemGenerator needs num_count >= 1 and max_number >= 1, got {num_count}, {max_number}")
        self.num_count = num_count
        self.max_number = max_number
        self.max_target = max_target
        self.rng = random.Random(seed)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        numbers = [self.rng.randint(1, self.max_number) for _ in range(self.num_count)]
        target = self._make_target(numbers)
        query = (
            f"Using the numbers {numbers}, create an arithmetic expression that equals {target}. "
            "You may use each number at most once. Only use +, -, *, / and parentheses."
        )
        return {"query": query, "answer": f"target={target}, numbers={','.join(map(str, numbers))}"}

    def _make_target(self, numbers: list[int]) -> int:
        ops = (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b)
        order = list(numbers)
        self.rng.shuffle(order)
        result = order[0]
        for n in order[1:]:
            result = self.rng.choice(ops)(result, n)
        result = abs(result)
        return sum(numbers) if result == 0 or result > self.max_target else result


class CountdownEnv(DatasetChatEnv):
    """The Countdown task as a ``DatasetChatEnv``: one turn, rewarded by ``CountdownRewardParser``.

    Args:
        num_count, max_number, max_target, seed: the problem generator's settings.
        num_envs, repeats, batch_size_dl, group_repeats, tokenizer, device, template_kwargs, input_mode:
            as in ``DatasetChatEnv``.
        shuffle, apply_template: accepted for TorchRL compatibility (the stream is already random).
        compute_reward: append the ``CountdownRewardParser``.
        collate_fn: the data loader's collate function.
        max_steps: turns per episode (a ``StepCounter``; 0 for none).

    Examples:
        >>> env = CountdownEnv(num_count=2, max_number=9, seed=0)
        >>> list(env.reset()["answer"])
        ['target=14, numbers=7,7']
    """

    SYSTEM_PROMPT = (
        "A conversation between User and Assistant. The user gives a set of numbers and a target. The Assistant "
        "must find an arithmetic expression using each given number at most once that equals the target.\n"
        "The reasoning process and answer are enclosed within <think></think> and <answer></answer> tags, "
        "respectively.\nThe answer should contain ONLY the arithmetic expression (e.g. (25 + 3) * 4)."
    )

    def __init__(
        self,
        *,
        num_count: int = 4,
        max_number: int = 100,
        max_target: int = 1000,
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
    ) -> None:
        generator = CountdownProblemGenerator(num_count=num_count, max_number=max_number, max_target=max_target, seed=seed)
        loader = DataLoader(generator, batch_size=batch_size_dl, collate_fn=collate_fn or default_collate_fn)
        self._build(
            loader, repeats=repeats, device=device, group_repeats=group_repeats, batch_size=(num_envs,),
            primers=None, tokenizer=tokenizer, template_kwargs=template_kwargs, input_mode=input_mode,
            data_key=None, system_prompt=None,
        )
        if max_steps:
            self.append_transform(StepCounter(max_steps=max_steps))
        if compute_reward:
            self.append_transform(CountdownRewardParser(tokenizer=tokenizer))
