"""Photos handed to the app one at a time: an uploaded file or a camera frame, kept as a copy.

The gallery keeps its own copy (under the data folder), so an upload stays searchable after the
original is moved or deleted, and a capture exists as a normal JPEG that any viewer can open.
"""

from __future__ import annotations

import io
import os
import tempfile
from datetime import datetime
from pathlib import Path

import apsw
from PIL import ExifTags, Image

from gallery_app.core import paths
from gallery_app.core.models.runtimes.clip import ClipVisionEncoder
from gallery_app.core.photos.decode import PhotoSkipped
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import PhotoRecord, PhotoSource, photo_by_id, photos_with_hashes
from gallery_app.core.photos.preparing import content_hash, is_photo_file, read_photo_file
from gallery_app.core.photos.thumbnails import remove_stale_temporaries

_CAPTURE_QUALITY = 95
_TEMPORARY_PREFIX = ".incoming-"


def write_atomically(target: Path, write) -> None:
    """Write a new file through ``write(out)``: it appears complete or not at all."""
    remove_stale_temporaries(f"{_TEMPORARY_PREFIX}*", target.parent)
    handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, suffix=target.suffix, dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _add_copy(conn: apsw.Connection, vision: ClipVisionEncoder, data: bytes, name: str, source: PhotoSource,
              write) -> tuple[PhotoRecord, bool]:
    """(record, newly added). Content already in the gallery is not added twice."""
    digest = content_hash(data)
    existing = photos_with_hashes(conn, [digest]).get(digest)
    if existing:
        return existing[0], False
    target = paths.library_dir(source.value + "s") / name
    if target.exists():
        target = target.with_name(f"{target.stem}-{digest[:8]}{target.suffix}")
    write_atomically(target, write)
    summary = PhotoIndexer(conn, vision, workers=1).add_files([target], source)
    if summary.skipped:
        target.unlink(missing_ok=True)
        raise summary.skipped[0]
    return photo_by_id(conn, summary.photo_ids[0]), True


def add_upload(conn: apsw.Connection, vision: ClipVisionEncoder, path: Path | str) -> tuple[PhotoRecord, bool]:
    """Copy a photo file into the gallery and index it; (record, newly added)."""
    path = Path(path).expanduser()
    if not is_photo_file(path):
        raise PhotoSkipped(path, "unsupported", "this kind of file is not a supported photo format.")
    data, _ = read_photo_file(path)
    return _add_copy(conn, vision, data, path.name, PhotoSource.UPLOAD, lambda out: out.write(data))


def add_capture(conn: apsw.Connection, vision: ClipVisionEncoder, frame_rgb: Image.Image,
                taken: datetime | None = None) -> tuple[PhotoRecord, bool]:
    """Keep a camera frame as a JPEG (with its capture time in EXIF) and index it."""
    taken = taken or datetime.now().replace(microsecond=0)
    exif = Image.Exif()
    exif[ExifTags.Base.DateTime] = taken.strftime("%Y:%m:%d %H:%M:%S")
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = taken.strftime("%Y:%m:%d %H:%M:%S")
    exif[ExifTags.Base.Software] = "gallery_app camera search"
    encoded = io.BytesIO()
    frame_rgb.convert("RGB").save(encoded, "JPEG", quality=_CAPTURE_QUALITY, exif=exif.tobytes())
    data = encoded.getvalue()
    return _add_copy(conn, vision, data, f"capture-{taken:%Y%m%d-%H%M%S}.jpg", PhotoSource.CAMERA,
                     lambda out: out.write(data))
