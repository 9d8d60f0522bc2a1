r"""``MATHEnv``: competition mathematics as a chat task, from local problem/solution records.

A record is ``{"problem": ..., "solution": "... \boxed{42}"}`` (the MATH layout): ``"problem"`` becomes the
``"query"`` and ``"solution"`` the ``"answer"`` the :class:`~tdrl.envs.llm.MATHRewardParser` checks. tdrl never
downloads MATH: pass the records (or a dataset loaded beforehand) as ``dataset``; a hub name is loaded only
when the ``datasets`` package can reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch

from tdrl.envs.llm._data import default_collate_fn
from tdrl.envs.llm.chat import DatasetChatEnv
from tdrl.envs.llm.reward.math import MATHRewardParser
from tdrl.envs.transforms import StepCounter

if TYPE_CHECKING:
    import transformers

__all__ = ["MATHEnv", "math_collate_fn"]


def math_collate_fn(batch: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    r"""Stacks MATH records, renaming ``"problem"`` to ``"query"`` and ``"solution"`` to ``"answer"``.

    Examples:
        >>> math_collate_fn([{"problem": "1+1?", "solution": r"\boxed{2}"}])
        {'query': ['1+1?'], 'answer': ['\\boxed{2}']}
    """
    out = default_collate_fn(batch)
    for old, new in (("problem", "query"), ("solution", "answer")):
        if old in out:
            out[new] = out.pop(old)
    return out


class MATHEnv(DatasetChatEnv):
    r"""MATH as a ``DatasetChatEnv``: one turn, rewarded by ``MATHRewardParser`` (``\boxed{}`` answers).

    Args:
        dataset: the records (``[{"problem", "solution"}, ...]``), a local dataset, or a hub name (the default
            ``"DigitalLearningGmbH/MATH-lighteval"`` needs the ``datasets`` package and a network).
        shuffle / num_envs / repeats / batch_size_dl / seed / group_repeats: as in ``DatasetChatEnv``, as are
            ``tokenizer``, ``device``, ``template_kwargs`` and ``input_mode``.
        compute_reward: append the ``MATHRewardParser``.
        collate_fn: the data loader's collate function (default: ``math_collate_fn``).
        max_steps: turns per episode (a ``StepCounter``; 0 for none).
        apply_template, ray_backend, dataloader_actor_name: as in ``DatasetChatEnv``.

    Examples:
        >>> env = MATHEnv(dataset=[{"problem": "What is 1/2 + 1?", "solution": r"$\boxed{\frac{3}{2}}$"}])
        >>> env.reset()["history"].prompt[0, -1].content
        'What is 1/2 + 1?'
    """

    SYSTEM_PROMPT = (
        "A conversation between User and Assistant. The user asks a math problem, and the Assistant solves it.\n"
        "The assistant first thinks about the reasoning process in the mind and then provides the user with "
        "the answer.\nThe reasoning process and answer are enclosed within <think></think> and <answer></answer> "
        "tags, respectively, i.e.,\n<think>reasoning process here</think> <answer>answer here</answer>.\n"
        "The answer should be a mathematical expression (use LaTeX if needed)."
    )

    def __init__(
        self,
        *,
        dataset: Any = "DigitalLearningGmbH/MATH-lighteval",
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
        if ray_backend and dataloader_actor_name is None:
            dataloader_actor_name = "math_dataloader"
        super().__init__(
            dataset=dataset, shuffle=shuffle, num_envs=num_envs, repeats=repeats, batch_size_dl=batch_size_dl,
            seed=seed, group_repeats=group_repeats, tokenizer=tokenizer, device=device,
            template_kwargs=template_kwargs, apply_template=apply_template,
            collate_fn=math_collate_fn if collate_fn is None else collate_fn, input_mode=input_mode,
            ray_backend=ray_backend, dataloader_actor_name=dataloader_actor_name,
        )
        if max_steps:
            self.append_transform(StepCounter(max_steps=max_steps))
        if compute_reward:
            self.append_transform(MATHRewardParser(tokenizer=tokenizer))
