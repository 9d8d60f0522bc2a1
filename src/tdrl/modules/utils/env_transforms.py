"""Which env transforms a policy needs (``InitTracker``, its RNN primers) that an env does not provide yet."""

from __future__ import annotations

from typing import Any

from tensordict.utils import NestedKey

from tdrl.envs import EnvBase
from tdrl.envs.transforms import Compose, InitTracker, TensorDictPrimer, Transform
from tdrl.modules.utils.primers import get_primers_from_module

__all__ = ["append_missing_env_transforms", "missing_env_transforms"]


def _spec_keys(env: EnvBase) -> set:
    keys: set = set()
    for name in ("full_observation_spec", "full_state_spec"):
        spec = getattr(env, name, None)
        if spec is not None:
            keys.update(spec.keys(True, True))
    return keys


def _flatten(transform: Transform | None) -> list[Transform]:
    if transform is None:
        return []
    if isinstance(transform, Compose):
        return [t for item in transform for t in _flatten(item)]
    return [transform]


def missing_env_transforms(env: EnvBase, module: Any, init_key: NestedKey = "is_init") -> list[Transform]:
    """The transforms a stateful ``module`` needs that ``env``'s specs lack: an ``InitTracker`` and its primers.

    A module is stateful when a submodule has ``make_tensordict_primer()`` (RNNs, consistent dropout); a
    stateless one needs nothing.

    The check reads the env's observation and state specs (so transforms inside batched sub-envs count): no
    ``init_key`` leaf (at any nesting) means an ``InitTracker`` is needed; a primer is needed unless all its keys
    are already specs. A ``module`` that is not an ``nn.Module`` (a plain callable) needs nothing.

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> from tdrl.modules import LSTMModule
        >>> lstm = LSTMModule(input_size=3, hidden_size=4, in_key="th", out_key="h")
        >>> [type(t).__name__ for t in missing_env_transforms(PendulumEnv(), lstm)]
        ['InitTracker', 'TensorDictPrimer']
    """
    if not hasattr(module, "modules"):
        return []
    primers = _flatten(get_primers_from_module(module, warn=False, strict=False))
    if not primers:  # a stateless policy needs neither (TorchRL 0.14.1 asks an InitTracker of every module)
        return []
    keys = _spec_keys(env)
    last = init_key[-1] if isinstance(init_key, tuple) else init_key
    has_init = any(k == init_key or (isinstance(k, tuple) and k[-1] == last) for k in keys)
    needed: list[Transform] = [] if has_init else [InitTracker(init_key=init_key)]
    for t in primers:
        if isinstance(t, TensorDictPrimer) and set(t.primers.keys(True, True)) <= keys:
            continue
        needed.append(t)
    return needed


def append_missing_env_transforms(env: EnvBase, module: Any, init_key: NestedKey = "is_init") -> EnvBase:
    """``env`` with :func:`missing_env_transforms` appended (``env`` itself when nothing is missing; idempotent).

    Examples:
        >>> from tdrl.envs import PendulumEnv
        >>> from tdrl.modules import GRUModule
        >>> gru = GRUModule(input_size=3, hidden_size=4, in_key="th", out_key="h")
        >>> env = append_missing_env_transforms(PendulumEnv(), gru)
        >>> append_missing_env_transforms(env, gru) is env
        True
    """
    for transform in missing_env_transforms(env, module, init_key):
        env = env.append_transform(transform)
    return env
