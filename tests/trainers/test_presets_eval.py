"""Every built-in preset evaluates periodically and so keeps its best policy in ``best.pt``."""

from __future__ import annotations

import pytest

from tdrl.trainers.algorithms.configs.presets import compose_run_config, list_presets


@pytest.mark.parametrize("preset", list_presets())
def test_every_preset_evaluates_periodically(preset):
    overrides = [f"preset={preset}"]
    if preset.startswith(("cql_", "iql_")):  # offline presets need a dataset to validate
        overrides.append("dataset.path=/nonexistent")
    cfg = compose_run_config(overrides)
    length = cfg.collector.total_frames if cfg.collector is not None else cfg.optim.gradient_steps
    assert 0 < cfg.eval.interval < length, f"{preset}: eval.interval={cfg.eval.interval} over {length} frames"
