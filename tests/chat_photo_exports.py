"""WhatsApp exports with photos, made in a test: small distinct JPEGs, the chat lines attaching them, the .zip.

The lines are in the iOS layout WhatsApp writes into a "with media" export
(``[20.06.19, 16:00:15] Loris: <attached: 00000001-PHOTO-2019-06-20-16-00-15.jpg>``).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image


def jpeg_bytes(number: int, size: tuple[int, int] = (48, 32)) -> bytes:
    """A small JPEG whose colours (and so content hash) differ for every ``number``."""
    colour = ((number * 37) % 256, (number * 91 + 40) % 256, (number * 53 + 120) % 256)
    image = Image.new("RGB", size, colour)
    image.putpixel((number % size[0], (number // size[0]) % size[1]), (255 - colour[0], 0, 255))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width``×``height`` grey pixels, with almost no image data."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
            + chunk(b"IEND", b""))


def line(when: datetime, sender: str, text: str) -> str:
    return f"[{when:%d.%m.%y, %H:%M:%S}] {sender}: {text}"


def attached(name: str) -> str:
    return f"<attached: {name}>"


def photo_name(number: int, when: datetime) -> str:
    """WhatsApp's own naming: ``00000001-PHOTO-2019-06-20-16-00-15.jpg``."""
    return f"{number:08d}-PHOTO-{when:%Y-%m-%d-%H-%M-%S}.jpg"


def photo_chat(count: int, *, start: datetime = datetime(2024, 5, 18, 9, 0), senders: Sequence[str] = ("Maya", "Daniel"),
               first_number: int = 1) -> tuple[list[str], dict[str, bytes]]:
    """A chat of ``count`` photos, each attached by a message with a word before it: (lines, members)."""
    lines, members = [], {}
    for offset in range(count):
        number = first_number + offset
        when = start + timedelta(minutes=3 * offset)
        sender = senders[offset % len(senders)]
        name = photo_name(number, when)
        lines.append(line(when - timedelta(seconds=20), sender, f"photo number {number} coming"))
        lines.append(line(when, sender, attached(name)))
        members[name] = jpeg_bytes(number)
    return lines, members


def write_export(path: Path, lines: Iterable[str], members: dict[str, bytes] | None = None, *,
                 stored: Iterable[str] = ()) -> Path:
    """A WhatsApp-style .zip: ``_chat.txt`` and the members (deflated, except those named in ``stored``)."""
    stored = set(stored)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_chat.txt", "\n".join(lines) + "\n")
        for name, data in (members or {}).items():
            archive.writestr(name, data, compress_type=zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED)
    return path
