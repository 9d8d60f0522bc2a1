"""Records TorchRL's Hydra ConfigStore (every group, name and field) into a JSON fixture.

Run with the TorchRL reference interpreter, never from the test suite (tdrl must not import torchrl)::

    /root/.cache/torchrl-anchor-venv/bin/python tests/trainers/configs/tools/record_torchrl_configstore.py

It writes ``tests/trainers/configs/fixtures/torchrl_configstore.json``: ``{"torchrl_version": ...,
"groups": {group: {name: {"class": ..., "target": ..., "fields": [...]}}}}``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "torchrl_configstore.json"


def _walk(repo: dict, prefix: str = ""):
    for name, node in repo.items():
        if isinstance(node, dict):
            yield from _walk(node, f"{prefix}{name}/")
        else:
            yield prefix.rstrip("/"), name, node


def main() -> None:
    import torchrl
    import torchrl.trainers.algorithms.configs  # noqa: F401  (registers on import)

    groups: dict[str, dict[str, dict]] = {}
    for group, name, item in _walk(ConfigStore.instance().repo):
        if not group or not name.endswith(".yaml"):
            continue
        node = item.node
        cls = OmegaConf.get_type(node)
        if cls is None or not dataclasses.is_dataclass(cls):
            fields = sorted(str(k) for k in node.keys())
            cls_name = None
        else:
            fields = sorted(f.name for f in dataclasses.fields(cls))
            cls_name = cls.__name__
        target = node.get("_target_") if "_target_" in node else None
        groups.setdefault(group, {})[name[: -len(".yaml")]] = {
            "class": cls_name,
            "target": target,
            "fields": [f for f in fields if f != "_target_"],
        }
    payload = {
        "torchrl_version": torchrl.__version__,
        "groups": {g: dict(sorted(v.items())) for g, v in sorted(groups.items())},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    n = sum(len(v) for v in groups.values())
    print(f"wrote {n} configs in {len(groups)} groups to {OUT}")


if __name__ == "__main__":
    main()
