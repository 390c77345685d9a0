"""Decode a photo file into an upright RGB image, and read its capture time, place and camera.

Files that cannot be shown raise ``PhotoSkipped`` with a machine-readable ``reason`` so an import
can count and report them without stopping.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable

try:  # HEIC/HEIF/AVIF from phones
    import pillow_heif

    pillow_heif.register_heif_opener()
except ImportError:  # pragma: no cover - pillow-heif is a dependency; JPEG/PNG still work without it
    pillow_heif = None

# Pillow warns on stderr about images between its own pixel limit and twice that limit; decode_image applies
# ``max_pixels`` itself and reports such a file as skipped, so the raw warning only repeats it, worse.
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)

WHITE = (255, 255, 255)
SKIP_REASONS = ("empty", "corrupt", "truncated", "too many pixels", "unsupported", "missing")


class PhotoSkipped(AppError):
    """A file was left out; ``reason`` is one of ``SKIP_REASONS`` and the message names the file."""

    def __init__(self, path: Path, reason: str, detail: str):
        assert reason in SKIP_REASONS, reason
        super().__init__(f"{printable(Path(path).name)} was skipped: {detail}")
        self.path = Path(path)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class DecodedImage:
    rgb: Image.Image  # mode "RGB", upright, possibly scaled down
    width: int  # the full image, upright (not the scaled-down ``rgb``)
    height: int
    orientation: int  # EXIF orientation 1..8 that was applied (1 when absent or invalid)
    format: str | None  # Pillow's format name: "JPEG", "HEIF", "PNG", ...


@dataclass(frozen=True)
class PhotoMetadata:
    capture_time: datetime | None = None  # naive local time, as cameras write it
    gps: tuple[float, float] | None = None  # (latitude, longitude) in signed decimal degrees
    camera: str | None = None  # "Make Model"


def decode_image(path: Path | str, *, max_side: int | None = None, max_pixels: int = 100_000_000,
                 data: bytes | None = None, reduced_decode: bool = True) -> DecodedImage:
    """The photo at ``path`` upright and in RGB.

    With ``max_side`` the result is scaled down (never up) so its *shorter* side is ``max_side``: enough
    to centre-crop a ``max_side``² model input. JPEGs are then decoded at 1/2, 1/4 or 1/8 scale.
    ``data``, when given, is the file's content already read (so it is read once for hash and pixels);
    ``path`` then only names the file in messages. ``reduced_decode=False`` decodes every pixel before
    scaling down (only to measure what the reduced decode saves).
    """
    path = Path(path)
    try:
        if (len(data) if data is not None else path.stat().st_size) == 0:
            raise PhotoSkipped(path, "empty", "the file is empty (0 bytes).")
    except FileNotFoundError as exc:
        raise PhotoSkipped(path, "missing", "the file no longer exists.") from exc
    try:
        with Image.open(io.BytesIO(data) if data is not None else path) as image:
            # Opening reads only the header, so the size is known before any pixel is decoded.
            if image.width * image.height > max_pixels:
                raise PhotoSkipped(
                    path,
                    "too many pixels",
                    f"{image.width}×{image.height} is more than the {max_pixels:,} pixels allowed.",
                )
            return _decode_opened(image, max_side, reduced_decode)
    except PhotoSkipped:
        raise
    except FileNotFoundError as exc:
        raise PhotoSkipped(path, "missing", "the file no longer exists.") from exc
    except Image.DecompressionBombError as exc:
        raise PhotoSkipped(path, "too many pixels", "the image is too large to open safely.") from exc
    except UnidentifiedImageError as exc:
        # A known photo extension means the file is damaged; anything else is a format we cannot read.
        if path.suffix.lower() in Image.registered_extensions():
            raise PhotoSkipped(path, "corrupt", "the file is damaged and cannot be read as an image.") from exc
        raise PhotoSkipped(path, "unsupported", "this kind of file is not a supported photo format.") from exc
    except OSError as exc:
        if "truncated" in str(exc):
            raise PhotoSkipped(path, "truncated", "the file is cut short (an incomplete copy or download?).") from exc
        raise PhotoSkipped(path, "corrupt", f"the image data is damaged ({exc}).") from exc
    except (ValueError, SyntaxError, EOFError, RuntimeError) as exc:  # decoders' other complaints
        raise PhotoSkipped(path, "corrupt", f"the image data is damaged ({exc}).") from exc


def _decode_opened(image: Image.Image, max_side: int | None, reduced_decode: bool = True) -> DecodedImage:
    fmt = image.format
    orientation = _orientation(image)
    full_w, full_h = image.size
    if orientation in (5, 6, 7, 8):  # these turn the picture by 90°
        full_w, full_h = full_h, full_w
    if max_side and reduced_decode:
        # A square request keeps both sides >= max_side whatever the orientation (JPEG only; others ignore it).
        image.draft("RGB", (max_side, max_side))
    image.load()  # multi-frame files (MPO, HEIC bursts, GIF) stay on their first frame
    upright = ImageOps.exif_transpose(image)
    rgb = to_rgb(upright)
    if max_side and min(rgb.size) > max_side:
        scale = max_side / min(rgb.size)
        size = (max(max_side, round(rgb.width * scale)), max(max_side, round(rgb.height * scale)))
        rgb = rgb.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return DecodedImage(rgb, full_w, full_h, orientation, fmt)


def _orientation(image: Image.Image) -> int:
    # Pillow's getexif() also fills Orientation from XMP (tiff:Orientation) when EXIF lacks it.
    try:
        value = image.getexif().get(ExifTags.Base.Orientation, 1)
    except Exception:  # broken EXIF must not stop the picture from showing
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def to_rgb(image: Image.Image, background: tuple[int, int, int] = WHITE) -> Image.Image:
    """Any Pillow mode as 8-bit RGB (an RGB image is returned as is); transparency is composited over ``background``."""
    if image.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I"):
        # Pillow's convert("L") clips 16-bit values at 255 (nearly all white); scale 0..65535 to 0..255.
        values = np.asarray(image, dtype=np.float64)
        if not (image.mode == "I" and values.max(initial=0) <= 255):  # "I" may hold 8-bit values
            values = values / 257.0
        image = Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8), "L")
    elif image.mode == "F":
        image = Image.fromarray(np.clip(np.rint(np.asarray(image)), 0, 255).astype(np.uint8), "L")
    if image.mode == "RGB":
        return image
    has_alpha = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info
    if not has_alpha:
        return image.convert("RGB")
    rgba = image.convert("RGBA")
    canvas = Image.new("RGB", rgba.size, background)
    canvas.paste(rgba, mask=rgba.getchannel("A"))
    return canvas


# --- metadata -------------------------------------------------------------------------------------

_GPS_LAT_REF, _GPS_LAT, _GPS_LON_REF, _GPS_LON = 1, 2, 3, 4


def read_metadata(path: Path | str, *, data: bytes | None = None) -> PhotoMetadata:
    """Capture time, GPS position and camera from EXIF; any part that is missing or broken is ``None``.

    Never raises: metadata is a nice-to-have and must not stop an import.
    """
    try:
        with Image.open(io.BytesIO(data) if data is not None else path) as image:
            exif = image.getexif()
            xmp = image.info.get("xmp") or image.info.get("XML:com.adobe.xmp")
    except Exception:
        return PhotoMetadata()
    return PhotoMetadata(_safe(_capture_time, exif, xmp), _safe(_gps, exif), _safe(_camera, exif))


def _safe(func, *args):
    try:
        return func(*args)
    except Exception:  # malformed EXIF comes in endless varieties; treat each as "unknown"
        return None


def _capture_time(exif: Image.Exif, xmp) -> datetime | None:
    exif_ifd = _safe(exif.get_ifd, ExifTags.IFD.Exif) or {}
    for value in (
        exif_ifd.get(ExifTags.Base.DateTimeOriginal),
        exif_ifd.get(ExifTags.Base.DateTimeDigitized),
        exif.get(ExifTags.Base.DateTime),
    ):
        parsed = _safe(_parse_exif_time, value)
        if parsed:
            return parsed
    if xmp:  # e.g. scans and some HEICs keep the date only in XMP
        if isinstance(xmp, bytes):
            xmp = xmp.decode("utf-8", "replace")
        match = re.search(r"(?:DateTimeOriginal|DateCreated|CreateDate)[^0-9]{1,3}(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?)", xmp)
        if match:
            return datetime.fromisoformat(match[1])
    return None


def _parse_exif_time(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    text = value.strip("\x00 ")
    # EXIF writes "YYYY:MM:DD HH:MM:SS"; seconds are sometimes missing or the field is blank/zeros.
    for pattern in ("%Y:%m:%d %H:%M:%S", "%Y:%m:%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text[:19], pattern)
        except ValueError:
            continue
    return None


def _gps(exif: Image.Exif) -> tuple[float, float] | None:
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    if not gps or _GPS_LAT not in gps or _GPS_LON not in gps:
        return None
    lat = _degrees(gps[_GPS_LAT], gps.get(_GPS_LAT_REF, "N"), "S")
    lon = _degrees(gps[_GPS_LON], gps.get(_GPS_LON_REF, "E"), "W")
    if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    if lat == 0 and lon == 0:  # devices with location off write zeros (e.g. Apple Vision Pro): not a place
        return None
    return lat, lon


def _degrees(dms, ref, negative_ref: str) -> float | None:
    """(degrees, minutes, seconds) rationals and an N/S/E/W reference as signed decimal degrees."""
    parts = [float(x) for x in (dms if isinstance(dms, (tuple, list)) else (dms,))]
    if not parts or any(p != p for p in parts):  # NaN from a 0/0 rational
        return None
    value = sum(p / 60**i for i, p in enumerate(parts[:3]))
    if isinstance(ref, bytes):
        ref = ref.decode("ascii", "replace")
    return -value if str(ref).strip("\x00 ").upper().startswith(negative_ref) else value


def _camera(exif: Image.Exif) -> str | None:
    parts = []
    for tag in (ExifTags.Base.Make, ExifTags.Base.Model):
        value = exif.get(tag)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and value.strip("\x00 "):
            parts.append(value.strip("\x00 "))
    return " ".join(parts) or None
