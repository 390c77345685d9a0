"""QImage pixels reach the core with the right channel order for every common QImage format."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from PySide6.QtGui import QImage

from gallery_app.core.photos.pixels import PixelLayout, from_pil, to_rgb_array
from gallery_app.ui.qt_pixels import pixel_buffer_from_qimage
from tests.conftest import SHARED_FIXTURES, require_shared_fixtures

HOPPER = SHARED_FIXTURES / "photos" / "pillow" / "hopper.png"

COLOUR_FORMATS = [
    QImage.Format.Format_RGB32,
    QImage.Format.Format_ARGB32,
    QImage.Format.Format_ARGB32_Premultiplied,
    QImage.Format.Format_RGBA8888,
    QImage.Format.Format_RGBX8888,
    QImage.Format.Format_RGB888,
    QImage.Format.Format_BGR888,
    QImage.Format.Format_RGBA8888_Premultiplied,  # not mapped directly: goes through the RGBA8888 fallback
    QImage.Format.Format_RGB16,  # lossy 5-6-5; only used below for the red-pixel check
]


def synthetic() -> Image.Image:
    """Odd width (rows need padding in 3-byte formats) with pure red, green and blue pixels at known places."""
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    pixels[0, 0], pixels[0, 1], pixels[0, 2] = (255, 0, 0), (0, 255, 0), (0, 0, 255)
    return Image.fromarray(pixels, "RGB")


def qimage_from_pil(image: Image.Image) -> QImage:
    """Through PNG bytes, so Qt decodes the file itself and no byte order is assumed by the test."""
    data = io.BytesIO()
    image.save(data, "PNG")
    qimage = QImage.fromData(data.getvalue())
    assert not qimage.isNull()
    return qimage


def sources():
    require_shared_fixtures()
    with Image.open(HOPPER) as hopper:
        hopper.load()
        return {"hopper.png": (hopper.convert("RGB"), QImage(str(HOPPER))), "synthetic": (synthetic(), qimage_from_pil(synthetic()))}


@pytest.mark.parametrize("fmt", COLOUR_FORMATS[:-1], ids=lambda f: f.name)
def test_every_colour_format_matches_the_pillow_path(qapp, fmt):
    for name, (pil_image, qimage) in sources().items():
        expected = to_rgb_array(from_pil(pil_image))
        converted = qimage.convertToFormat(fmt)
        assert converted.format() == fmt
        buffer = pixel_buffer_from_qimage(converted)
        np.testing.assert_array_equal(to_rgb_array(buffer), expected, err_msg=f"{name} as {fmt.name}")


@pytest.mark.parametrize("fmt", COLOUR_FORMATS, ids=lambda f: f.name)
def test_a_red_pixel_stays_red(qapp, fmt):
    buffer = pixel_buffer_from_qimage(qimage_from_pil(synthetic()).convertToFormat(fmt))
    rgb = to_rgb_array(buffer)
    assert rgb[0, 0].tolist() == [255, 0, 0]
    assert rgb[0, 1].tolist() == [0, 255, 0]
    assert rgb[0, 2].tolist() == [0, 0, 255]


@pytest.mark.shared_fixtures
def test_grey_compared_with_grey(qapp):
    # Qt and Pillow use different RGB→grey weights, so start from a grey image on both sides.
    with Image.open(HOPPER) as hopper:
        grey = hopper.convert("L")
    qimage = qimage_from_pil(grey).convertToFormat(QImage.Format.Format_Grayscale8)
    buffer = pixel_buffer_from_qimage(qimage)
    assert buffer.layout is PixelLayout.GRAY8
    np.testing.assert_array_equal(to_rgb_array(buffer), to_rgb_array(from_pil(grey)))


def test_word_formats_follow_the_machine_byte_order(qapp):
    import sys

    buffer = pixel_buffer_from_qimage(qimage_from_pil(synthetic()).convertToFormat(QImage.Format.Format_ARGB32))
    expected = PixelLayout.BGRA8888 if sys.byteorder == "little" else PixelLayout.ARGB8888
    assert buffer.layout is expected


def test_premultiplied_alpha_is_undone_before_compositing(qapp):
    image = QImage(2, 1, QImage.Format.Format_ARGB32)
    image.setPixel(0, 0, 0x80FF0000)  # half-transparent red
    image.setPixel(1, 0, 0x00000000)  # fully transparent
    premultiplied = image.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
    rgb = to_rgb_array(pixel_buffer_from_qimage(premultiplied))
    # Half red over white is pink (255, 127, 127), not the dark red a premultiplied value would give.
    assert rgb[0, 0].tolist() == [255, 127, 127]
    assert rgb[0, 1].tolist() == [255, 255, 255]


def test_the_buffer_is_a_copy_that_outlives_the_qimage(qapp):
    qimage = qimage_from_pil(synthetic()).convertToFormat(QImage.Format.Format_RGB888)
    buffer = pixel_buffer_from_qimage(qimage)
    assert buffer.stride == qimage.bytesPerLine() == 16  # 5 × 3 = 15 bytes, padded to 16
    qimage.fill(0)
    del qimage
    assert to_rgb_array(buffer)[0, 0].tolist() == [255, 0, 0]
