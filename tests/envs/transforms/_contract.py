"""The transform contract: every transform runs in a single env, inside the workers of ``SerialEnv`` and
``ParallelEnv``, on top of them, and on plain data (replay-buffer use), with ``inv`` where it applies."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from tdrl.envs import ParallelEnv, SerialEnv, TransformedEnv
from tdrl.envs.transforms import Transform
from tdrl.envs.utils import check_env_specs

from ._envs import MaskedEnv, VectorEnv

SETTINGS = ["single", "serial_worker", "parallel_worker", "serial_over", "parallel_over"]
STEPS = 12


def assert_matches_specs(env: Any, rollout: TensorDictBase, next_dropped: tuple[str, ...] = ()) -> None:
    """Every declared leaf is in the rollout with the declared shape and dtype (and nothing is missing).

    ``next_dropped``: observations the transform removes from the stored ``"next"`` step by design; they
    must be absent there (and are still checked at the root).
    """
    lead = rollout.batch_size
    checks = [
        ("full_observation_spec", rollout), ("full_done_spec", rollout), ("full_state_spec", rollout),
        ("full_action_spec", rollout), ("full_observation_spec", rollout.get("next")),
        ("full_reward_spec", rollout.get("next")), ("full_done_spec", rollout.get("next")),
    ]
    for i, (part, data) in enumerate(checks):
        spec = getattr(env, part)
        for key, leaf in spec.items(True, True):
            value = data.get(key, None)
            if i == 4 and key in next_dropped:  # the "next" observations
                assert value is None, f"{key!r} should be dropped from the stored next step"
                continue
            assert value is not None, f"{part}: {key!r} missing from the rollout"
            expected = (*lead, *leaf.shape[len(env.batch_size):])
            assert value.shape == torch.Size(expected), f"{part}: {key!r} has shape {value.shape}, spec {expected}"
            assert value.dtype == leaf.dtype, f"{part}: {key!r} has dtype {value.dtype}, spec {leaf.dtype}"


class TransformContract:
    """Subclasses define ``make_transform`` and ``check`` (and optionally the other hooks)."""

    env_kind = "vector"  # "vector", "pixels" or "mask"
    over_batched = True  # False: the transform refuses batched parents (e.g. NoopResetEnv)
    has_plain = True  # False: using it on plain data raises
    in_workers = True  # False: the transform cannot run inside batched-env workers (it documents so)
    next_dropped: tuple[str, ...] = ()  # observations the transform drops from the stored "next" step

    def make_transform(self) -> Transform:
        raise TypeError("contract subclasses define make_transform")

    def check(self, rollout: TensorDictBase, setting: str) -> None:
        raise TypeError("contract subclasses define check")

    def plain_transform(self) -> Transform:
        """The transform used on plain data (default: ``make_transform()``)."""
        return self.make_transform()

    def check_plain(self, data: TensorDictBase, out: TensorDictBase) -> None:
        """Default: the plain-data output is still a tensordict of the same batch size."""
        assert out.batch_size == data.batch_size

    def check_inv(self, transform: Transform) -> None:
        """Default: nothing to invert."""

    # ------------------------------------------------------------------ factories
    def base_env(self) -> Any:
        if self.env_kind == "mask":
            return MaskedEnv()
        return VectorEnv(pixels=self.env_kind == "pixels")

    def build(self, setting: str) -> Any:
        base, make = self.base_env, self.make_transform
        if setting == "single":
            return TransformedEnv(base(), make())
        if setting == "serial_worker":
            return SerialEnv(2, lambda: TransformedEnv(base(), make()))
        if setting == "parallel_worker":
            return ParallelEnv(2, lambda: TransformedEnv(base(), make()))
        if setting == "serial_over":
            return TransformedEnv(SerialEnv(2, base), make())
        return TransformedEnv(ParallelEnv(2, base), make())

    # ------------------------------------------------------------------ the contract
    @pytest.mark.timeout(120)
    @pytest.mark.parametrize("setting", SETTINGS)
    def test_env(self, setting: str) -> None:
        if setting.endswith("_over") and not self.over_batched:
            with pytest.raises(RuntimeError):
                env = self.build(setting)
                try:
                    env.rollout(3)
                finally:
                    env.close()
            return
        if setting.endswith("_worker") and not self.in_workers:
            with pytest.raises((KeyError, RuntimeError), match="observation"):
                env = self.build(setting)
                try:
                    env.rollout(3)
                finally:
                    env.close()
            return
        env = self.build(setting)
        try:
            env.set_seed(0)
            check_env_specs(env)
            rollout = env.rollout(STEPS, break_when_any_done=False)
            assert_matches_specs(env, rollout, self.next_dropped)
            self.check(rollout, setting)
        finally:
            env.close()

    def test_plain(self) -> None:
        data = self.base_env().rollout(STEPS, break_when_any_done=False)
        transform = self.plain_transform()
        if not self.has_plain:
            with pytest.raises(RuntimeError):
                transform(data.clone())
            return
        self.check_plain(data, transform(data.clone()))

    def test_inv(self) -> None:
        self.check_inv(self.make_transform())


def plain_td(**entries: torch.Tensor) -> TensorDict:
    """A tensordict with batch size ``[]`` from keyword entries."""
    return TensorDict(entries, [])
