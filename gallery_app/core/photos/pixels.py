"""Raw pixel buffers with an explicit memory layout, and one honest conversion to RGB.

Every source of pixels (Pillow, NumPy/OpenCV, Qt) stores channels in its own byte order.
Guessing that order is how red and blue get swapped silently, so a ``PixelBuffer`` must
always say its layout, and ``to_rgb_array`` converts each layout by an explicit table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
from PIL import Image

from gallery_app.core.errors import AppError


class PixelLayout(Enum):
    """Byte order of one pixel *in memory* (not of a packed integer word)."""

    RGB888 = "RGB888"
    BGR888 = "BGR888"
    RGBA8888 = "RGBA8888"
    BGRA8888 = "BGRA8888"
    ARGB8888 = "ARGB8888"  # bytes A, R, G, B
    RGBX8888 = "RGBX8888"  # 4th byte is padding, ignored
    BGRX8888 = "BGRX8888"
    GRAY8 = "GRAY8"

    @property
    def bytes_per_pixel(self) -> int:
        return _BYTES_PER_PIXEL[self]


_BYTES_PER_PIXEL = {
    PixelLayout.RGB888: 3,
    PixelLayout.BGR888: 3,
    PixelLayout.RGBA8888: 4,
    PixelLayout.BGRA8888: 4,
    PixelLayout.ARGB8888: 4,
    PixelLayout.RGBX8888: 4,
    PixelLayout.BGRX8888: 4,
    PixelLayout.GRAY8: 1,
}

# Byte offset of R, G, B and alpha (None: opaque) inside one pixel, per layout.
_OFFSETS: dict[PixelLayout, tuple[int, int, int, int | None]] = {
    PixelLayout.RGB888: (0, 1, 2, None),
    PixelLayout.BGR888: (2, 1, 0, None),
    PixelLayout.RGBA8888: (0, 1, 2, 3),
    PixelLayout.BGRA8888: (2, 1, 0, 3),
    PixelLayout.ARGB8888: (1, 2, 3, 0),
    PixelLayout.RGBX8888: (0, 1, 2, None),
    PixelLayout.BGRX8888: (2, 1, 0, None),
    PixelLayout.GRAY8: (0, 0, 0, None),
}


class PixelBufferError(AppError):
    """A pixel buffer does not match the size or layout it claims."""


@dataclass(frozen=True)
class PixelBuffer:
    """``height`` rows of ``width`` pixels in ``layout``; each row starts ``stride`` bytes after the previous."""

    data: bytes | bytearray | memoryview | np.ndarray
    width: int
    height: int
    layout: PixelLayout
    stride: int

    def __post_init__(self) -> None:
        if not isinstance(self.layout, PixelLayout):
            raise PixelBufferError(f"A pixel buffer needs an explicit PixelLayout, not {self.layout!r}.")
        if self.width <= 0 or self.height <= 0:
            raise PixelBufferError(f"An image of {self.width}×{self.height} pixels has nothing to show.")
        row = self.width * self.layout.bytes_per_pixel
        if self.stride < row:
            raise PixelBufferError(
                f"A row of {self.width} {self.layout.value} pixels needs {row} bytes, but the stride is {self.stride}."
            )
        if isinstance(self.data, np.ndarray) and self.data.dtype != np.uint8:
            raise PixelBufferError(f"Pixel data must be 8-bit (uint8), not {self.data.dtype}.")
        # The last row may stop right after its pixels, without the padding of the others.
        needed = self.stride * (self.height - 1) + row
        have = _flat_bytes(self.data).size
        if have < needed:
            raise PixelBufferError(
                f"The pixel data is too short: {self.width}×{self.height} {self.layout.value} "
                f"with stride {self.stride} needs {needed} bytes, got {have}."
            )


def _flat_bytes(data) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1)
    return np.frombuffer(data, dtype=np.uint8)


def to_rgb_array(buffer: PixelBuffer, *, background: tuple[int, int, int] = (255, 255, 255)) -> np.ndarray:
    """A new ``(height, width, 3)`` uint8 RGB array; alpha is composited over ``background``."""
    bpp = buffer.layout.bytes_per_pixel
    flat = _flat_bytes(buffer.data)
    # A strided view reads each row at its own offset, so row padding is skipped without copying.
    pixels = np.lib.stride_tricks.as_strided(
        flat, shape=(buffer.height, buffer.width, bpp), strides=(buffer.stride, bpp, 1), writeable=False
    )
    r, g, b, a = _OFFSETS[buffer.layout]
    rgb = pixels[:, :, [r, g, b]]
    if a is None:
        return np.ascontiguousarray(rgb)
    alpha = pixels[:, :, a : a + 1].astype(np.uint32)
    bg = np.asarray(background, dtype=np.uint32).reshape(1, 1, 3)
    # Straight (non-premultiplied) alpha, rounded to nearest: out = (c·a + bg·(255−a)) / 255.
    out = (rgb.astype(np.uint32) * alpha + bg * (255 - alpha) + 127) // 255
    return out.astype(np.uint8)


def from_pil(image: Image.Image) -> PixelBuffer:
    """A tightly packed buffer of a Pillow image (RGB, RGBA or grey; other modes are converted first)."""
    if image.mode not in ("RGB", "RGBA", "L"):
        has_alpha = "A" in image.getbands() or "transparency" in image.info
        image = image.convert("RGBA" if has_alpha else "RGB")
    layout = {"RGB": PixelLayout.RGB888, "RGBA": PixelLayout.RGBA8888, "L": PixelLayout.GRAY8}[image.mode]
    return PixelBuffer(image.tobytes(), image.width, image.height, layout, image.width * layout.bytes_per_pixel)


def from_numpy(array: np.ndarray, layout: PixelLayout) -> PixelBuffer:
    """A buffer over an ``(h, w)`` or ``(h, w, channels)`` uint8 array whose channel order is ``layout``.

    NumPy has no notion of channel order (OpenCV arrays are BGR), so the caller must say it.
    """
    if array.dtype != np.uint8:
        raise PixelBufferError(f"Pixel arrays must be uint8, not {array.dtype}.")
    bpp = layout.bytes_per_pixel
    shape_ok = (array.ndim == 3 and array.shape[2] == bpp) or (array.ndim == 2 and bpp == 1)
    if not shape_ok:
        raise PixelBufferError(f"An array of shape {array.shape} cannot hold {layout.value} pixels ({bpp} bytes each).")
    array = np.ascontiguousarray(array)
    height, width = array.shape[:2]
    return PixelBuffer(array, width, height, layout, width * bpp)
