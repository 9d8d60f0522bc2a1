"""``Collector(use_buffers=...)``: TorchRL's argument is accepted, checked, and leaves the batches unchanged."""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from tdrl.collectors import Collector
from tdrl.envs import PendulumEnv
from tdrl.trainers.algorithms.configs import CollectorConfig


def _batches(**kwargs: object) -> list:
    torch.manual_seed(0)
    collector = Collector(PendulumEnv(seed=0), frames_per_batch=6, total_frames=12, **kwargs)
    out = [batch["next", "th"].clone() for batch in collector]
    collector.shutdown()
    return out


@pytest.mark.parametrize("use_buffers", [True, False])
def test_use_buffers_gives_the_same_batches(use_buffers: bool) -> None:
    expected = _batches()
    got = _batches(use_buffers=use_buffers)
    assert all(torch.equal(a, b) for a, b in zip(expected, got, strict=True))


def test_use_buffers_rejects_non_bool() -> None:
    with pytest.raises(TypeError, match="use_buffers must be a bool or None"):
        Collector(PendulumEnv(), frames_per_batch=4, use_buffers="yes")  # type: ignore[arg-type]


def test_collector_config_has_use_buffers() -> None:
    cfg = CollectorConfig(create_env_fn={"_target_": "tdrl.envs.PendulumEnv"}, frames_per_batch=4, total_frames=4,
                          use_buffers=False)
    collector = instantiate(cfg)
    assert collector.use_buffers is False
    assert next(iter(collector)).numel() == 4
    collector.shutdown()
