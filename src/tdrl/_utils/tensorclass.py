"""The tensorclass bases of the LLM containers, as the type checker should see them.

tensordict's ``TensorClass["nocast"]`` builds each class's fields, ``_tensordict`` and the whole
TensorDict API when the class is created; no type checker can follow that, and its ``TensorClass[...]``
options are strings mypy reads as undefined names. Under ``TYPE_CHECKING`` the bases are ``Any``, so the
fields' annotations document the types while attribute access stays unchecked, as for any dynamic base.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tensordict import TensorClass

__all__ = ["NoCastTensorClass", "ShadowTensorClass"]

if TYPE_CHECKING:
    NoCastTensorClass = Any
    ShadowTensorClass = Any
else:
    NoCastTensorClass = TensorClass["nocast"]
    # "shadow" lets fields named `type`/`size`/`data` shadow TensorDict attributes of the same name.
    ShadowTensorClass = TensorClass["nocast", "shadow"]
