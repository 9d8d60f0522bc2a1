"""``CountdownRewardParser``: rewards an arithmetic ``<answer>`` that reaches the target with the numbers."""

from __future__ import annotations

import ast
import operator
import re

from tdrl.envs.llm.reward._base import AnswerRewardParser, extract_tags

__all__ = ["CountdownRewardParser"]

_ALLOWED = re.compile(r"[\d\s+\-*/().]+")
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(node: ast.AST) -> float:
    # The model's text is never passed to eval(): only numbers and + - * / nodes are interpreted.
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"unsupported expression node {type(node).__name__}")


class CountdownRewardParser(AnswerRewardParser):
    """Scores Countdown answers: an expression of ``+ - * /`` and parentheses over the given numbers.

    The reference answer reads ``"target=T, numbers=a,b,c"``. An answer is right when it only uses those
    characters, each given number at most once, and evaluates to ``T`` (within 1e-9). Rewards as in
    :class:`GSM8KRewardParser`: 1.0 right, 0.1 answered but wrong, 0 without an ``<answer>`` block.

    Examples:
        >>> p = CountdownRewardParser()
        >>> ref = "target=24, numbers=2,3,4"
        >>> [p.score(r, ref)["reward"] for r in ["<answer>(2 + 4) * 4</answer>", "<answer>2 * 3 * 4</answer>"]]
        [0.1, 1.0]
    """

    extract_tags = staticmethod(extract_tags)

    @staticmethod
    def validate_expression(expression: str, target: int, numbers: list[int]) -> bool:
        """Whether ``expression`` uses only the ``numbers`` (each at most once) and equals ``target``.

        Examples:
            >>> CountdownRewardParser.validate_expression("10 / (5 - 5)", 2, [10, 5, 5])
            False
        """
        if not _ALLOWED.fullmatch(expression):
            return False
        available = list(numbers)
        for used in (int(n) for n in re.findall(r"\d+", expression)):
            if used not in available:
                return False
            available.remove(used)
        try:
            result = _evaluate(ast.parse(expression, mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
            return False
        return abs(result - target) < 1e-9

    @staticmethod
    def _parse_ground_truth(answer: str) -> tuple[int, list[int]]:
        target = re.search(r"target\s*=\s*(\d+)", answer)
        numbers = re.search(r"numbers\s*=\s*([\d,\s]+)", answer)
        if target is None or numbers is None:
            raise ValueError(f"CountdownRewardParser: expected a 'target=T, numbers=a,b,...' answer, got {answer!r:.80}")
        return int(target.group(1)), [int(n) for n in numbers.group(1).split(",") if n.strip()]

    def is_correct(self, answer: str, reference: str) -> bool:
        target, numbers = self._parse_ground_truth(reference)
        return self.validate_expression(answer, target, numbers)
