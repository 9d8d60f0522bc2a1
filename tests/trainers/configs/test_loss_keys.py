"""``configs/loss_keys.py`` (read by config validation, without torch) matches the loss constructors."""

from __future__ import annotations

import inspect

from tdrl.trainers.algorithms.configs.loss_keys import LOSS_KEYS
from tdrl.trainers.algorithms.configs.run import ALGORITHMS, ON_POLICY
from tdrl.trainers.builders import LOSSES

# Loss arguments the builder sets itself (networks, specs, target-network flags) or that TorchRL deprecated
# (the losses refuse the *_key arguments: keys are set with set_keys).
_NOT_CONFIGURABLE = {"self", "args", "actor_network", "critic_network", "actor", "critic", "kwargs", "qvalue_network",
                     "value_network", "action_spec", "action_space", "delay_value", "delay_qvalue", "delay_actor",
                     "advantage_key", "value_target_key", "value_key"}
_SIMPLE = (int, float, bool, str)


def _row(algo: str) -> dict[str, str | None]:
    """The keys of ``LOSSES[algo]``'s constructors (its MRO), typed by their defaults, plus the estimator's."""
    row: dict[str, str | None] = {"gamma": "float", **({"lmbda": "float"} if algo in ON_POLICY else {})}
    for cls in reversed(LOSSES[algo].__mro__):
        init = vars(cls).get("__init__")
        if init is None:
            continue
        for name, param in inspect.signature(init).parameters.items():
            if name not in _NOT_CONFIGURABLE and name not in ("gamma", "lmbda"):
                row[name] = type(param.default).__name__ if type(param.default) in _SIMPLE else None
    return dict(sorted(row.items()))


def test_loss_keys_match_the_loss_signatures():
    assert sorted(LOSS_KEYS) == sorted(LOSSES) == sorted(ALGORITHMS)
    for algo in LOSSES:
        expected = _row(algo)
        assert LOSS_KEYS[algo] == expected, f"configs/loss_keys.py row for {algo!r} should be: {expected}"
