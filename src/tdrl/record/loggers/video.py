"""Video tensors to GIF bytes with Pillow (a matplotlib dependency), and to MP4 files with PyAV (extra ``video``).

TensorBoard and W&B both encode videos through moviepy, which tdrl does not require; the loggers use this
module instead, and write the same GIF image summary / media file those libraries would. TorchRL's
``CSVLogger`` writes MP4 through torchcodec, which does not install beside torch 2.13 here; PyAV writes the
same H.264 file.
"""

from __future__ import annotations

import io
import os
from typing import Any

import torch
from PIL import Image
from torch import Tensor

__all__ = ["encode_gif", "to_uint8_frames", "write_mp4"]


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
    av = _pyav()
    frames = to_uint8_frames(video)
    if frames.shape[-1] == 1:
        frames = frames.expand(*frames.shape[:-1], 3)
    height, width = frames.shape[1], frames.shape[2]
    pad_h, pad_w = height % 2, width % 2
    if pad_h or pad_w:
        frames = torch.nn.functional.pad(frames.permute(0, 3, 1, 2), (0, pad_w, 0, pad_h)).permute(0, 2, 3, 1)
    array = frames.contiguous().numpy()
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(video_codec, rate=int(fps), options=dict(options or {}))
        stream.width, stream.height = array.shape[2], array.shape[1]
        stream.pix_fmt = "yuv420p"
        for frame in array:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
