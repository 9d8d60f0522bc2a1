"""``Choice``: a value drawn from one of several specs, or one of several fixed non-tensor values."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack

from tdrl.data.tensor_specs._base import SHAPE_TYPING, TensorSpec, _as_size, _tensors_equal

_NON_TENSOR = (NonTensorData, NonTensorStack)


class Choice(TensorSpec):
    """A discrete choice between specs (sample one, then sample from it) or between fixed non-tensor values.

    Args:
        choices: a list of specs, or of ``NonTensorData``/``NonTensorStack`` values, all of the same type,
            shape, dtype and device.

    Examples:
        >>> import torch
        >>> from tensordict import NonTensorData
        >>> from tdrl.data import Bounded
        >>> spec = Choice([Bounded(0.0, 1.0, shape=(1,)), Bounded(10.0, 11.0, shape=(1,))])
        >>> spec.is_in(torch.tensor([10.5])), spec.is_in(torch.tensor([5.0]))
        (True, False)
        >>> words = Choice([NonTensorData(s) for s in ["a", "b"]])
        >>> words.rand().data in ("a", "b")
        True
    """

    def __init__(self, choices: list[TensorSpec | NonTensorData | NonTensorStack]) -> None:
        if not isinstance(choices, list) or not choices:
            raise TypeError("Choice needs a non-empty list of `choices`.")
        first = choices[0]
        if not isinstance(first, (TensorSpec, *_NON_TENSOR)):
            raise TypeError(
                f"Each choice must be a TensorSpec, NonTensorData or NonTensorStack, got {type(first)}."
            )
        for attr in ("shape", "dtype", "device"):
            values = [getattr(c, attr) for c in choices]
            if any(v != values[0] for v in values[1:]):
                raise ValueError(f"All choices must have the same {attr}, got {values}.")
        if not all(isinstance(c, type(first)) for c in choices[1:]):
            raise TypeError(
                f"All choices must have the same type, got {[type(c).__name__ for c in choices]}."
            )
        super().__init__(first.shape, None, first.device, first.dtype, None)  # type: ignore[arg-type]
        # Specs or non-tensor values (_specs_mode says which): Any, as the methods dispatch on the mode.
        self._choices: list[Any] = [c.clone() for c in choices]
        self._specs_mode = isinstance(first, TensorSpec)

    @property
    def num_choices(self) -> int:
        """Number of choices."""
        return len(self._choices)

    def _pick(self, idx: int, method: str, shape: SHAPE_TYPING) -> Any:
        choice = self._choices[idx]
        if self._specs_mode:
            return getattr(choice, method)(shape)
        return choice if shape is None else choice.expand(*_as_size(shape), *choice.shape)

    def rand(self, shape: SHAPE_TYPING = None) -> Any:
        """A sample of a uniformly chosen spec (or a uniformly chosen value)."""
        return self._pick(int(torch.randint(len(self._choices), ()).item()), "rand", shape)

    def zero(self, shape: SHAPE_TYPING = None) -> Any:
        """The zero of the first choice (or the first value)."""
        return self._pick(0, "zero", shape)

    def one(self, shape: SHAPE_TYPING = None) -> Any:
        """The one of the second choice if any, else the first (or that value)."""
        return self._pick(min(1, len(self._choices) - 1), "one", shape)

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` is in any choice (equals any value, for non-tensor choices)."""
        if self._specs_mode:
            return any(c.is_in(val) for c in self._choices)
        data = val.tolist() if isinstance(val, NonTensorStack) else getattr(val, "data", val)
        return any(data == (c.tolist() if isinstance(c, NonTensorStack) else c.data) for c in self._choices)

    def _mismatch(self, val: Any) -> str | None:
        return None if self.is_in(val) else f"not in any of the {len(self._choices)} choices"

    def project(self, val: Any) -> Any:
        """``val`` if it is in a choice, else its projection onto the first spec (or the first value)."""
        if self.is_in(val):
            return val
        return self._choices[0].project(val) if self._specs_mode else self._choices[0]

    def type_check(self, value: Any, key: Any = None) -> None:
        """Checks the dtype against the first choice (all choices share it)."""
        if self._specs_mode:
            self._choices[0].type_check(value, key)

    def cardinality(self) -> int | float:
        """Sum of the choices' cardinalities (the number of values for non-tensor choices)."""
        if not self._specs_mode:
            return len(self._choices)
        return sum(c.cardinality() for c in self._choices)

    def enumerate(self, use_mask: bool = False) -> list[Any]:  # type: ignore[override]  # values of mixed specs: a list, as TorchRL's Choice
        """Every value of every choice, in one list."""
        if not self._specs_mode:
            return list(self._choices)
        return [v for c in self._choices for v in c.enumerate(use_mask)]

    def _each(self, method: str, *args: Any) -> Choice:
        return Choice([getattr(c, method)(*args) for c in self._choices])

    def expand(self, *shape: Any) -> Choice:
        """Every choice expanded."""
        return self._each("expand", *shape)

    def reshape(self, *shape: Any) -> Choice:
        """Every choice reshaped."""
        return self._each("reshape", *shape)

    def squeeze(self, dim: int | None = None) -> Choice:
        """Every choice squeezed."""
        return self._each("squeeze") if dim is None else self._each("squeeze", dim)

    def unsqueeze(self, dim: int) -> Choice:
        """Every choice unsqueezed."""
        return self._each("unsqueeze", dim)

    def __getitem__(self, idx: Any) -> Choice:
        """Every choice indexed."""
        return self._each("__getitem__", idx)

    def clone(self) -> Choice:
        """A deep copy."""
        return self._each("clone")

    def to(self, dest: Any) -> Choice:
        """Every choice moved or cast."""
        return self._each("to", dest)

    def _state(self) -> dict[str, Any]:
        return {"choices": self._choices}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Choice) or other.num_choices != self.num_choices:
            return False
        for a, b in zip(self._choices, other._choices):
            if isinstance(a, TensorSpec):
                if a != b:
                    return False
            elif not _tensors_equal(getattr(a, "data", a), getattr(b, "data", b)):
                return False
        return True

    def __repr__(self) -> str:
        return f"Choice(choices={self._choices})"
