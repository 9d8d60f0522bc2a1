"""Recording transforms: ``VideoRecorder`` (frames -> ``logger.log_video``), ``TensorDictRecorder`` (steps -> a file)
and ``PixelRenderTransform`` (``env.render()`` -> a ``"pixels"`` entry), with TorchRL's signatures.

Each is a :class:`~tdrl.envs.transforms.Transform`: attached to an env it sees every reset and step output;
``env.transform.dump()`` (or ``recorder.dump()``) writes what was gathered.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import torch
from tensordict import NonTensorData, TensorDictBase
from tensordict.utils import NestedKey

from tdrl.data.tensor_specs import NonTensor, Unbounded
from tdrl.envs.transforms import Transform
from tdrl.envs.transforms.crop import center_crop as _center_crop
from tdrl.record.loggers.common import Logger

__all__ = ["PixelRenderTransform", "TensorDictRecorder", "VideoRecorder"]


def _tile(frames: torch.Tensor) -> torch.Tensor:
    """``(N, C, H, W)`` frames tiled row by row on a near-square grid: ``(C, rows * H, cols * W)``."""
    n, c, h, w = frames.shape
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    pad = rows * cols - n
    if pad:
        frames = torch.cat([frames, frames.new_zeros(pad, c, h, w)])
    return frames.view(rows, cols, c, h, w).permute(2, 0, 3, 1, 4).reshape(c, rows * h, cols * w)


def _to_chw(obs: torch.Tensor) -> torch.Tensor:
    """A frame (or a batch of frames) as ``(..., 3, H, W)``; grayscale (``(H, W)``, one channel) is repeated."""
    if obs.ndim == 2:
        obs = obs.unsqueeze(-3)
    elif obs.ndim < 3:
        raise ValueError(f"VideoRecorder: expected an image (..., H, W, C) or (..., C, H, W), got {tuple(obs.shape)}")
    channels_first = obs.shape[-3] in (1, 3) and obs.shape[-2] > 3 and obs.shape[-1] > 3
    if not channels_first and obs.ndim > 2:
        if obs.shape[-1] not in (1, 3):
            raise ValueError(
                f"VideoRecorder: expected 1 or 3 channels first or last, got an observation of shape {tuple(obs.shape)}"
            )
        obs = obs.movedim(-1, -3)
    if obs.shape[-3] == 1:
        obs = obs.expand(*obs.shape[:-3], 3, *obs.shape[-2:])
    return obs


class VideoRecorder(Transform):
    """Gathers image observations and writes them as one video through ``logger.log_video`` on :meth:`dump`.

    Args:
        logger: where :meth:`dump` writes (``None`` keeps the frames for :meth:`to_animation` only).
        tag: the video's name in the logger.
        in_keys: the image entries (default ``["pixels"]``); they pass through unchanged.
        skip: keep one frame in ``skip`` (default 2 for an unbatched parent env, else 1).
        center_crop: crop each frame to a centred square of this side (plain torch).
        make_grid: tile a batch of frames into one frame (default: when attached to an env).
        out_keys: accepted for TorchRL compatibility (the observation is not changed).
        fps: frames per second passed to ``log_video`` (default: the logger's).
        max_frames: cap on the frames held before a dump; later frames are dropped.
        dump_on_done: dump on its own when every ``"done"`` entry of a step is true.
        **kwargs: more keyword arguments for ``log_video``.

    Examples:
        >>> import tempfile
        >>> from tensordict import TensorDict
        >>> from tdrl.record import CSVLogger
        >>> logger = CSVLogger("demo", log_dir=tempfile.mkdtemp(), video_format="pt")
        >>> rec = VideoRecorder(logger, tag="run")
        >>> for _ in range(3):
        ...     _ = rec(TensorDict({"pixels": torch.zeros(8, 8, 3, dtype=torch.uint8)}, []))
        >>> rec.dump()
        >>> sorted(os.listdir(os.path.join(logger.experiment.log_dir, "videos")))
        ['video_run_0.pt']
    """

    def __init__(
        self,
        logger: Logger | None,
        tag: str | None,
        in_keys: Sequence[NestedKey] | None = None,
        skip: int | None = None,
        center_crop: int | None = None,
        make_grid: bool | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        fps: int | None = None,
        max_frames: int | None = None,
        dump_on_done: bool = False,
        **kwargs: Any,
    ) -> None:
        if max_frames is not None and max_frames <= 0:
            raise ValueError(f"VideoRecorder: max_frames must be a positive integer, got {max_frames}")
        if skip is not None and skip <= 0:
            raise ValueError(f"VideoRecorder: skip must be a positive integer, got {skip}")
        in_keys = ["pixels"] if in_keys is None else in_keys
        super().__init__(in_keys=in_keys, out_keys=in_keys if out_keys is None else out_keys)
        # A logger service (TorchRL) hands out its client; a plain logger is used as is.
        client = getattr(logger, "client", None)
        self.logger = client() if callable(client) else logger
        self.tag = tag
        self._skip = skip
        self._make_grid = make_grid
        self.center_crop = center_crop
        self.max_frames = max_frames
        self.dump_on_done = dump_on_done
        self.video_kwargs = dict(kwargs)
        if fps is not None:
            self.video_kwargs["fps"] = fps
        self.obs: list[torch.Tensor] = []
        self.count = 0
        self.iter = 0

    @property
    def skip(self) -> int:
        if self._skip is None:
            parent = self.parent
            return 1 if parent is None or len(getattr(parent, "batch_size", ())) else 2
        return self._skip

    @skip.setter
    def skip(self, value: int | None) -> None:
        self._skip = value

    @property
    def make_grid(self) -> bool:
        return self.parent is not None if self._make_grid is None else bool(self._make_grid)

    @make_grid.setter
    def make_grid(self, value: bool | None) -> None:
        self._make_grid = value

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        frame = torch.as_tensor(obs.data) if isinstance(obs, NonTensorData) else obs
        self.count += 1
        if self.count % self.skip != 0 or (self.max_frames is not None and len(self.obs) >= self.max_frames):
            return obs
        frame = _to_chw(frame)
        if self.center_crop:
            frame = _center_crop(frame, int(self.center_crop))
        frame = frame.detach().to("cpu", torch.uint8)
        if frame.ndim >= 4 and self.make_grid:
            self.obs.append(_tile(frame.flatten(0, -4)))
        elif frame.ndim >= 4:
            frames = list(frame.flatten(0, -4).unbind(0))
            room = None if self.max_frames is None else self.max_frames - len(self.obs)
            self.obs.extend(frames[:room])
        else:
            self.obs.append(frame.clone())
        return obs

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        next_tensordict = self._call(next_tensordict)
        if self.dump_on_done and self._all_done(next_tensordict):
            self.dump()
        return next_tensordict

    def _all_done(self, next_tensordict: TensorDictBase) -> bool:
        parent = self.parent
        keys = ["done"] if parent is None else [
            k for k in parent.done_keys if (k if isinstance(k, str) else k[-1]) == "done"
        ]
        dones = [d for d in (next_tensordict.get(k, None) for k in keys) if d is not None]
        return bool(dones) and all(bool(d.all()) for d in dones)

    def dump(self, suffix: str | None = None, step: int | None = None) -> None:
        """Writes the gathered frames as one ``(1, T, C, H, W)`` uint8 video and clears them (no-op when empty).

        Args:
            suffix: appended to the tag as ``<tag>_<suffix>``.
            step: the logger step (default: the number of previous dumps).
        """
        if self.obs and self.logger is not None:
            tag = self.tag if suffix is None else f"{self.tag}_{suffix}"
            video = torch.stack(self.obs, 0).unsqueeze(0)
            self.logger.log_video(name=tag, video=video, step=self.iter if step is None else step,
                                  **self.video_kwargs)
        self.obs = []
        self.iter += 1
        self.count = 0

    def to_animation(self, *, title: str | None = None, interval: int = 50, repeat_delay: int = 1000,
                     clear: bool = False) -> Any:
        """The gathered frames as a Matplotlib ``ArtistAnimation`` (for notebooks and tutorials)."""
        if not self.obs:
            raise RuntimeError("VideoRecorder.to_animation() needs at least one recorded frame")
        import matplotlib.animation as animation  # plotting is optional at import time of tdrl.record
        import matplotlib.pyplot as plt

        fig, axis = plt.subplots()
        axis.set_axis_off()
        if title is not None:
            axis.set_title(title)
        artists = [[axis.imshow(f.permute(1, 2, 0).numpy(), animated=True)] for f in self.obs]
        out = animation.ArtistAnimation(fig, artists, interval=interval, blit=True, repeat_delay=repeat_delay)
        if clear:
            self.obs = []
            self.count = 0
        return out

    def __repr__(self) -> str:
        return f"VideoRecorder(tag={self.tag!r}, in_keys={self.in_keys}, skip={self._skip}, frames={len(self.obs)})"


class TensorDictRecorder(Transform):
    """Keeps one step output in ``skip`` and saves them, stacked, on :meth:`dump`.

    The file ``<out_file_base>[_<suffix>]_tensordict.t`` holds the stack as a nested dict of tensors
    (``torch.save(td.to_dict())``), so it loads with ``torch.load(path, weights_only=True)``; rebuild it with
    ``TensorDict(loaded, batch_size=[n])``.

    Args:
        out_file_base: path prefix of the written files.
        skip_reset: leave out the first kept entry (usually the reset output).
        skip: keep one step in ``skip``.
        in_keys: the entries kept (default: all).

    Examples:
        >>> import tempfile
        >>> from tensordict import TensorDict
        >>> base = os.path.join(tempfile.mkdtemp(), "run")
        >>> rec = TensorDictRecorder(base, skip=1, skip_reset=False)
        >>> for i in range(3):
        ...     _ = rec(TensorDict({"x": torch.tensor([float(i)])}, []))
        >>> rec.dump()
        >>> torch.load(base + "_tensordict.t", weights_only=True)["x"].shape
        torch.Size([3, 1])
    """

    def __init__(self, out_file_base: str, skip_reset: bool = True, skip: int = 4,
                 in_keys: Sequence[str] | None = None) -> None:
        if skip <= 0:
            raise ValueError(f"TensorDictRecorder: skip must be a positive integer, got {skip}")
        super().__init__(in_keys=[] if in_keys is None else in_keys)
        self.out_file_base = out_file_base
        self.skip_reset = skip_reset
        self.skip = skip
        self.td: list[TensorDictBase] = []
        self.count = 0
        self.iter = 0

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self.skip == 0:
            kept = next_tensordict.select(*self.in_keys) if self.in_keys else next_tensordict
            self.td.append(kept.to_tensordict())
        return next_tensordict

    def dump(self, suffix: str | None = None) -> None:
        """Writes the kept entries (see the class docstring) and clears them."""
        tds = self.td[1:] if self.skip_reset else self.td
        if tds:
            base = self.out_file_base if suffix is None else f"{self.out_file_base}_{suffix}"
            path = f"{base}_tensordict.t"
            tmp = f"{path}.tmp"
            torch.save(torch.stack(tds, 0).contiguous().to_dict(), tmp)
            os.replace(tmp, path)  # a crash never leaves a half-written file under the final name
        self.td = []
        self.iter += 1
        self.count = 0


class PixelRenderTransform(Transform):
    """Calls the parent env's ``render()`` after each reset and step and writes the image under ``out_keys[0]``.

    Args:
        out_keys: one key (default ``["pixels"]``).
        preproc: applied to the rendered array before it is written.
        as_non_tensor: write a ``NonTensorData`` (default: when a batched env renders one ``(H, W, 3)`` image).
        render_method: the name of the env method to call.
        pass_tensordict: pass the step output to the render method (stateless envs).
        **kwargs: keyword arguments of the render method.

    Examples:
        >>> import gymnasium as gym
        >>> from tdrl.envs import GymEnv, TransformedEnv
        >>> env = TransformedEnv(GymEnv("CartPole-v1", render_mode="rgb_array"), PixelRenderTransform())
        >>> env.reset()["pixels"].shape
        torch.Size([400, 600, 3])
    """

    def __init__(
        self,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        preproc: Callable[[np.ndarray | torch.Tensor], np.ndarray | torch.Tensor] | None = None,
        as_non_tensor: bool | None = None,
        render_method: str = "render",
        pass_tensordict: bool = False,
        **kwargs: Any,
    ) -> None:
        out_keys = ["pixels"] if out_keys is None else out_keys
        if isinstance(out_keys, (str, tuple)):
            out_keys = [out_keys]
        if len(out_keys) != 1:
            raise ValueError(f"PixelRenderTransform expects exactly one out_key, got out_keys={list(out_keys)}")
        super().__init__(in_keys=[], out_keys=out_keys)
        self.preproc = preproc
        self.as_non_tensor = as_non_tensor
        self.render_method = render_method
        self.pass_tensordict = pass_tensordict
        self.kwargs = kwargs
        self._enabled = True

    @property
    def enabled(self) -> bool:
        """Whether rendering is on."""
        return self._enabled

    def switch(self, mode: bool | Literal["on", "off"] | None = None) -> None:
        """Turns rendering on or off (``None`` flips it)."""
        if mode is None:
            mode = not self._enabled
        elif not isinstance(mode, bool):
            if mode not in ("on", "off"):
                raise ValueError(f"PixelRenderTransform.switch: mode must be 'on', 'off' or a bool, got {mode!r}")
            mode = mode == "on"
        self._enabled = mode

    def set_container(self, container: Any) -> None:
        super().set_container(container)
        parent = self.parent
        if parent is not None and not callable(getattr(parent, self.render_method, None)):
            raise ValueError(f"PixelRenderTransform: the env has no callable {self.render_method!r} method")

    def _render(self, next_tensordict: TensorDictBase) -> Any:
        method = getattr(self.parent, self.render_method)
        array = method(next_tensordict, **self.kwargs) if self.pass_tensordict else method(**self.kwargs)
        if self.preproc is not None:
            array = self.preproc(array)
        if isinstance(array, list):
            array = np.asarray(array) if array and isinstance(array[0], np.ndarray) else torch.as_tensor(array)
        return array

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self._enabled:
            return next_tensordict
        if self.parent is None:
            raise RuntimeError("PixelRenderTransform renders its parent env: attach it to a TransformedEnv first")
        array = self._render(next_tensordict)
        if self.as_non_tensor is None:
            self.as_non_tensor = array.ndim == 3 and array.shape[-1] == 3 and tuple(self.parent.batch_size) != ()
        if self.as_non_tensor:
            next_tensordict.set_non_tensor(self.out_keys[0], array)
            return next_tensordict
        value = torch.as_tensor(np.ascontiguousarray(array) if isinstance(array, np.ndarray) else array)
        try:
            next_tensordict.set(self.out_keys[0], value)
        except (RuntimeError, ValueError) as err:
            raise RuntimeError(
                f"PixelRenderTransform: cannot write the rendered array of shape {tuple(value.shape)} into a "
                f"tensordict of batch size {tuple(next_tensordict.batch_size)}; pass a preproc, render kwargs, "
                "or as_non_tensor=True"
            ) from err
        return next_tensordict

    def transform_observation_spec(self, observation_spec: Any) -> Any:
        # The image's shape is only known once the env renders: reset the parent once and look.
        was_enabled = self._enabled
        self._enabled = True
        try:
            sample = self._call(self.parent.reset())
        finally:
            self._enabled = was_enabled
        obs = sample.get(self.out_keys[0])
        if self.as_non_tensor:
            observation_spec[self.out_keys[0]] = NonTensor(shape=sample.batch_size, device=observation_spec.device)
        else:
            observation_spec[self.out_keys[0]] = Unbounded(shape=obs.shape, dtype=obs.dtype, device=obs.device)
        return observation_spec
