"""Inputs of ``test_render_utils.py``, run on either library's ``render`` module (no library imports here)."""

from __future__ import annotations

from typing import Any

KEYS = ["next.reward", ["agents", "action"], ("a", "b"), " obs ", "a..b"]


def factories() -> dict[str, Any]:
    """Factories of each signature style ``call_with_supported_kwargs`` tells apart."""

    def named(seed, device="cpu"):
        return ("named", seed, device)

    def one_arg(config):
        return ("one_arg", config)

    def star_args(*args):
        return ("star_args", args)

    def star_kwargs(**kwargs):
        return ("star_kwargs", sorted(kwargs))

    def kw_only(*, seed, device="cpu"):
        return ("kw_only", seed, device)

    return {
        "named": named,
        "one_arg": one_arg,
        "star_args": star_args,
        "star_kwargs": star_kwargs,
        "kw_only": kw_only,
    }


def run(render: Any) -> dict[str, Any]:
    """Every helper's results (errors as their type name), JSON-ready."""
    out: dict[str, Any] = {"parse": [], "to_string": [], "calls": {}}
    for key in KEYS:
        parsed = render.parse_nested_key(key)
        out["parse"].append(list(parsed) if isinstance(parsed, tuple) else parsed)
        out["to_string"].append(render.key_to_string(parsed))
    for name, factory in factories().items():
        try:
            result = render.call_with_supported_kwargs(factory, "cfg", {"seed": 3, "extra": 1})
            out["calls"][name] = [list(r) if isinstance(r, tuple) else r for r in result]
        except Exception as err:
            out["calls"][name] = type(err).__name__
    out["import"] = render.import_from_string("os.path:join")("a", "b")
    errors = []
    for spec in ["os.path", "os.path:nothing", "no_such_module_xyz:x"]:
        try:
            render.import_from_string(spec)
        except Exception as err:
            errors.append(type(err).__name__)
    out["import_errors"] = errors
    for name in [
        "RenderFormat",
        "EnvBackendName",
        "ExplorationMode",
        "RenderBackendName",
        "NotebookRenderBackendName",
        "NotebookRolloutMode",
    ]:
        out[name] = list(getattr(render, name).__args__)
    return out
