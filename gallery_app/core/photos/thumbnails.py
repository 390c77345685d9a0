"""Small, upright RGBA thumbnails for the grid, decoded without reading more pixels than needed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from gallery_app.core.errors import AppError

try:  # HEIC/HEIF/AVIF from phones
    import pillow_heif

    pillow_heif.register_heif_opener()
except ImportError:  # pragma: no cover - pillow-heif is a dependency; this keeps JPEG/PNG working without it
    pillow_heif = None


class PhotoError(AppError):
    """A photo could not be read; the message names the file and why."""


@dataclass(frozen=True)
class RgbaPixels:
    """Tightly packed 8-bit RGBA rows (R first in memory), ``width * 4`` bytes per row."""

    data: bytes
    width: int
    height: int


def load_thumbnail(path: Path, size: int = 256) -> RgbaPixels:
    """The photo turned upright (EXIF orientation) and scaled to fit ``size``×``size``."""
    try:
        with Image.open(path) as image:
            # JPEG draft mode decodes at 1/2, 1/4 or 1/8 scale: far less work for a thumbnail.
            image.draft("RGB", (size * 2, size * 2))
            image = ImageOps.exif_transpose(image)
            image.thumbnail((size, size), Image.Resampling.LANCZOS)
            rgba = image.convert("RGBA")
            return RgbaPixels(rgba.tobytes(), rgba.width, rgba.height)
    except FileNotFoundError as exc:
        raise PhotoError(f"{path.name} no longer exists.") from exc
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise PhotoError(f"{path.name} could not be read as a photo ({exc}).") from exc
