from __future__ import annotations

import pytest
import torch

from tdrl.render import checkpoint_hash, infer_state_dict, load_checkpoint, save_render_checkpoint


@pytest.mark.parametrize("fmt", [None, "directory", "archive"])
def test_round_trip_payload(tmp_path, fmt):
    net = torch.nn.Linear(3, 2)
    path = save_render_checkpoint(
        tmp_path / "policy.ckpt", net, env_metadata={"env_name": "Pendulum-v1", "vecnorm": {"loc": torch.ones(3)}},
        frames=1000, metrics={"reward": 1.5}, config={"lr": 0.1}, extra={"note": "x"}, format=fmt,
    )
    payload = load_checkpoint(path)
    assert payload["env_name"] == "Pendulum-v1" and payload["frames"] == 1000
    assert payload["metrics"] == {"reward": 1.5} and payload["config"] == {"lr": 0.1} and payload["note"] == "x"
    assert torch.equal(payload["vecnorm"]["loc"], torch.ones(3))
    state = infer_state_dict(payload)
    restored = torch.nn.Linear(3, 2)
    restored.load_state_dict(state)
    assert torch.equal(restored.weight, net.weight)
    assert len(checkpoint_hash(path)) == 64


class _Obj:
    pass


def test_disabled_and_errors(tmp_path):
    assert save_render_checkpoint(None, torch.nn.Linear(1, 1)) is None
    assert save_render_checkpoint("", torch.nn.Linear(1, 1)) is None
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "nope")
    with pytest.raises(ValueError, match="local"):
        load_checkpoint("s3://bucket/x")

    torch.save({"obj": _Obj()}, tmp_path / "unsafe.pt")
    with pytest.raises(RuntimeError, match="weights_only=False"):
        load_checkpoint(tmp_path / "unsafe.pt")  # no unpickling of arbitrary objects by default
    with pytest.raises(TypeError, match="state dict"):
        infer_state_dict({"frames": 3})
    with pytest.raises(KeyError, match="'weights'"):
        infer_state_dict({"frames": 3}, key="weights")


def test_hash_depends_on_content(tmp_path):
    a = save_render_checkpoint(tmp_path / "a", {"w": torch.zeros(2)}, format="directory")
    b = save_render_checkpoint(tmp_path / "b", {"w": torch.ones(2)}, format="directory")
    assert checkpoint_hash(a) != checkpoint_hash(b)
