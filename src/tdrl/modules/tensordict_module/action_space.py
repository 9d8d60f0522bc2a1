"""Resolution of a Q-value module's action space from a name and/or an action spec."""

from __future__ import annotations

from tdrl.data import Binary, Categorical, Composite, MultiCategorical, MultiOneHot, OneHot, TensorSpec

__all__ = ["ACTION_SPACE_MAP", "find_action_space", "resolve_action_space", "action_leaf"]

#: Accepted names and spec classes -> canonical action-space name (TorchRL's table).
ACTION_SPACE_MAP: dict[object, str] = {
    OneHot: "one_hot",
    MultiOneHot: "mult_one_hot",
    Binary: "binary",
    Categorical: "categorical",
    MultiCategorical: "multi_categorical",
    "one_hot": "one_hot",
    "one-hot": "one_hot",
    "mult_one_hot": "mult_one_hot",
    "mult-one-hot": "mult_one_hot",
    "multi_one_hot": "mult_one_hot",
    "multi-one-hot": "mult_one_hot",
    "binary": "binary",
    "categorical": "categorical",
    "multi_categorical": "multi_categorical",
    "multi-categorical": "multi_categorical",
    "multi_discrete": "multi_categorical",
    "multi-discrete": "multi_categorical",
}


def action_leaf(spec: Composite) -> TensorSpec:
    """Returns the ``"action"`` leaf of a composite spec (or the first nested ``(..., "action")`` leaf).

    Args:
        spec: a composite action spec.

    Returns:
        The leaf spec.

    Examples:
        >>> action_leaf(Composite(action=OneHot(3)))
        OneHot(...)
    """
    if "action" in spec.keys():
        return spec["action"]
    for key in spec.keys(True, True):
        if isinstance(key, tuple) and key[-1] == "action":
            return spec[key]
    raise KeyError(f"No 'action' entry in the composite spec (keys: {list(spec.keys(True, True))}); pass the "
                   "action leaf spec or an action_space name instead.")


def find_action_space(action_space: str | TensorSpec) -> str:
    """Maps a name (``"one-hot"``...) or a spec instance to the canonical action-space name.

    Args:
        action_space: a name or a spec.

    Returns:
        One of ``"one_hot"``, ``"mult_one_hot"``, ``"binary"``, ``"categorical"``, ``"multi_categorical"``.

    Examples:
        >>> find_action_space("one-hot"), find_action_space(Categorical(4))
        ('one_hot', 'categorical')
    """
    key: object = action_space
    if isinstance(action_space, TensorSpec):
        leaf = action_leaf(action_space) if isinstance(action_space, Composite) else action_space
        key = type(leaf)
        if key not in ACTION_SPACE_MAP:
            key = next((cls for cls in (MultiOneHot, OneHot, MultiCategorical, Binary, Categorical)
                        if isinstance(leaf, cls)), key)
    try:
        return ACTION_SPACE_MAP[key]
    except (KeyError, TypeError):
        names = sorted(k for k in ACTION_SPACE_MAP if isinstance(k, str))
        raise ValueError(f"Unknown action_space {action_space!r}; expected one of {names} or a OneHot, MultiOneHot, "
                         "Binary, Categorical or MultiCategorical spec.") from None


def resolve_action_space(action_space: str | None, spec: TensorSpec | None) -> tuple[str, TensorSpec | None]:
    """Combines an ``action_space`` name and an action ``spec`` (either may be missing, not both).

    Args:
        action_space: a name, or ``None`` to infer it from ``spec``.
        spec: the action spec (leaf or composite), or ``None``.

    Returns:
        ``(canonical_action_space, spec)``.

    Examples:
        >>> resolve_action_space(None, OneHot(4))[0]
        'one_hot'
    """
    if isinstance(action_space, TensorSpec):
        raise TypeError("action_space must be a string; pass the action spec through `spec=` instead.")
    leaf = spec
    if isinstance(spec, Composite):
        try:
            leaf = action_leaf(spec)
        except KeyError:
            leaf = None
    if action_space is None and leaf is None:
        raise ValueError("Neither action_space nor an action spec was given: the action space cannot be inferred.")
    if action_space is None:
        return find_action_space(leaf), spec
    name = find_action_space(action_space)
    if leaf is not None and find_action_space(leaf) != name:
        raise ValueError(f"action_space={action_space!r} does not match the action spec {spec}.")
    return name, spec
