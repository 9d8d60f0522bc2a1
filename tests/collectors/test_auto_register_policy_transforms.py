"""``Collector(auto_register_policy_transforms=...)``: the transforms a recurrent policy needs, appended or warned."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from tdrl.collectors import Collector
from tdrl.envs import InitTracker, PendulumEnv, TransformedEnv
from tdrl.modules import LSTMModule
from tdrl.modules.utils import append_missing_env_transforms, missing_env_transforms


def _recurrent_policy() -> TensorDictSequential:
    lstm = LSTMModule(input_size=1, hidden_size=4, in_key="th", out_key="h")
    head = TensorDictModule(torch.nn.Linear(4, 1), ["h"], ["action"])
    return TensorDictSequential(TensorDictModule(lambda th: th.unsqueeze(-1), ["th"], ["th"]), lstm, head)


def _plain_policy() -> TensorDictModule:
    return TensorDictModule(lambda th: th.unsqueeze(-1).clamp(-2, 2), ["th"], ["action"])


def test_true_appends_init_tracker_and_primer_and_collects() -> None:
    collector = Collector(PendulumEnv(seed=0), _recurrent_policy(), frames_per_batch=6, total_frames=6,
                          auto_register_policy_transforms=True)
    try:
        keys = set(collector.env.full_observation_spec.keys(True, True)) | set(
            collector.env.full_state_spec.keys(True, True))
        assert "is_init" in keys and any("recurrent_state" in str(k) for k in keys)
        batch = next(iter(collector))
        assert batch["is_init"][0] and not batch["is_init"][1:].any()
        assert ("next", "recurrent_state_h") in batch.keys(True)
    finally:
        collector.shutdown()


def test_true_is_idempotent_on_a_prepared_env() -> None:
    policy = _recurrent_policy()
    env = append_missing_env_transforms(PendulumEnv(), policy)
    assert missing_env_transforms(env, policy) == []
    collector = Collector(env, policy, frames_per_batch=4, total_frames=4, auto_register_policy_transforms=True)
    assert collector.env is env
    collector.shutdown()


def test_none_warns_and_leaves_the_env_false_is_silent() -> None:
    # the env is left without the primer, so the collector's policy check then refuses it
    env = PendulumEnv()
    with pytest.warns(FutureWarning, match=r"lacks transforms its policy needs \(InitTracker, TensorDictPrimer\)"):
        with pytest.raises(KeyError, match="neither observes nor primes"):
            Collector(env, _recurrent_policy(), frames_per_batch=4, total_frames=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyError, match="neither observes nor primes"):
            Collector(env, _recurrent_policy(), frames_per_batch=4, auto_register_policy_transforms=False)


def test_stateless_policy_needs_nothing() -> None:
    env = PendulumEnv()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        collector = Collector(env, _plain_policy(), frames_per_batch=4, auto_register_policy_transforms=True)
    assert collector.env is env
    collector.shutdown()


def test_existing_init_tracker_is_reused() -> None:
    env = TransformedEnv(PendulumEnv(), InitTracker())
    assert [type(t).__name__ for t in missing_env_transforms(env, _recurrent_policy())] == ["TensorDictPrimer"]


def test_bad_flag() -> None:
    with pytest.raises(TypeError, match="auto_register_policy_transforms must be a bool or None"):
        Collector(PendulumEnv(), _plain_policy(), frames_per_batch=4, auto_register_policy_transforms="yes")
