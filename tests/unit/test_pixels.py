"""Every layout converts to the same RGB; a wrongly declared order is caught, not silently accepted."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from gallery_app.core.errors import AppError
from gallery_app.core.photos.pixels import PixelBuffer, PixelLayout, from_numpy, from_pil, to_rgb_array

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)


def synthetic_rgb(width: int = 7, height: int = 5) -> np.ndarray:
    """A deterministic image with pure red, green and blue pixels at known places (odd width: no padding luck)."""
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    rgb[0, 0], rgb[0, 1], rgb[0, 2] = RED, GREEN, BLUE
    return rgb


def padded(array: np.ndarray, layout: PixelLayout, extra: int) -> PixelBuffer:
    """The same pixels with ``extra`` junk bytes at the end of every row."""
    h, w = array.shape[:2]
    rows = array.reshape(h, -1)
    junk = np.full((h, extra), 0xAB, dtype=np.uint8)
    data = np.hstack([rows, junk]).tobytes()
    return PixelBuffer(data, w, h, layout, rows.shape[1] + extra)


def test_every_layout_gives_the_same_rgb():
    rgb = synthetic_rgb()
    r, g, b = (rgb[:, :, i] for i in range(3))
    opaque = np.full_like(r, 255)
    sources = {
        "pillow": from_pil(Image.fromarray(rgb, "RGB")),
        "numpy RGB": from_numpy(rgb, PixelLayout.RGB888),
        "numpy BGR (OpenCV)": from_numpy(rgb[:, :, ::-1], PixelLayout.BGR888),
        "RGBA": from_numpy(np.dstack([r, g, b, opaque]), PixelLayout.RGBA8888),
        "BGRA": from_numpy(np.dstack([b, g, r, opaque]), PixelLayout.BGRA8888),
        "ARGB": from_numpy(np.dstack([opaque, r, g, b]), PixelLayout.ARGB8888),
        # X bytes are padding: deliberately not 255, and must be ignored.
        "RGBX": from_numpy(np.dstack([r, g, b, np.zeros_like(r)]), PixelLayout.RGBX8888),
        "BGRX": from_numpy(np.dstack([b, g, r, np.zeros_like(r)]), PixelLayout.BGRX8888),
        "RGB padded stride": padded(rgb, PixelLayout.RGB888, extra=3),
        "BGRA padded stride": padded(np.dstack([b, g, r, opaque]), PixelLayout.BGRA8888, extra=8),
        "raw bytes": PixelBuffer(rgb.tobytes(), 7, 5, PixelLayout.RGB888, 21),
        "memoryview": PixelBuffer(memoryview(rgb.tobytes()), 7, 5, PixelLayout.RGB888, 21),
    }
    for name, buffer in sources.items():
        out = to_rgb_array(buffer)
        assert out.shape == (5, 7, 3) and out.dtype == np.uint8, name
        np.testing.assert_array_equal(out, rgb, err_msg=name)
        assert tuple(out[0, 0]) == RED, name


def test_last_row_may_omit_its_padding():
    rgb = synthetic_rgb()
    full = padded(rgb, PixelLayout.RGB888, extra=3)
    trimmed = PixelBuffer(bytes(full.data)[:-3], 7, 5, PixelLayout.RGB888, full.stride)
    np.testing.assert_array_equal(to_rgb_array(trimmed), rgb)


def test_grey_becomes_three_equal_channels():
    grey = np.arange(35, dtype=np.uint8).reshape(5, 7)
    out = to_rgb_array(from_numpy(grey, PixelLayout.GRAY8))
    np.testing.assert_array_equal(out, np.dstack([grey] * 3))
    np.testing.assert_array_equal(to_rgb_array(from_pil(Image.fromarray(grey, "L"))), out)


def test_alpha_is_composited_over_white_or_a_chosen_background():
    pixels = np.array([[[255, 0, 0, 0], [255, 0, 0, 255], [0, 0, 255, 128]]], dtype=np.uint8)
    buffer = from_numpy(pixels, PixelLayout.RGBA8888)
    out = to_rgb_array(buffer)
    assert out[0, 0].tolist() == [255, 255, 255]  # fully transparent → the background
    assert out[0, 1].tolist() == [255, 0, 0]  # opaque → unchanged
    assert out[0, 2].tolist() == [127, 127, 255]  # half blue over white: 255·127/255 ≈ 127
    black = to_rgb_array(buffer, background=(0, 0, 0))
    assert black[0, 0].tolist() == [0, 0, 0] and black[0, 2].tolist() == [0, 0, 128]
    # The same pixel through ARGB and BGRA byte orders composites identically.
    argb = from_numpy(pixels[:, :, [3, 0, 1, 2]], PixelLayout.ARGB8888)
    bgra = from_numpy(pixels[:, :, [2, 1, 0, 3]], PixelLayout.BGRA8888)
    np.testing.assert_array_equal(to_rgb_array(argb), out)
    np.testing.assert_array_equal(to_rgb_array(bgra), out)


def test_pillow_transparency_goes_through_alpha():
    image = Image.new("RGBA", (2, 1), (0, 255, 0, 0))
    image.putpixel((1, 0), (0, 255, 0, 255))
    assert to_rgb_array(from_pil(image)).tolist() == [[[255, 255, 255], [0, 255, 0]]]
    palette = image.convert("P")  # a palette image keeps its alpha via the palette's transparency
    assert from_pil(Image.new("LA", (1, 1), (0, 0))).layout is PixelLayout.RGBA8888
    assert to_rgb_array(from_pil(palette)).shape == (1, 2, 3)


def test_wrongly_declared_order_is_visible_on_the_red_pixel():
    """The check that catches swapped channels: BGR data declared as RGB turns red into blue."""
    rgb = synthetic_rgb()
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    wrong = to_rgb_array(from_numpy(bgr, PixelLayout.RGB888))
    right = to_rgb_array(from_numpy(bgr, PixelLayout.BGR888))
    assert tuple(right[0, 0]) == RED
    assert tuple(wrong[0, 0]) == BLUE
    assert not np.array_equal(wrong, right)


def test_short_or_inconsistent_buffers_raise_clear_errors():
    with pytest.raises(AppError, match="too short"):
        PixelBuffer(bytes(7 * 5 * 3 - 1), 7, 5, PixelLayout.RGB888, 21)
    with pytest.raises(AppError, match="too short"):  # the stride promises more rows than there are bytes
        PixelBuffer(bytes(7 * 5 * 3), 7, 5, PixelLayout.RGB888, 24)
    with pytest.raises(AppError, match="stride"):
        PixelBuffer(bytes(100), 7, 2, PixelLayout.RGBA8888, 20)
    with pytest.raises(AppError, match="PixelLayout"):
        PixelBuffer(bytes(3), 1, 1, "RGB", 3)
    with pytest.raises(AppError):
        PixelBuffer(b"", 0, 0, PixelLayout.RGB888, 0)
    with pytest.raises(AppError, match="shape"):
        from_numpy(np.zeros((2, 2, 3), np.uint8), PixelLayout.RGBA8888)
    with pytest.raises(AppError, match="uint8"):
        from_numpy(np.zeros((2, 2, 3), np.float32), PixelLayout.RGB888)


def test_conversion_copies_and_does_not_touch_the_source():
    rgb = synthetic_rgb()
    buffer = from_numpy(rgb, PixelLayout.RGB888)
    out = to_rgb_array(buffer)
    out[:] = 0
    assert tuple(to_rgb_array(buffer)[0, 0]) == RED
