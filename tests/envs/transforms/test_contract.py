"""Every transform through the contract of ``_contract.py`` (single env, Serial/Parallel workers and
parents, plain data, inverse)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Unbounded
from tdrl.envs.transforms import (
    ActionMask,
    CatFrames,
    CatTensors,
    ClipTransform,
    Compose,
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    ExcludeTransform,
    FlattenObservation,
    FrameSkipTransform,
    GrayScale,
    InitTracker,
    NoopResetEnv,
    ObservationNorm,
    RenameTransform,
    Resize,
    RewardClipping,
    RewardScaling,
    RewardSum,
    SelectTransform,
    SqueezeTransform,
    StepCounter,
    TensorDictPrimer,
    ToTensorImage,
    UnsqueezeTransform,
    VecNorm,
)

from ._contract import STEPS, TransformContract, plain_td


def _first_obs(rollout):
    return rollout.get(("next", "observation_copy"))[..., :1]


class TestStepCounter(TransformContract):
    def make_transform(self):
        return StepCounter(max_steps=3)

    def check(self, rollout, setting):
        count, nxt = rollout["step_count"], rollout["next", "step_count"]
        assert (nxt == count + 1).all()
        assert nxt.max() <= 3 and (count[..., 0, :] == 0).all()
        assert (rollout["next", "truncated"] == (nxt == 3)).all()
        assert (rollout["next", "done"] >= rollout["next", "truncated"]).all()


class TestRewardSum(TransformContract):
    def make_transform(self):
        return RewardSum()

    def check(self, rollout, setting):
        expected = rollout["episode_reward"] + rollout["next", "reward"]
        torch.testing.assert_close(rollout["next", "episode_reward"], expected)
        first = rollout["episode_reward"][..., 0, :]
        assert (first == 0).all()

    def plain_transform(self):
        return RewardSum(in_keys=[("next", "reward")], out_keys=[("next", "episode_reward")])

    def check_plain(self, data, out):
        torch.testing.assert_close(out["next", "episode_reward"], data["next", "reward"].cumsum(0))


class TestRewardScaling(TransformContract):
    def make_transform(self):
        return RewardScaling(loc=1.0, scale=2.0)

    def check(self, rollout, setting):
        torch.testing.assert_close(rollout["next", "reward"], _first_obs(rollout) * 2 + 1)

    def plain_transform(self):
        return RewardScaling(1.0, 2.0, in_keys=[("next", "reward")])

    def check_plain(self, data, out):
        torch.testing.assert_close(out["next", "reward"], data["next", "reward"] * 2 + 1)


class TestRewardClipping(TransformContract):
    def make_transform(self):
        return RewardClipping(-0.1, 0.1)

    def plain_transform(self):
        return RewardClipping(-0.1, 0.1, in_keys=[("next", "reward")])

    def check_plain(self, data, out):
        torch.testing.assert_close(out["next", "reward"], data["next", "reward"].clamp(-0.1, 0.1))

    def check(self, rollout, setting):
        torch.testing.assert_close(rollout["next", "reward"], _first_obs(rollout).clamp(-0.1, 0.1))


class TestObservationNorm(TransformContract):
    def make_transform(self):
        return ObservationNorm(loc=1.0, scale=2.0, in_keys=["observation"], standard_normal=True,
                               in_keys_inv=["observation_inv"])

    def check(self, rollout, setting):
        torch.testing.assert_close(rollout["next", "observation"], (rollout["next", "observation_copy"] - 1) / 2)

    def check_plain(self, data, out):
        torch.testing.assert_close(out["observation"], (data["observation"] - 1) / 2)

    def check_inv(self, transform):
        td = plain_td(observation_inv=torch.tensor([0.0, 1.0]))
        torch.testing.assert_close(transform.inv(td)["observation_inv"], torch.tensor([1.0, 3.0]))


class TestVecNorm(TransformContract):
    def make_transform(self):
        return VecNorm(in_keys=["observation"], decay=0.99)

    def check(self, rollout, setting):
        obs = rollout["next", "observation"]
        assert torch.isfinite(obs).all()
        assert not torch.allclose(obs, rollout["next", "observation_copy"])

    def check_plain(self, data, out):
        assert torch.isfinite(out["observation"]).all()


class TestDoubleToFloat(TransformContract):
    def make_transform(self):
        return DoubleToFloat()

    def check(self, rollout, setting):
        assert rollout["next", "obs64"].dtype == torch.float32
        assert rollout["action"].dtype == torch.float32

    def check_plain(self, data, out):
        assert out["obs64"].dtype == torch.float32 and out["action"].dtype == torch.float32

    def check_inv(self, transform):
        t = DoubleToFloat(in_keys_inv=["action"])
        assert t.inv(plain_td(action=torch.zeros(2)))["action"].dtype == torch.float64


class TestDTypeCast(TransformContract):
    def make_transform(self):
        return DTypeCastTransform(torch.float64, torch.float32, in_keys=["obs64"], in_keys_inv=["action"])

    def check(self, rollout, setting):
        assert rollout["next", "obs64"].dtype == torch.float32
        assert rollout["action"].dtype == torch.float32
        torch.testing.assert_close(rollout["next", "obs64"], rollout["next", "observation_copy"][..., :2])

    def check_inv(self, transform):
        assert transform.inv(plain_td(action=torch.zeros(2)))["action"].dtype == torch.float64


class TestCatTensors(TransformContract):
    def make_transform(self):
        return CatTensors(["observation", "observation_copy"], out_key="vec", del_keys=False)

    def check(self, rollout, setting):
        nxt = rollout["next"]
        torch.testing.assert_close(nxt["vec"], torch.cat([nxt["observation"], nxt["observation_copy"]], -1))

    def check_plain(self, data, out):
        assert out["vec"].shape[-1] == 6


class TestCatFrames(TransformContract):
    def make_transform(self):
        return CatFrames(N=3, dim=-1, in_keys=["observation"])

    def check(self, rollout, setting):
        root, nxt = rollout["observation"], rollout["next", "observation"]
        assert nxt.shape[-1] == 9
        torch.testing.assert_close(nxt[..., :6], root[..., 3:])
        torch.testing.assert_close(nxt[..., 6:], rollout["next", "observation_copy"])
        first = root[..., 0, :]
        torch.testing.assert_close(first[..., :3], first[..., 6:])  # "same" padding after reset

    def check_plain(self, data, out):
        # Offline stacking agrees with the online one within episodes (VectorEnv episodes: 7 steps).
        assert out["observation"].shape == (*data.shape, 9)
        torch.testing.assert_close(out["observation"][..., 6:], data["observation"])
        torch.testing.assert_close(out["observation"][1:7, :6], out["observation"][0:6, 3:])
        torch.testing.assert_close(out["observation"][7, :3], data["observation"][7])  # new episode: padding


class TestInitTracker(TransformContract):
    def make_transform(self):
        return InitTracker()

    def check(self, rollout, setting):
        assert rollout["is_init"][..., 0, :].all()
        assert not rollout["next", "is_init"].any()
        starts = torch.zeros_like(rollout["is_init"])
        starts[..., 1:, :] = rollout["next", "done"][..., :-1, :]
        starts[..., 0, :] = True
        assert (rollout["is_init"] == starts).all()


class TestNoopResetEnv(TransformContract):
    over_batched = False
    has_plain = False

    def make_transform(self):
        return NoopResetEnv(noops=3, random=False)

    def check(self, rollout, setting):
        assert (rollout["t"][..., 0, :] == 3).all()


class TestFrameSkip(TransformContract):
    has_plain = False

    def make_transform(self):
        return FrameSkipTransform(2)

    def check(self, rollout, setting):
        delta = rollout["next", "t"] - rollout["t"]
        assert ((delta == 2) | rollout["next", "done"]).all()


class TestTensorDictPrimer(TransformContract):
    def make_transform(self):
        return TensorDictPrimer(hidden=Unbounded((4,)), default_value=1.0)

    def check(self, rollout, setting):
        assert (rollout["hidden"] == 1).all() and rollout["hidden"].shape[-1] == 4

    def check_plain(self, data, out):
        assert out["hidden"].shape == (*data.shape, 4)


class TestExclude(TransformContract):
    def make_transform(self):
        return ExcludeTransform("observation_copy")

    def check(self, rollout, setting):
        assert "observation_copy" not in rollout.keys() and "observation_copy" not in rollout["next"].keys()

    def check_plain(self, data, out):
        assert "observation_copy" not in out.keys()


class TestSelect(TransformContract):
    def make_transform(self):
        return SelectTransform("observation", "t")

    def check(self, rollout, setting):
        assert set(rollout["next"].keys()) == {"observation", "t", "reward", "done", "terminated", "truncated"}


class TestRename(TransformContract):
    def make_transform(self):
        return RenameTransform(["observation"], ["renamed"], in_keys_inv=["action"], out_keys_inv=["act"])

    def check(self, rollout, setting):
        assert "renamed" in rollout["next"].keys() and "observation" not in rollout["next"].keys()
        assert "act" in rollout.keys()

    def check_inv(self, transform):
        out = transform.inv(plain_td(act=torch.zeros(2)))
        assert "action" in out.keys() and "act" not in out.keys()


class TestFlatten(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return FlattenObservation(-2, -1, in_keys=["pixels"])

    def check(self, rollout, setting):
        assert rollout["next", "pixels"].shape[-2:] == (8, 24)


class TestUnsqueeze(TransformContract):
    def make_transform(self):
        return UnsqueezeTransform(-1, in_keys=["observation"], in_keys_inv=["action"])

    def check(self, rollout, setting):
        assert rollout["next", "observation"].shape[-2:] == (3, 1)
        assert rollout["action"].shape[-2:] == (2, 1)

    def check_inv(self, transform):
        assert transform.inv(plain_td(action=torch.zeros(2, 1)))["action"].shape == (2,)


class TestSqueeze(TransformContract):
    def make_transform(self):
        return SqueezeTransform(-1, in_keys=["t"])

    def check(self, rollout, setting):
        assert rollout["next", "t"].shape == rollout["next", "done"].shape[:-1]


class TestToTensorImage(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return ToTensorImage()

    def check(self, rollout, setting):
        pix = rollout["next", "pixels"]
        assert pix.shape[-3:] == (3, 8, 8) and pix.dtype == torch.float32
        assert 0 <= pix.min() and pix.max() <= 1


class TestResize(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return Compose(ToTensorImage(), Resize(4, 5))

    def check(self, rollout, setting):
        assert rollout["next", "pixels"].shape[-3:] == (3, 5, 4)


class TestGrayScale(TransformContract):
    env_kind = "pixels"

    def make_transform(self):
        return Compose(ToTensorImage(), GrayScale())

    def check(self, rollout, setting):
        pix = rollout["next", "pixels"]
        assert pix.shape[-3:] == (1, 8, 8)
        level = (rollout["next", "observation_copy"][..., :1] * 20 + 128).clamp(0, 255).to(torch.uint8) / 255
        torch.testing.assert_close(pix[..., 0, 0, 0], level[..., 0], atol=2e-3, rtol=0)


class TestActionMask(TransformContract):
    env_kind = "mask"

    def make_transform(self):
        return ActionMask()

    def check(self, rollout, setting):
        if setting.endswith("_worker"):
            return  # the parent samples actions from its own (unmasked) spec
        assert (rollout["next", "reward"] == 1).all()

    def test_plain(self):
        data = self.base_env().rollout(STEPS, break_when_any_done=False)
        mask = data["action_mask"]
        data["action"] = mask.float().argmax(-1)  # allowed actions pass
        assert ActionMask()(data.clone()).batch_size == data.batch_size
        data["action"] = (~mask).float().argmax(-1)
        if not mask.all():
            with pytest.raises(ValueError, match="not allowed"):
                ActionMask()(data)


class TestClip(TransformContract):
    def make_transform(self):
        return ClipTransform(in_keys=["observation"], in_keys_inv=["action"], low=-0.5, high=0.5)

    def check(self, rollout, setting):
        torch.testing.assert_close(rollout["next", "observation"],
                                   rollout["next", "observation_copy"].clamp(-0.5, 0.5))

    def check_inv(self, transform):
        out = transform.inv(plain_td(action=torch.tensor([-2.0, 2.0])))
        torch.testing.assert_close(out["action"], torch.tensor([-0.5, 0.5]))


class TestDeviceCast(TransformContract):
    def make_transform(self):
        return DeviceCastTransform("cpu")

    def check(self, rollout, setting):
        assert rollout["next", "observation"].device == torch.device("cpu")


class TestComposeCounterSum(TransformContract):
    def make_transform(self):
        return Compose(StepCounter(4), RewardSum(), InitTracker())

    def check(self, rollout, setting):
        assert rollout["next", "step_count"].max() <= 4
        torch.testing.assert_close(rollout["next", "episode_reward"],
                                   rollout["episode_reward"] + rollout["next", "reward"])
        assert (rollout["is_init"] == (rollout["step_count"] == 0)).all()

    def plain_transform(self):
        return Compose(StepCounter(4), RewardSum(in_keys=[("next", "reward")], out_keys=[("next", "episode_reward")]))

    def check_plain(self, data, out):
        torch.testing.assert_close(out["next", "episode_reward"], data["next", "reward"].cumsum(0))


def test_plain_data_roundtrip_keeps_other_keys():
    td = TensorDict({"reward": torch.ones(3, 1), "other": torch.zeros(3)}, [3])
    out = Compose(RewardScaling(0.0, 2.0), RewardClipping(-1.0, 1.5))(td)
    assert (out["reward"] == 1.5).all() and "other" in out.keys()
