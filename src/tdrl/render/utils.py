"""Small helpers and option names of TorchRL's ``torchrl.render`` (keys, import specs, env preparation)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tensordict.utils import NestedKey

from tdrl.envs import EnvBase, StepCounter

__all__ = [
    "EnvBackendName",
    "ExplorationMode",
    "NotebookRenderBackendName",
    "NotebookRolloutMode",
    "RenderBackendName",
    "RenderFormat",
    "add_step_counter",
    "call_with_supported_kwargs",
    "import_from_string",
    "key_to_string",
    "parse_nested_key",
    "seed_env",
]

# The option values TorchRL's render configuration accepts.
RenderFormat = Literal["ipynb", "mp4", "gif", "frames", "npz", "jsonl"]
EnvBackendName = Literal["auto", "torchrl", "gym", "gymnasium", "mujoco", "dm_control", "isaaclab"]
ExplorationMode = Literal["deterministic", "mode", "mean", "random"]
RenderBackendName = Literal["auto", "pixels", "env", "null"]
NotebookRenderBackendName = Literal["auto", "static", "mujoco_wasm", "mujoco-wasm"]
NotebookRolloutMode = Literal["saved", "live", "both"]


def parse_nested_key(value: NestedKey | Sequence[str]) -> NestedKey:
    """A TensorDict key from a dotted string (``"next.reward"``), a list of parts or a key.

    Args:
        value: ``"a.b"``, ``["a", "b"]``, ``("a", "b")`` or ``"a"``.

    Returns:
        ``("a", "b")`` for the nested forms, the stripped string otherwise.

    Examples:
        >>> parse_nested_key("next.reward"), parse_nested_key(["agents", "action"]), parse_nested_key(" obs ")
        (('next', 'reward'), ('agents', 'action'), 'obs')
    """
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(str(part) for part in value)
    if isinstance(value, str):
        value = value.strip()
        return tuple(part for part in value.split(".") if part) if "." in value else value
    raise TypeError(f"parse_nested_key: expected a string, list or tuple key, got {type(value).__name__}.")


def key_to_string(key: NestedKey) -> str:
    """The dotted form of a key (the inverse of :func:`parse_nested_key`).

    Args:
        key: a string or a tuple of strings.

    Returns:
        ``"a.b"`` for ``("a", "b")``.

    Examples:
        >>> key_to_string(("next", "reward")), key_to_string("obs")
        ('next.reward', 'obs')
    """
    return ".".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _load_module(module_name: str, spec: str) -> Any:
    path = Path(module_name).expanduser()
    if path.suffix != ".py" and "/" not in module_name and "\\" not in module_name:
        try:
            return importlib.import_module(module_name)
        except Exception as err:
            raise ImportError(
                f"import_from_string: cannot import module {module_name!r} of {spec!r}."
            ) from err
    if not path.exists():
        raise ImportError(f"import_from_string: no file {module_name!r} (from {spec!r}).")
    # One module name per file path, so that importing the same file twice gives the same module.
    name = f"_tdrl_render_{path.stem}_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"import_from_string: cannot load {module_name!r} (from {spec!r}).")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[name]
        raise ImportError(f"import_from_string: executing {module_name!r} (from {spec!r}) failed.") from err
    return module


def import_from_string(spec: str) -> Any:
    """Imports ``"package.module:attr.sub"`` (or ``"path/to/file.py:attr"``) and returns the attribute.

    Args:
        spec: ``"<module or .py file>:<dotted attribute>"``.

    Returns:
        The object.

    Examples:
        >>> import_from_string("os.path:join")("a", "b")
        'a/b'
    """
    module_name, sep, attr_path = spec.rpartition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"import_from_string: expected 'module.submodule:object', got {spec!r}.")
    obj = _load_module(module_name, spec)
    for attr in attr_path.split("."):
        if not hasattr(obj, attr):
            raise ImportError(
                f"import_from_string: {spec!r} has no attribute {attr!r} "
                f"(on {getattr(obj, '__name__', type(obj).__name__)})."
            )
        obj = getattr(obj, attr)
    return obj


_KEYWORDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def call_with_supported_kwargs(
    factory: Callable[..., Any], preferred_arg: Any, kwargs: Mapping[str, Any]
) -> Any:
    """Calls a user factory the way it accepts: with the keywords it names, or with ``preferred_arg`` alone.

    ``*args`` factories get ``preferred_arg``; ``**kwargs`` factories get every keyword; otherwise the keywords
    the signature names are passed, and a factory of one positional parameter that none of them fills gets
    ``preferred_arg``.

    Args:
        factory: the callable.
        preferred_arg: the single argument of the one-argument protocol (e.g. a config object).
        kwargs: the keyword candidates.

    Returns:
        What the factory returns.

    Examples:
        >>> call_with_supported_kwargs(lambda seed, device="cpu": (seed, device), None, {"seed": 1, "other": 2})
        (1, 'cpu')
        >>> call_with_supported_kwargs(lambda config: config, "cfg", {"seed": 1})
        'cfg'
    """
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return factory(preferred_arg)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return factory(**kwargs)
    names = {p.name for p in params if p.kind in _KEYWORDS}
    supported = {k: v for k, v in kwargs.items() if k in names}
    missing = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.name not in supported
        and (p.kind in _KEYWORDS or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]
    if not missing:
        return factory(**supported)
    if len(missing) == 1 and sum(p.kind in _POSITIONAL for p in params) == 1:
        return factory(preferred_arg)
    raise TypeError(
        f"call_with_supported_kwargs: {factory!r} needs {missing}; give it one positional "
        f"parameter or keyword parameters among {sorted(kwargs)}."
    )


def _has_step_counter(env: EnvBase) -> bool:
    transform = getattr(env, "transform", None)
    if transform is None:
        return False
    if isinstance(transform, StepCounter):
        return True
    try:
        return any(isinstance(t, StepCounter) for t in transform)
    except TypeError:
        return False


def add_step_counter(env: Any, max_steps: int) -> Any:
    """Appends a ``StepCounter(max_steps)`` to a tdrl env that has none (other objects are returned as is).

    Args:
        env: the environment.
        max_steps: the episode length limit.

    Returns:
        The env with a step counter.

    Examples:
        >>> from tdrl.envs import GymEnv
        >>> env = add_step_counter(GymEnv("Pendulum-v1"), 5)
        >>> env.rollout(10).shape
        torch.Size([5])
        >>> add_step_counter(env, 5) is env
        True
    """
    if not isinstance(env, EnvBase) or _has_step_counter(env):
        return env
    return env.append_transform(StepCounter(max_steps=max_steps))


def seed_env(env: Any, seed: int | None) -> None:
    """Seeds ``env`` through ``set_seed`` (tdrl envs) or ``seed`` (older gym envs); ``None`` does nothing.

    Args:
        env: the environment.
        seed: the seed.

    Examples:
        >>> from tdrl.envs import GymEnv
        >>> env = GymEnv("Pendulum-v1")
        >>> seed_env(env, 0)
        >>> a = env.reset()["observation"]
        >>> seed_env(env, 0)
        >>> bool((env.reset()["observation"] == a).all())
        True
    """
    if seed is None:
        return
    for name in ("set_seed", "seed"):
        method = getattr(env, name, None)
        if callable(method):
            method(seed)
            return
