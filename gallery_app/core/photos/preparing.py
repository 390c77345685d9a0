"""One photo file → everything the index needs: hashes, size, metadata, thumbnail and model input.

Runs on worker threads (Pillow, hashlib and NumPy release the GIL for the heavy parts), so it
touches no database and no model. Each file is read once: the same bytes are hashed and decoded.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from gallery_app.core.photos.clip_preprocess import preprocess
from gallery_app.core.photos.decode import PhotoMetadata, PhotoSkipped, decode_image, read_metadata
from gallery_app.core.photos.perceptual_hash import difference_hash
from gallery_app.core.photos.thumbnails import THUMBNAIL_SIZE, save_thumbnail

#: File name endings taken for photos; anything else in a folder is ignored, not reported.
PHOTO_SUFFIXES = frozenset({
    ".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff",
    ".heic", ".heif", ".hif", ".avif", ".mpo",
})
#: Decoding to this shorter side covers both the 224-pixel model input and the 256-pixel thumbnail.
DECODE_SIDE = max(THUMBNAIL_SIZE, 224)


def is_photo_file(path: Path) -> bool:
    return path.suffix.lower() in PHOTO_SUFFIXES and not path.name.startswith(".")


#: What a file that is not a regular file is, for the skip message.
_FILE_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def read_photo_file(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file (links to one are followed) and its stat; ``PhotoSkipped`` otherwise.

    Opened without blocking and checked on the open descriptor: reading a named pipe called ``fifo.jpg``
    would wait forever, and a link named ``zero.jpg`` to ``/dev/zero`` would never end.
    """
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError as exc:
        raise PhotoSkipped(path, "missing", "the file no longer exists.") from exc
    except OSError as exc:
        raise PhotoSkipped(path, "unsupported", f"it cannot be read ({exc.strerror or exc}).") from exc
    info = os.fstat(handle)
    if not stat.S_ISREG(info.st_mode):
        os.close(handle)
        kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "something else")
        raise PhotoSkipped(path, "unsupported", f"it is not a regular file but {kind}.")
    with os.fdopen(handle, "rb") as file:
        try:
            return file.read(), info
        except OSError as exc:
            raise PhotoSkipped(path, "unsupported", f"it cannot be read ({exc.strerror or exc}).") from exc


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class PreparedPhoto:
    path: Path
    content_hash: str
    file_size: int
    mtime_ns: int
    width: int = 0
    height: int = 0
    format: str | None = None
    metadata: PhotoMetadata | None = None
    pixel_values: np.ndarray | None = None  # (3, 224, 224) float32; None when the vector is reused
    perceptual_hash: str | None = None  # None when not decoded (its twin's is reused)
    skipped: PhotoSkipped | None = None

    def row_values(self) -> dict:
        metadata = self.metadata or PhotoMetadata()
        latitude, longitude = metadata.gps or (None, None)
        return {
            "path": str(self.path), "content_hash": self.content_hash, "file_size": self.file_size,
            "mtime_ns": self.mtime_ns, "width": self.width, "height": self.height, "format": self.format,
            "captured_at": metadata.capture_time.isoformat() if metadata.capture_time else None,
            "latitude": latitude, "longitude": longitude, "camera": metadata.camera,
            "perceptual_hash": self.perceptual_hash,
        }


def model_input(upright_rgb: Image.Image) -> np.ndarray:
    """CLIP's (3, 224, 224) float32 input for one upright RGB image."""
    return preprocess([upright_rgb])[0]


def prepare_photo(path: Path, *, known_hashes: frozenset[str] | set[str] = frozenset(),
                  max_pixels: int = 100_000_000) -> PreparedPhoto:
    """Read, hash and (unless its content is already indexed) decode one photo. Never raises for bad files."""
    try:
        data, info = read_photo_file(path)
    except PhotoSkipped as skipped:
        return PreparedPhoto(path, "", 0, 0, skipped=skipped)
    prepared = PreparedPhoto(path, content_hash(data), len(data), info.st_mtime_ns)
    if prepared.content_hash in known_hashes:
        return prepared  # a copy or a moved file: its vector, size and thumbnail already exist
    try:
        decoded = decode_image(path, max_side=DECODE_SIDE, max_pixels=max_pixels, data=data)
    except PhotoSkipped as skipped:
        prepared.skipped = skipped
        return prepared
    prepared.width, prepared.height, prepared.format = decoded.width, decoded.height, decoded.format
    prepared.metadata = read_metadata(path, data=data)
    save_thumbnail(decoded.rgb, prepared.content_hash)
    prepared.perceptual_hash = difference_hash(decoded.rgb)  # a 9×8 resize of the picture already decoded
    prepared.pixel_values = model_input(decoded.rgb)
    return prepared
