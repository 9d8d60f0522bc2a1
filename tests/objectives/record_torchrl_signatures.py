"""Records TorchRL 0.14.1's loss constructor and helper signatures into ``torchrl_0_14_1_signatures.json``.

Not a test: run it with the TorchRL reference interpreter when moving to a new TorchRL release::

    /root/.cache/torchrl-anchor-venv/bin/python tests/objectives/record_torchrl_signatures.py

``test_signatures_torchrl.py`` compares tdrl's signatures against the file.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

# (public path, attribute) pairs; ``Class.method`` records a method, ``Class`` its ``__init__``.
TARGETS: list[tuple[str, str]] = [
    ("objectives", name)
    for name in (
        "LossModule", "DQNLoss", "DistributionalDQNLoss", "DDPGLoss", "SACLoss", "DiscreteSACLoss", "REDQLoss",
        "TD3Loss", "TD3BCLoss", "CQLLoss", "DiscreteCQLLoss", "IQLLoss", "DiscreteIQLLoss", "A2CLoss", "PPOLoss",
        "ClipPPOLoss", "KLPENPPOLoss", "ReinforceLoss", "SoftUpdate", "HardUpdate", "default_value_kwargs",
        "distance_loss", "hold_out_net", "hold_out_params", "next_state_value", "group_optimizers",
        "LossModule.make_value_estimator", "LossModule.set_keys", "LossModule.convert_to_functional",
    )
] + [("objectives.deprecated", "REDQLoss_deprecated")] + [
    ("objectives", name) for name in ("CrossQLoss", "TQCLoss", "BCLoss", "RNDLoss")
] + [
    ("objectives.crossq", "CrossQLoss"), ("objectives.tqc", "TQCLoss"), ("objectives.bc", "BCLoss"),
    ("objectives.rnd", "RNDLoss"), ("objectives.sac", "DiscreteSACLoss"),
    ("modules.models.exploration", "gSDEModule"), ("modules.models.exploration", "LazygSDEModule"),
    ("modules.models.batchrenorm", "BatchRenorm1d"),
    ("envs.transforms", "RNDTransform"), ("envs.transforms", "RunningMeanStd"), ("envs.transforms", "gSDENoise"),
] + [
    ("objectives", "DTLoss"), ("objectives", "OnlineDTLoss"), ("objectives", "GAILLoss"),
    ("objectives.decision_transformer", "DTLoss"), ("objectives.decision_transformer", "OnlineDTLoss"),
    ("objectives.gail", "GAILLoss"), ("modules", "DecisionTransformer"), ("modules", "DTActor"),
    ("modules", "OnlineDTActor"), ("modules", "DecisionTransformerInferenceWrapper"),
    ("modules.models", "DTActor"), ("modules.tensordict_module.actors", "DecisionTransformerInferenceWrapper"),
] + [
    ("objectives", "DiffusionBCLoss"), ("objectives", "ACTLoss"), ("objectives", "ExponentialQuadraticCost"),
    ("objectives", "KLAdaptiveLR"), ("objectives", "KLAdaptiveLR.step"), ("objectives", "add_random_module"),
    ("modules", "DiffusionActor"), ("modules", "RBFController"), ("modules.models", "ACTModel"),
    ("modules.models", "RBFController"), ("modules", "RBFController.squash_sin"),
]


def _default(value: object) -> object:
    if value is inspect.Parameter.empty:
        return {"required": True}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return {"value": list(value)}
    return {"repr": repr(value)}


def signature_of(obj: object, method: str | None) -> list[dict]:
    """``[{name, kind, default}]`` of a function, a method or a class's ``__init__`` (without ``self``)."""
    fn = getattr(obj, method) if method else (obj.__init__ if inspect.isclass(obj) else obj)
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [{"name": p.name, "kind": p.kind.name, "default": _default(p.default)} for p in params]


def resolve(package: str, module: str, attr: str) -> tuple[object, str | None]:
    head, _, method = attr.partition(".")
    return getattr(importlib.import_module(f"{package}.{module}"), head), method or None


def main() -> None:
    import torchrl

    out = {"torchrl_version": torchrl.__version__, "signatures": {}}
    for module, attr in TARGETS:
        obj, method = resolve("torchrl", module, attr)
        out["signatures"][f"{module}.{attr}"] = signature_of(obj, method)
    path = Path(__file__).with_name("torchrl_0_14_1_signatures.json")
    # One parameter per line: diffs between TorchRL releases stay readable.
    lines = [f'{{"torchrl_version": {json.dumps(out["torchrl_version"])}, "signatures": {{']
    items = sorted(out["signatures"].items())
    for i, (name, params) in enumerate(items):
        rows = ",\n".join("  " + json.dumps(p, sort_keys=True) for p in params)
        lines.append(f" {json.dumps(name)}: [\n{rows}\n ]" + ("," if i < len(items) - 1 else ""))
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(out['signatures'])} signatures to {path}")


if __name__ == "__main__":
    main()
