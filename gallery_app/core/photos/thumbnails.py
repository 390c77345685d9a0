"""Small, upright RGBA thumbnails for the grid, decoded without reading more pixels than needed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from gallery_app.core.photos.decode import decode_image


@dataclass(frozen=True)
class RgbaPixels:
    """Tightly packed 8-bit RGBA rows (R first in memory), ``width * 4`` bytes per row."""

    data: bytes
    width: int
    height: int


def load_thumbnail(path: Path, size: int = 256) -> RgbaPixels:
    """The photo turned upright (EXIF orientation) and scaled to fit ``size``×``size``.

    Raises ``PhotoSkipped`` (with the reason) for files that cannot be shown.
    """
    image = decode_image(path, max_side=size).rgb
    image.thumbnail((size, size), Image.Resampling.LANCZOS)
    rgba = image.convert("RGBA")
    return RgbaPixels(rgba.tobytes(), rgba.width, rgba.height)
