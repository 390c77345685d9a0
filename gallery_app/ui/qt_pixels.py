"""QImage → PixelBuffer with the byte order Qt really uses in memory.

Qt names some formats after a packed 32-bit word (Format_RGB32/ARGB32 are 0xAARRGGBB), so their
byte order depends on the machine's endianness; others (RGBA8888, RGB888, ...) are named by byte order.
"""

from __future__ import annotations

import sys

from PySide6.QtGui import QImage

from gallery_app.core.photos.pixels import PixelBuffer, PixelLayout

_LITTLE = sys.byteorder == "little"

# 0xAARRGGBB words: bytes B,G,R,A on little-endian machines, A,R,G,B on big-endian ones.
# (RGB32 always has 0xFF in the A byte, so reading it as alpha on big-endian is harmless.)
_WORD_ARGB = PixelLayout.BGRA8888 if _LITTLE else PixelLayout.ARGB8888
_WORD_XRGB = PixelLayout.BGRX8888 if _LITTLE else PixelLayout.ARGB8888

_LAYOUTS = {
    QImage.Format.Format_RGB32: _WORD_XRGB,
    QImage.Format.Format_ARGB32: _WORD_ARGB,
    QImage.Format.Format_RGBA8888: PixelLayout.RGBA8888,
    QImage.Format.Format_RGBX8888: PixelLayout.RGBX8888,
    QImage.Format.Format_RGB888: PixelLayout.RGB888,
    QImage.Format.Format_BGR888: PixelLayout.BGR888,
    QImage.Format.Format_Grayscale8: PixelLayout.GRAY8,
}


def pixel_buffer_from_qimage(image: QImage) -> PixelBuffer:
    """A copy of ``image``'s pixels (safe to keep after the QImage is gone) with its declared layout."""
    if image.format() == QImage.Format.Format_ARGB32_Premultiplied:
        # PixelBuffer alpha is straight (not premultiplied); Qt un-premultiplies for us.
        image = image.convertToFormat(QImage.Format.Format_ARGB32)
    elif image.format() not in _LAYOUTS:  # indexed, 16-bit, premultiplied RGBA, ... : one known format
        image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    layout = _LAYOUTS[image.format()]
    stride = image.bytesPerLine()  # rows are padded to 4 bytes, so this can exceed width × bytes-per-pixel
    data = bytes(image.constBits())[: stride * image.height()]
    return PixelBuffer(data, image.width(), image.height(), layout, stride)
