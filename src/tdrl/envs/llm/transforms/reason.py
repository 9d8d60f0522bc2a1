"""``AddThinkingPrompt``: asks the policy to think again when a condition holds (e.g. a wrong answer)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Literal

from tensordict import TensorDictBase, lazy_stack

from tdrl._utils import logger
from tdrl.data.llm import History
from tdrl.envs.transforms import Transform

__all__ = ["AddThinkingPrompt"]

_ANSWER = re.compile(r"<answer>.*?</answer>(?:\s*<\|im_end\|>)?", re.DOTALL)
_END = "<|im_end|>"


class AddThinkingPrompt(Transform):
    """On a step where ``cond(next_tensordict)`` holds, appends a "think again" prompt to the conversation.

    With ``edit_last_turn`` (the default) the assistant's last ``<answer>...</answer>`` is replaced by the
    prompt, so the model continues its own turn; otherwise a new ``role`` message carrying the prompt is
    appended. The env is then un-done (``undo_done``) and, when editing, its reward zeroed
    (``zero_reward``) so that only the revised answer is scored. Needs a ``ChatEnv`` in history mode.

    Args:
        cond: called on each env's ``next`` data (batch ``[]``); True adds the prompt.
        prompt: the text (default: the first of ``DEFAULT_PROMPTS_EG``, or ``_COG`` when not egocentric).
        random_prompt: draw the prompt from the defaults each time.
        role: the role of an appended prompt message (``"assistant"`` or ``"user"``).
        edit_last_turn: edit the last assistant turn instead of appending (``role="assistant"`` only).
        zero_reward: zero the rewards when the prompt is added (default: ``edit_last_turn``).
        undo_done: clear the done flags when the prompt is added.
        egocentric: first-person prompts (default: ``role == "assistant"``).
    """

    DEFAULT_PROMPTS_EG = [
        "But wait, let me think about this more carefully...",
        "Actually, let me reconsider this...",
        "But we can do better. Let me think about it step by step...",
        "Wait, I need to double-check my reasoning...",
        "Actually, let me think about it more carefully...",
        "It looks like I made a mistake. Let me think about it step by step...",
    ]
    DEFAULT_PROMPTS_COG = [
        "But wait, think about this more carefully...",
        "Actually, reconsider this...",
        "But we can do better. Let's think about it step by step...",
        "Wait, you need to double-check your reasoning...",
        "Actually, think about it more carefully...",
        "It looks like you made a mistake. Can you see what went wrong? Let's think about it step by step...",
    ]

    def __init__(
        self,
        cond: Callable[[TensorDictBase], bool],
        prompt: str | None = None,
        random_prompt: bool = False,
        role: Literal["user", "assistant"] = "assistant",
        edit_last_turn: bool = True,
        zero_reward: bool | None = None,
        undo_done: bool = True,
        egocentric: bool | None = None,
    ) -> None:
        super().__init__()
        if edit_last_turn and role != "assistant":
            raise ValueError("AddThinkingPrompt: edit_last_turn=True needs role='assistant'.")
        self.cond = cond
        self.role = role
        self.egocentric = role == "assistant" if egocentric is None else egocentric
        defaults = self.DEFAULT_PROMPTS_EG if self.egocentric else self.DEFAULT_PROMPTS_COG
        self._prompt = defaults[0] if prompt is None else prompt
        self.random_prompt = random_prompt
        self.edit_last_turn = edit_last_turn
        self.zero_reward = edit_last_turn if zero_reward is None else zero_reward
        self.undo_done = undo_done

    @property
    def prompt(self) -> str:
        if self.random_prompt:
            return random.choice(self.DEFAULT_PROMPTS_EG if self.egocentric else self.DEFAULT_PROMPTS_COG)
        return self._prompt

    def replace_answer_with_prompt(self, content: str) -> str:
        """The turn with its last ``<answer>`` block replaced by the prompt (appended when there is none).

        Examples:
            >>> t = AddThinkingPrompt(cond=lambda td: True, prompt="Hmm.")
            >>> t.replace_answer_with_prompt("<think>a</think> <answer>4</answer><|im_end|>")
            '<think>a</think> Hmm.<|im_end|>'
        """
        prompt = self.prompt
        matches = list(_ANSWER.finditer(content))
        if not matches:
            return content.rstrip() + "\n\n" + prompt
        start, end = matches[-1].span()
        edited = (content[:start] + prompt + content[end:]).rstrip()
        if edited.endswith(prompt):
            return edited + (_END if content.endswith(_END) else "")
        # Text after the answer: keep the turn and put the prompt at its end.
        body = content.rstrip().removesuffix(_END).rstrip()
        return body + "\n\n" + prompt + _END

    def _edit(self, next_td: TensorDictBase) -> None:
        history = next_td["history"].prompt
        if self.edit_last_turn:
            last = history[-1]
            new_turn = History(role="assistant", content=self.replace_answer_with_prompt(str(last.content)))
            history = history[:-1].append(new_turn, inplace=False)
        else:
            history = history.append(History(role=self.role, content=self.prompt), inplace=False)
        next_td["history"].prompt = history
        parent = self.parent
        if self.undo_done:
            for key in parent.done_keys:
                if next_td.get(key, None) is not None:
                    next_td.set(key, next_td.get(key).zero_())
        if self.zero_reward:
            for key in parent.reward_keys:
                if next_td.get(key, None) is not None:
                    next_td.set(key, next_td.get(key).zero_())

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        base = getattr(self.parent, "base_env", None) if self.parent is not None else None
        if getattr(base, "input_mode", None) != "history":
            raise RuntimeError("AddThinkingPrompt needs a ChatEnv in history mode (input_mode='history').")
        rows = []
        for next_td in next_tensordict.unbind(0):
            if self.cond(next_td):
                logger.debug("AddThinkingPrompt: adding the thinking prompt")
                self._edit(next_td)
            rows.append(next_td)
        return next_tensordict.update(lazy_stack(rows))

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset
