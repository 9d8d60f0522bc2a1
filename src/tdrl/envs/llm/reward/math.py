r"""``MATHRewardParser``: rewards a reply whose ``<answer>`` matches the ``\boxed{...}`` answer of a MATH solution."""

from __future__ import annotations

import importlib.util
from typing import Any

from tdrl.envs.llm.reward._base import AnswerRewardParser, extract_tags

__all__ = ["MATHRewardParser", "extract_boxed", "normalize_math"]

_HAS_MATH_VERIFY = importlib.util.find_spec("math_verify") is not None
# spacing commands and delimiters that do not change the value of a LaTeX answer
_DROPPED = (" ", ",", "$", "\\left", "\\right", "\\!", "\\,", "\\;", "\\:")


def extract_boxed(text: str) -> str:
    r"""The content of the last ``\boxed{...}`` of ``text`` (nested braces kept), or ``text`` stripped.

    Examples:
        >>> extract_boxed(r"so $x = \boxed{\frac{1}{2}}$.")
        '\\frac{1}{2}'
        >>> extract_boxed(" 42 ")
        '42'
    """
    start = text.rfind("\\boxed{")
    if start == -1:
        return text.strip()
    i = start + len("\\boxed{")
    depth, j = 1, i
    while j < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        j += 1
    return text[i : j - 1 if depth == 0 else j].strip()


def normalize_math(answer: str) -> str:
    r"""Drops spacing, ``$``, ``,`` and ``\left`` / ``\right``; ``\dfrac`` / ``\tfrac`` become ``\frac``.

    Examples:
        >>> normalize_math(r"\left( \dfrac{1}{2}, 3 \right)")
        '(\\frac{1}{2}3)'
    """
    out = answer.strip()
    for token in _DROPPED:
        out = out.replace(token, "")
    return out.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").rstrip(".")


class MATHRewardParser(AnswerRewardParser):
    r"""Scores MATH answers: the ``<answer>`` block against the last ``\boxed{}`` of the reference solution.

    The answer block may hold the bare expression or a ``\boxed{}`` one (both are compared by their content;
    TorchRL 0.14.1 compares a boxed answer block with the unboxed reference, so it fails). With the
    ``math-verify`` package installed, answers are compared by symbolic equivalence, else by
    :func:`normalize_math`. Rewards: ``correct_reward`` (1.0) when right, ``format_reward`` (0.1) for a wrong
    answer, 0 without an ``<answer>`` block. See :class:`AnswerRewardParser` for the arguments and entries.

    Examples:
        >>> p = MATHRewardParser()
        >>> ref = r"The sum is $1 + \frac{1}{2} = \boxed{\frac{3}{2}}$."
        >>> [p.score(r, ref)["reward"] for r in [r"<answer>\dfrac{3}{2}</answer>",
        ...  r"<answer>\boxed{\frac{3}{2}}</answer>", "<answer>2</answer>", r"\frac{3}{2}"]]
        [1.0, 1.0, 0.1, 0.0]
    """

    extract_tags = staticmethod(extract_tags)
    extract_boxed = staticmethod(extract_boxed)

    @staticmethod
    def answers_match(predicted: str, reference: str) -> bool:
        """Whether two answer expressions are equal (symbolically with ``math-verify``, else normalised)."""
        if _HAS_MATH_VERIFY:
            math_verify = importlib.import_module("math_verify")
            try:
                return bool(math_verify.verify(math_verify.parse(predicted), math_verify.parse(reference)))
            except Exception:  # noqa: BLE001 - unparsable LaTeX: fall back to the string comparison
                pass
        return normalize_math(predicted) == normalize_math(reference)

    def is_correct(self, answer: str, reference: Any) -> bool:  # noqa: ANN401
        if not isinstance(reference, str) or not reference.strip():
            raise ValueError(f"MATHRewardParser: the reference solution must be a non-empty string, got {reference!r:.80}")
        return self.answers_match(extract_boxed(answer), extract_boxed(reference))
