"""A run's policy as a standalone file: TorchScript, ONNX or a ``torch.export`` ExportedProgram.

Each file holds one function, ``observation (B, *obs_shape) -> action``, the deterministic action in the
env's own format (as :class:`~tdrl.trainers.policy.RunPolicy` returns it for a tensor: an ``int64`` index per
row for a discrete env, a float vector for a continuous one); the batch size ``B`` is free. Loading it needs
torch only (``torch.jit.load``, ``torch.export.load``), or an ONNX runtime alone for ONNX (input
``"observation"``, output ``"action"``), not tdrl.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path
from typing import Literal

import torch

from tdrl.trainers.policy import RunPolicy, TensorPolicy, load_policy

__all__ = ["EXPORT_FORMATS", "ExportFormat", "export_policy", "export_run_policy"]

ExportFormat = Literal["torchscript", "onnx", "exported-program"]
#: format -> default file name in the run folder
EXPORT_FORMATS: dict[str, str] = {"torchscript": "policy.pt", "onnx": "policy.onnx", "exported-program": "policy.pt2"}


def _example(policy: RunPolicy) -> torch.Tensor:
    if len(policy.in_keys) != 1:
        raise ValueError(f"only a policy that reads one observation tensor can be exported; this one reads "
                         f"{policy.in_keys}")
    spec = policy.observation_spec[policy.in_keys[0]]
    # Two rows, not one: a batch of one lets the exporters specialise the batch dim to 1.
    return spec.zero().expand(2, *spec.shape).clone()


def _dynamic_batch() -> dict[str, dict[int, object]]:
    return {"observation": {0: torch.export.Dim("batch")}}


def _check_onnx_deps() -> None:
    missing = [name for name in ("onnx", "onnxscript") if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"exporting to ONNX needs {' and '.join(missing)}: pip install 'tdrl[export]'")


def export_policy(policy: RunPolicy, out: str | os.PathLike, *, format: ExportFormat) -> Path:
    """Writes ``policy`` (a :class:`~tdrl.trainers.policy.RunPolicy`) to ``out`` in ``format``.

    Args:
        policy: e.g. ``tdrl.load_policy(RUN_DIR)``; it must read a single observation entry.
        out: the file to write (its folder is created).
        format: ``"torchscript"`` (``torch.jit.trace``), ``"onnx"`` (torch's dynamo exporter; extra ``export``)
            or ``"exported-program"`` (``torch.export.save``).

    Returns:
        The path written.

    Examples:
        >>> import tempfile
        >>> from tensordict.nn import TensorDictModule
        >>> from tdrl.data import Unbounded
        >>> net = TensorDictModule(torch.nn.Linear(3, 1), ["observation"], ["action"])
        >>> policy = RunPolicy(net, {"observation": Unbounded(3)}, Unbounded(1))
        >>> path = export_policy(policy, Path(tempfile.mkdtemp()) / "p.pt", format="torchscript")
        >>> torch.jit.load(path)(torch.zeros(5, 3)).shape
        torch.Size([5, 1])
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format!r}; expected one of {sorted(EXPORT_FORMATS)}")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    module = TensorPolicy(policy).eval()
    example = _example(policy)
    with torch.no_grad():
        if format == "torchscript":
            # Tracing records the tensor operations of the deterministic path; TensorDict bookkeeping
            # (batch sizes, key checks) is Python and leaves nothing in the graph.
            with warnings.catch_warnings():  # those Python checks are the warnings: constants, rightly
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                traced = torch.jit.trace(module, (example,), check_trace=False)
            torch.jit.save(traced, str(path))
        elif format == "exported-program":
            program = torch.export.export(module, (example,), dynamic_shapes=_dynamic_batch())
            torch.export.save(program, str(path))
        else:
            _check_onnx_deps()
            torch.onnx.export(module, (example,), str(path), dynamo=True, dynamic_shapes=_dynamic_batch(),
                              input_names=["observation"], output_names=["action"], verbose=False)
    return path


def export_run_policy(run_dir: str | os.PathLike, *, format: ExportFormat, out: str | os.PathLike | None = None,
                      which: Literal["best", "last"] = "best") -> Path:
    """Exports the policy of a run folder (:func:`~tdrl.trainers.policy.load_policy`) to ``out``.

    ``out`` defaults to ``RUN_DIR/policy.pt`` (TorchScript), ``policy.onnx`` or ``policy.pt2`` (ExportedProgram).
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format!r}; expected one of {sorted(EXPORT_FORMATS)}")
    if format == "onnx":
        _check_onnx_deps()  # before the run is rebuilt
    policy = load_policy(run_dir, which)
    return export_policy(policy, out or Path(run_dir) / EXPORT_FORMATS[format], format=format)
