from __future__ import annotations

import pytest
import torch

pytest.importorskip("ray")

from tdrl.weight_update import RayWeightSyncScheme, RayWeightUpdater  # noqa: E402


def test_scheme_refuses_to_send_before_it_knows_the_actors():
    scheme = RayWeightSyncScheme(backend="gloo")
    with pytest.raises(RuntimeError, match="before init_on_sender"):
        scheme.send(torch.nn.Linear(2, 1))


class _Recorder:
    """Stands in for an actor handle: records what update_policy_weights_.remote receives."""

    def __init__(self) -> None:
        self.calls: list = []
        self.update_policy_weights_ = self

    def remote(self, weights):
        self.calls.append(weights)
        return weights


def test_updater_skips_workers_until_max_interval(monkeypatch):
    actors = [_Recorder(), _Recorder()]
    updater = RayWeightUpdater(None, actors, max_interval=2)
    monkeypatch.setattr("tdrl.weight_update.ray.put_weights", lambda w: w)  # no object store needed here
    weights = {"w": torch.zeros(1)}
    for _ in range(6):
        updater.push_weights(weights, worker_ids=0)
    assert len(actors[0].calls) == 2 and actors[1].calls == []  # every third push reaches worker 0
