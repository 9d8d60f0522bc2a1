"""The contract of ``_contract.py`` for the structural transforms (Stack, ExpandAs, the pass-through checks,
ConditionalSkip, Hash)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.envs import TransformedEnv
from tdrl.envs.transforms import (
    ConditionalSkip,
    ExpandAs,
    FiniteTensorDictCheck,
    Hash,
    MeanActionSelector,
    ObservationTransform,
    PinMemoryTransform,
    Stack,
)

from ._contract import TransformContract
from ._envs import VectorEnv


class TestStack(TransformContract):
    def make_transform(self):
        return Stack(in_keys=["observation", "observation_copy"], out_key="both", dim=-2)

    def check(self, rollout, setting):
        both = rollout["next", "both"]
        assert both.shape[-2:] == (2, 3) and "observation" not in rollout["next"].keys()
        torch.testing.assert_close(both[..., 0, :], both[..., 1, :])

    def check_plain(self, data, out):
        assert out["both"].shape == (*data.batch_size, 2, 3)
        assert "observation" not in out.keys() and "observation_copy" not in out.keys()

    def check_inv(self, transform):
        t = Stack(in_keys=["a", "b"], out_key="ab", in_key_inv="ab", out_keys_inv=["x", "y"])
        inv = t.inv(TensorDict(ab=torch.arange(6.0).reshape(3, 2)))
        assert inv["x"].tolist() == [0.0, 2.0, 4.0] and "ab" not in inv.keys()
        with pytest.raises(ValueError, match="3 slices"):
            Stack(in_keys=["a", "b"], out_key="ab", in_key_inv="ab", out_keys_inv=["x", "y"]).inv(
                TensorDict(ab=torch.zeros(2, 3)))


class TestExpandAs(TransformContract):
    def make_transform(self):
        return ExpandAs("done", ref_key="observation", out_key="done_wide")

    def check(self, rollout, setting):
        wide = rollout["next", "done_wide"]
        assert wide.shape[-1] == 3
        assert (wide == rollout["next", "done"].expand_as(wide)).all()
        assert rollout["done_wide"].shape == wide.shape

    def check_plain(self, data, out):
        assert out["done_wide"].shape == data["observation"].shape


class TestFiniteTensorDictCheck(TransformContract):
    def make_transform(self):
        return FiniteTensorDictCheck()

    def check(self, rollout, setting):
        assert torch.isfinite(rollout["next", "observation"]).all()

    def check_inv(self, transform):
        with pytest.raises(ValueError, match="'bad'"):
            transform(TensorDict(ok=torch.zeros(2), bad=torch.tensor([float("inf")])))


class TestPinMemoryTransform(TransformContract):
    def make_transform(self):
        return PinMemoryTransform()

    def check(self, rollout, setting):
        assert rollout["next", "observation"].shape[-1] == 3


class TestConditionalSkip(TransformContract):
    has_plain = False

    def make_transform(self):
        # Skip every step where the step counter is odd: the "t" entry then only advances on even ones.
        return ConditionalSkip(lambda td: (td["t"] % 2 == 1).reshape(td.batch_size))

    def check(self, rollout, setting):
        t, nxt = rollout["t"], rollout["next", "t"]
        assert ((nxt == t) == (t % 2 == 1)).all()


class TestHash(TransformContract):
    def make_transform(self):
        return Hash(in_keys=["observation"], out_keys=["hash"], hash_fn=lambda x: (x * 1000).long() % 97)

    def check(self, rollout, setting):
        assert rollout["next", "hash"].dtype == torch.int64 and rollout["next", "hash"].shape[-1] == 3


def test_hash_strings_batches_and_errors():
    t = Hash(in_keys=["s"], out_keys=["h"])
    one = t(TensorDict(s="abc"))["h"]
    assert one.shape == (32,) and one.tolist() == Hash.reproducible_hash("abc").tolist()
    assert Hash.reproducible_hash(["abc", "d"]).shape == (2, 32)
    with pytest.raises(RuntimeError, match="no repertoire"):
        t.get_input_from_hash(one)
    inv = Hash(in_keys=["s"], out_keys=["h"], in_keys_inv=["s"], out_keys_inv=["h"])
    with pytest.raises(KeyError, match="never produced"):
        inv.inv(TensorDict(h=one))
    with pytest.raises(ValueError, match="must return a tensor"):
        Hash(in_keys=["s"], out_keys=["h"], hash_fn=lambda s: s)(TensorDict(s="x"))


def test_stack_and_expand_as_errors():
    with pytest.raises(ValueError, match="negative"):
        Stack(in_keys=["a", "b"], out_key="c", dim=0)
    with pytest.raises(ValueError, match="together"):
        Stack(in_keys=["a", "b"], out_key="c", in_key_inv="c")
    with pytest.raises(ValueError, match="cannot be one of"):
        Stack(in_keys=["a", "b"], out_key="a")
    with pytest.raises(KeyError, match="missing"):
        TransformedEnv(VectorEnv(), ExpandAs("missing", ref_key="observation"))


def test_conditional_skip_everything_and_bad_cond():
    env = TransformedEnv(VectorEnv(), ConditionalSkip(lambda td: True))
    rollout = env.rollout(3)
    assert (rollout["next", "t"] == 0).all() and (rollout["next", "reward"] == 0).all()
    with pytest.raises(TypeError, match="callable"):
        ConditionalSkip(3)


class TestMeanActionSelector(TransformContract):
    def make_transform(self):
        return MeanActionSelector()

    def check(self, rollout, setting):
        var = rollout["next", "observation", "var"]
        assert var.shape[-2:] == (3, 3) and (var == 0).all()
        assert rollout["observation", "mean"].shape[-1] == 3

    def check_inv(self, transform):
        env = TransformedEnv(VectorEnv(), transform)
        td = env.reset().set(("action", "mean"), torch.full((2,), 0.5, dtype=torch.float64))
        out = env.step(td)
        torch.testing.assert_close(out["next", "observation", "mean"], td["observation", "mean"] + 0.1)


def test_mean_action_selector_missing_observation():
    with pytest.raises(KeyError, match="'obs'"):
        TransformedEnv(VectorEnv(), MeanActionSelector(observation_key="obs"))


class _FlipLast(ObservationTransform):
    """The smallest ObservationTransform: reverses the last dim of its (default) in_keys."""

    def _apply_transform(self, obs):
        return obs.flip(-1)

    def _reset(self, tensordict, tensordict_reset):
        return self._call(tensordict_reset)


class TestObservationTransform(TransformContract):
    env_kind = "pixels"  # the default in_keys are ["observation", "pixels"]

    def make_transform(self):
        return _FlipLast()

    def check(self, rollout, setting):
        for where in (rollout, rollout["next"]):
            torch.testing.assert_close(where["observation"], where["observation_copy"].flip(-1))
            assert where["pixels"].dtype == torch.uint8

    def check_plain(self, data, out):
        torch.testing.assert_close(out["observation"], data["observation_copy"].flip(-1))
