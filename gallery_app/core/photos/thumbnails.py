"""Small, upright thumbnails for the grid, cached on disk by the photo's content hash.

The cache key is the content, not the path, so a renamed or copied photo reuses its thumbnail
and an edited one gets a new thumbnail. Files are written under a temporary name and renamed,
so a crash never leaves a half-written thumbnail that would be shown later.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from gallery_app.core import paths
from gallery_app.core.photos.decode import decode_image

THUMBNAIL_SIZE = 256
_JPEG_QUALITY = 85
_TEMPORARY_PREFIX = ".thumb-"
#: Writing a thumbnail takes milliseconds, so a temporary file this old was left by a run that was killed;
#: a newer one may belong to another process indexing right now.
STALE_AFTER_SECONDS = 600


@dataclass(frozen=True)
class RgbaPixels:
    """Tightly packed 8-bit RGBA rows (R first in memory), ``width * 4`` bytes per row."""

    data: bytes
    width: int
    height: int


def thumbnail_path(content_hash: str) -> Path:
    # Two-letter fan-out keeps any one folder small for file managers and old file systems.
    return paths.thumbnails_dir() / content_hash[:2] / f"{content_hash}.jpg"


def fit_thumbnail(upright_rgb: Image.Image, size: int = THUMBNAIL_SIZE) -> Image.Image:
    thumbnail = upright_rgb.copy()
    thumbnail.thumbnail((size, size), Image.Resampling.LANCZOS)
    return thumbnail


def save_thumbnail(upright_rgb: Image.Image, content_hash: str, size: int = THUMBNAIL_SIZE) -> Path:
    """Write the cached thumbnail for ``content_hash`` unless it is already there."""
    target = thumbnail_path(content_hash)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, suffix=".jpg", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            fit_thumbnail(upright_rgb, size).save(out, "JPEG", quality=_JPEG_QUALITY)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def remove_stale_temporaries(pattern: str = f"*/{_TEMPORARY_PREFIX}*.jpg", folder: Path | None = None,
                             max_age: float = STALE_AFTER_SECONDS) -> int:
    """Delete half-written files matching ``pattern`` under ``folder`` (the thumbnail cache) left by killed runs."""
    cutoff = time.time() - max_age
    removed = 0
    for leftover in (folder or paths.thumbnails_dir()).glob(pattern):
        try:
            if leftover.stat().st_mtime < cutoff:
                leftover.unlink()
                removed += 1
        except OSError:  # gone already (another run cleaned it) or not ours to delete: leave it
            continue
    return removed


def _rgba(image: Image.Image) -> RgbaPixels:
    rgba = image.convert("RGBA")
    return RgbaPixels(rgba.tobytes(), rgba.width, rgba.height)


def load_thumbnail(path: Path, size: int = THUMBNAIL_SIZE, *, content_hash: str | None = None) -> RgbaPixels:
    """The photo turned upright (EXIF orientation) and scaled to fit ``size``×``size``.

    Served from the cache when the photo's hash is known and its thumbnail was made; otherwise decoded
    from the photo. Raises ``PhotoSkipped`` (with the reason) for files that cannot be shown.
    """
    if content_hash and size <= THUMBNAIL_SIZE:
        try:
            with Image.open(thumbnail_path(content_hash)) as image:
                image.load()
                return _rgba(fit_thumbnail(image, size))
        except OSError:
            pass  # not cached yet, or unreadable: decode the photo itself
    return _rgba(fit_thumbnail(decode_image(path, max_side=size).rgb, size))
