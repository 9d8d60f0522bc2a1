"""Video tensors to GIF bytes with Pillow (a matplotlib dependency), and to MP4 or GIF files (:class:`VideoWriter`).

TensorBoard and W&B both encode videos through moviepy, which tdrl does not require; the loggers use this
module instead, and write the same GIF image summary / media file those libraries would. TorchRL's
``CSVLogger`` writes MP4 through torchcodec, which does not install beside torch 2.13 here; PyAV writes the
same H.264 file.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor

__all__ = ["VideoWriter", "encode_gif", "to_uint8_frames", "write_mp4"]


def to_uint8_frames(video: Tensor) -> Tensor:
    """A ``(T, C, H, W)`` or ``(N, T, C, H, W)`` video as one ``(T, H, W, C)`` uint8 clip (N clips side by side).

    Float videos are read as values in ``[0, 1]``.

    Examples:
        >>> to_uint8_frames(torch.ones(2, 4, 3, 5, 6)).shape
        torch.Size([4, 5, 12, 3])
    """
    if video.ndim not in (4, 5) or video.shape[-3] not in (1, 3):
        raise ValueError(
            f"a video must be a (T, C, H, W) or (N, T, C, H, W) tensor with C in (1, 3), got shape {tuple(video.shape)}"
        )
    frames = video.detach().cpu()
    if frames.dtype != torch.uint8:
        frames = (frames.float().clamp(0, 1) * 255).round().to(torch.uint8)
    if frames.ndim == 5:
        frames = torch.cat(frames.unbind(0), dim=-1)  # side by side along the width
    return frames.permute(0, 2, 3, 1).contiguous()


def encode_gif(video: Tensor, *, fps: int = 30) -> tuple[bytes, tuple[int, int, int]]:
    """Encodes a video (see :func:`to_uint8_frames`) as an endlessly looping GIF.

    Returns:
        The GIF bytes and the ``(height, width, channels)`` of a frame.

    Examples:
        >>> data, shape = encode_gif(torch.zeros(3, 1, 4, 4, dtype=torch.uint8))
        >>> data[:6], shape
        (b'GIF89a', (4, 4, 1))
    """
    frames = to_uint8_frames(video).numpy()
    height, width, channels = frames.shape[1:]
    mode = "L" if channels == 1 else "RGB"
    images = [Image.fromarray(f[..., 0] if channels == 1 else f, mode=mode) for f in frames]
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(1, round(1000 / max(fps, 1))), loop=0)
    return buf.getvalue(), (height, width, channels)


def _pyav() -> Any:
    try:
        import av
    except ImportError as err:
        raise ImportError("writing MP4 videos needs PyAV: pip install 'tdrl[video]' (or pip install av)") from err
    return av


def _even(frame: np.ndarray) -> np.ndarray:
    # yuv420p stores colour at half resolution: both sides must be even.
    pad_h, pad_w = frame.shape[0] % 2, frame.shape[1] % 2
    return np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0))) if pad_h or pad_w else frame


class VideoWriter:
    """Writes ``(H, W, C)`` uint8 frames one at a time to an MP4 (PyAV, extra ``video``) or GIF (Pillow) file.

    Frames are encoded as they come (MP4) or kept as palette images (GIF, one byte a pixel), so a long
    episode never holds a full RGB video in memory. The format follows the file's suffix.

    Args:
        path: an ``.mp4`` or ``.gif`` file.
        fps: frames per second.
        video_codec: the FFmpeg encoder of an MP4.
        options: encoder options (``{"crf": "23"}``).

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "clip.gif")
        >>> with VideoWriter(path, fps=10) as writer:
        ...     for i in range(3):
        ...         writer.add(np.full((4, 6, 3), 80 * i, dtype=np.uint8))
        >>> writer.frames, Image.open(path).n_frames
        (3, 3)
    """

    def __init__(self, path: str | os.PathLike, *, fps: int = 30, video_codec: str = "libx264",
                 options: dict[str, str] | None = None) -> None:
        self.path, self.fps = str(path), int(fps)
        suffix = os.path.splitext(self.path)[1].lower()
        if suffix not in (".mp4", ".gif"):
            raise ValueError(f"VideoWriter writes .mp4 or .gif files, got {self.path!r}")
        self.gif = suffix == ".gif"
        self.frames = 0
        self._images: list[Image.Image] = []
        self._container: Any = None
        self._av: Any = None if self.gif else _pyav()
        self._codec, self._options = video_codec, dict(options or {})

    def add(self, frame: np.ndarray | Tensor) -> None:
        """Appends one ``(H, W, 3)`` (or ``(H, W, 1)``, ``(H, W)``) uint8 frame."""
        array = np.asarray(frame.cpu() if isinstance(frame, Tensor) else frame)
        if array.ndim == 2:
            array = array[..., None]
        if array.ndim != 3 or array.shape[-1] not in (1, 3) or array.dtype != np.uint8:
            raise ValueError(f"VideoWriter.add: expected an (H, W, 3) uint8 frame, got shape {array.shape} "
                             f"and dtype {array.dtype}")
        if array.shape[-1] == 1:
            array = np.repeat(array, 3, axis=-1)
        if self.gif:
            self._images.append(Image.fromarray(array, mode="RGB").quantize(256))
        else:
            self._encode(_even(np.ascontiguousarray(array)))
        self.frames += 1

    def _encode(self, array: np.ndarray) -> None:
        av = self._av
        if self._container is None:
            self._container = av.open(self.path, mode="w")
            self._stream = self._container.add_stream(self._codec, rate=self.fps, options=self._options)
            self._stream.width, self._stream.height = array.shape[1], array.shape[0]
            self._stream.pix_fmt = "yuv420p"
        self._container.mux(self._stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")))

    def close(self) -> int:
        """Finishes the file and returns the number of frames written (a writer with no frame writes nothing)."""
        if self.gif and self._images:
            first, *rest = self._images
            first.save(self.path, format="GIF", save_all=True, append_images=rest,
                       duration=max(1, round(1000 / max(self.fps, 1))), loop=0)
            self._images = []
        elif self._container is not None:
            self._container.mux(self._stream.encode())
            self._container.close()
            self._container = None
        return self.frames

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_mp4(path: str | os.PathLike, video: Tensor, *, fps: int = 30, video_codec: str = "libx264",
              options: dict[str, str] | None = None) -> None:
    """Writes a video (see :func:`to_uint8_frames`) as an H.264 MP4 file.

    Frames are padded to even sizes (yuv420p needs them) and grayscale is repeated over three channels.

    Args:
        path: the file to write.
        video: ``(T, C, H, W)`` or ``(N, T, C, H, W)``; floats in ``[0, 1]`` or uint8.
        fps: frames per second.
        video_codec: an FFmpeg encoder name.
        options: encoder options (``{"crf": "23"}``).

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
        >>> write_mp4(path, torch.zeros(2, 3, 5, 7))
        >>> os.path.getsize(path) > 0
        True
    """
    with VideoWriter(path, fps=fps, video_codec=video_codec, options=options) as writer:
        for frame in to_uint8_frames(video).numpy():
            writer.add(frame)
