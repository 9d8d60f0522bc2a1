"""``GSM8KRewardParser``: rewards a reply whose ``<answer>`` matches the GSM8K reference (``#### 42``)."""

from __future__ import annotations

from tdrl.envs.llm.reward._base import AnswerRewardParser, extract_tags

__all__ = ["GSM8KRewardParser"]


class GSM8KRewardParser(AnswerRewardParser):
    """Scores GSM8K answers: the ``<answer>`` block against the number after ``####`` in the reference.

    Both numbers are normalised (commas, ``$`` and ``%`` dropped, a trailing ``.`` and trailing decimal
    zeros removed) before comparing. Rewards: ``correct_reward`` (1.0) when right, ``format_reward``
    (0.1) for a wrong answer, 0 without an ``<answer>`` block. See :class:`AnswerRewardParser` for the
    arguments and the written entries.

    Examples:
        >>> p = GSM8KRewardParser()
        >>> [p.score(r, "She sold 48 + 24 = 72 clips. #### 72")["reward"]
        ...  for r in ["<answer>72</answer>", "<answer>$72.00</answer>", "<answer>71</answer>", "72"]]
        [1.0, 1.0, 0.1, 0.0]
    """

    extract_tags = staticmethod(extract_tags)

    @staticmethod
    def normalize_answer(answer: str) -> str:
        """Strips spaces, ``,``, ``$``, ``%``, a final ``.`` and trailing decimal zeros.

        Examples:
            >>> GSM8KRewardParser.normalize_answer(" $1,000.50 ")
            '1000.5'
        """
        answer = answer.strip().replace(",", "").replace("$", "").replace("%", "").rstrip(".")
        if "." in answer:
            answer = answer.rstrip("0").rstrip(".")
        return answer

    def is_correct(self, answer: str, reference: str) -> bool:
        if "#### " not in reference:
            raise ValueError(f"GSM8KRewardParser: the reference answer must end with '#### <number>', got {reference!r:.80}")
        truth = reference.split("#### ")[-1]
        return self.normalize_answer(answer) == self.normalize_answer(truth)
