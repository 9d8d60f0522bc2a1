from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.data import Bounded, Composite, Unbounded
from tdrl.envs import EnvBase, TransformedEnv
from tdrl.record import CSVLogger, PixelRenderTransform, TensorDictRecorder, VideoRecorder


class _FakeLogger:
    def __init__(self):
        self.videos = []

    def log_video(self, name, video, step=None, **kwargs):
        self.videos.append((name, video, step, kwargs))


class CountingEnv(EnvBase):
    """``obs`` counts the steps since reset; terminates at ``max_steps``."""

    def __init__(self, batch_size=(), max_steps=5):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.max_steps = max_steps
        self.observation_spec = Composite(obs=Unbounded((*bs, 1)), shape=bs)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*bs, 1))
        self.reward_spec = Unbounded((*bs, 1))
        self.count = torch.zeros(*bs, 1)

    def _reset(self, tensordict, **kwargs):
        self.count = torch.zeros_like(self.count)
        return TensorDict({"obs": self.count.clone()}, self.batch_size)

    def _step(self, tensordict):
        self.count = self.count + 1
        done = self.count >= self.max_steps
        return TensorDict({"obs": self.count.clone(), "reward": tensordict["action"].clone(), "done": done,
                           "terminated": done.clone()}, self.batch_size)

    def _set_seed(self, seed):
        pass


class _PixelEnv(CountingEnv):
    """CountingEnv that also emits an (H, W, 3) uint8 frame whose value is the step count, and renders it."""

    def __init__(self, batch_size=(), **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        spec = self.observation_spec.clone()
        spec["pixels"] = Unbounded((*self.batch_size, 6, 5, 3), dtype=torch.uint8)
        self.observation_spec = spec

    def _frame(self):
        return self.count.to(torch.uint8).view(*self.batch_size, 1, 1, 1).expand(*self.batch_size, 6, 5, 3).clone()

    def _reset(self, tensordict, **kwargs):
        return super()._reset(tensordict, **kwargs).set("pixels", self._frame())

    def _step(self, tensordict):
        return super()._step(tensordict).set("pixels", self._frame())

    def render(self, scale=1):
        return (self._frame().numpy() * scale).astype(np.uint8)


def test_video_recorder_on_env_skips_every_other_frame_and_logs_tchw():
    logger = _FakeLogger()
    env = TransformedEnv(_PixelEnv(max_steps=10), VideoRecorder(logger, tag="eval", fps=7))
    env.rollout(5)
    env.transform.dump()  # Compose dispatches to the recorder
    ((name, video, step, kwargs),) = logger.videos
    # reset + 5 steps = 6 frames, unbatched parent: skip 2 -> frames of counts 1, 3, 5
    assert name == "eval" and step == 0 and kwargs == {"fps": 7}
    assert video.shape == (1, 3, 3, 6, 5) and video.dtype == torch.uint8
    assert video[0, :, 0, 0, 0].tolist() == [1, 3, 5]
    env.transform.dump()  # nothing recorded since: no-op
    assert len(logger.videos) == 1


def test_video_recorder_batched_env_tiles_a_grid():
    logger = _FakeLogger()
    env = TransformedEnv(_PixelEnv(batch_size=(3,), max_steps=10), VideoRecorder(logger, tag="grid"))
    env.rollout(2)
    env.transform.dump(suffix="b", step=12)
    name, video, step, _ = logger.videos[0]
    # batched parent: skip 1; 3 frames tiled on a 2x2 grid (one empty cell)
    assert (name, step) == ("grid_b", 12)
    assert video.shape == (1, 3, 3, 12, 10)
    assert int(video[0, 0, :, 6:, 5:].sum()) == 0  # the empty cell


def test_video_recorder_standalone_layouts_and_limits():
    logger = _FakeLogger()
    rec = VideoRecorder(logger, tag="t", max_frames=3, center_crop=4)
    chw = torch.full((3, 8, 8), 9, dtype=torch.uint8)
    gray = torch.ones(8, 8, dtype=torch.uint8)
    batch = torch.zeros(5, 8, 8, 3, dtype=torch.uint8)
    for obs in (chw, gray, batch):
        out = rec(TensorDict({"pixels": obs}, []))
        assert out["pixels"] is obs  # observations pass through unchanged
    rec.dump()
    video = logger.videos[0][1]
    assert video.shape == (1, 3, 3, 4, 4)  # max_frames=3, cropped to 4x4, standalone: no grid
    assert video[0, 0].unique().tolist() == [9]
    with pytest.raises(ValueError, match="channels"):
        rec(TensorDict({"pixels": torch.zeros(8, 8, 5)}, []))
    with pytest.raises(ValueError, match="max_frames"):
        VideoRecorder(logger, tag="t", max_frames=0)


def test_video_recorder_dump_on_done_and_csv_logger(tmp_path):
    logger = CSVLogger("exp", log_dir=str(tmp_path), video_format="pt")
    env = TransformedEnv(_PixelEnv(max_steps=3), VideoRecorder(logger, tag="ep", skip=1, dump_on_done=True))
    env.rollout(3)  # terminates at step 3: dumped by itself
    saved = torch.load(tmp_path / "exp" / "videos" / "video_ep_0.pt", weights_only=True)
    assert saved.shape == (1, 4, 3, 6, 5)


def test_tensordict_recorder_writes_a_weights_only_file(tmp_path):
    base = str(tmp_path / "run")
    env = TransformedEnv(CountingEnv(max_steps=10), TensorDictRecorder(base, skip=2, in_keys=["obs"]))
    env.rollout(5)
    env.transform.dump(suffix="x")
    data = torch.load(base + "_x_tensordict.t", weights_only=True)
    # 6 calls (reset + 5 steps), every 2nd kept: counts 1, 3, 5; skip_reset drops the first
    td = TensorDict(data, batch_size=[2])
    assert td["obs"].flatten().tolist() == [3.0, 5.0]
    assert set(td.keys()) == {"obs"}
    with pytest.raises(ValueError, match="skip"):
        TensorDictRecorder(base, skip=0)


def test_pixel_render_transform_adds_spec_and_switches():
    env = TransformedEnv(_PixelEnv(max_steps=10), PixelRenderTransform(out_keys="rendered", scale=2))
    spec = env.observation_spec["rendered"]
    assert spec.shape == (6, 5, 3) and spec.dtype == torch.uint8
    data = env.rollout(3)
    assert data["next", "rendered"][:, 0, 0, 0].tolist() == [2, 4, 6]
    env.transform.switch("off")
    assert not env.transform.enabled
    assert "rendered" not in env.reset().keys()
    env.transform.switch()
    assert "rendered" in env.reset().keys()
    with pytest.raises(ValueError, match="one out_key"):
        PixelRenderTransform(out_keys=["a", "b"])
    with pytest.raises(ValueError, match="'draw'"):
        TransformedEnv(_PixelEnv(), PixelRenderTransform(render_method="draw"))


def test_pixel_render_transform_batched_single_image_as_non_tensor():
    env = _PixelEnv(batch_size=(2,), max_steps=10)
    t = PixelRenderTransform(preproc=lambda a: a[0])  # a batched env rendering one (H, W, 3) image
    tenv = TransformedEnv(env, t)
    assert t.as_non_tensor is True
    assert tenv.reset().get("pixels").shape == (2,)
    assert isinstance(tenv.observation_spec, Composite)
