"""Tests for gallery_app.core.photos.clip_preprocess (CLIP ViT-B/32 preprocessing)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from gallery_app.core.photos.clip_preprocess import (
    CLIP_IMAGE_SIZE,
    CLIP_MEAN,
    CLIP_STD,
    center_crop_box,
    preprocess,
    resize_and_crop,
    resized_size,
    to_tensor,
)

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


def _noise_image(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(arr, mode="RGB")


def _reference(image: Image.Image, size: int = 224) -> list[list[list[float]]]:
    """Slow, obviously-correct CLIP/torchvision pipeline with explicit loops.

    Resize: short side -> size, long side -> floor(size * long / short)
    (torchvision Resize(int) truncates), bicubic via Pillow.
    Crop: torchvision CenterCrop, top/left = int(round((dim - size) / 2.0)).
    Normalise: (v / 255 - mean[c]) / std[c], channel-first.
    """
    w, h = image.size
    if w <= h:
        new_w, new_h = size, (size * h) // w
    else:
        new_w, new_h = (size * w) // h, size
    resized = image.resize((new_w, new_h), Image.Resampling.BICUBIC)
    top = int(round((new_h - size) / 2.0))
    left = int(round((new_w - size) / 2.0))
    pixels = resized.load()  # pixels[x, y] -> (r, g, b)
    out = [[[0.0] * size for _ in range(size)] for _ in range(3)]
    for y in range(size):
        for x in range(size):
            rgb = pixels[left + x, top + y]
            for c in range(3):
                out[c][y][x] = (rgb[c] / 255.0 - MEAN[c]) / STD[c]
    return out


# ----------------------------------------------------------------------------
# constants & geometry


def test_constants():
    assert CLIP_IMAGE_SIZE == 224
    assert tuple(CLIP_MEAN) == MEAN
    assert tuple(CLIP_STD) == STD


@pytest.mark.parametrize(
    ("wh", "expected"),
    [
        ((640, 480), (298, 224)),  # 224*640/480 = 298.67 -> truncated, not 299
        ((480, 640), (224, 298)),
        ((224, 224), (224, 224)),
        ((301, 223), (302, 224)),  # 302.35
        ((225, 1000), (224, 995)),  # 995.56 -> 995 (rounding would give 996)
        ((50, 30), (373, 224)),  # upscale, 373.33
        ((1, 1), (224, 224)),
    ],
)
def test_resized_size_truncates_like_torchvision(wh, expected):
    assert resized_size(*wh) == expected


@pytest.mark.parametrize(
    ("wh", "box"),
    [
        ((224, 224), (0, 0, 224, 224)),
        ((302, 224), (39, 0, 263, 224)),
        ((224, 995), (0, 386, 224, 610)),  # 385.5 -> round-half-even 386
        ((227, 224), (2, 0, 226, 224)),  # 1.5 -> 2
        ((229, 224), (2, 0, 226, 224)),  # 2.5 -> 2 (Python round, as torchvision)
    ],
)
def test_center_crop_box_matches_torchvision(wh, box):
    assert center_crop_box(*wh) == box


# ----------------------------------------------------------------------------
# (1) equality with the loop reference


@pytest.mark.parametrize(
    "wh",
    [
        (320, 240),  # landscape
        (240, 320),  # portrait
        (256, 256),  # square, downscale
        (224, 224),  # already the target size
        (50, 30),  # smaller than 224, upscaled
        (17, 40),  # tiny portrait, upscaled
        (301, 223),  # odd sizes
        (225, 1000),
        (227, 224),  # odd crop excess
    ],
)
def test_matches_loop_reference(wh):
    image = _noise_image(*wh, seed=wh[0] * 1000 + wh[1])
    got = preprocess([image])
    expected = np.array(_reference(image), dtype=np.float64)
    assert got.shape == (1, 3, 224, 224)
    np.testing.assert_allclose(got[0], expected, rtol=0, atol=1e-6)


def test_matches_loop_reference_custom_size():
    image = _noise_image(37, 21, seed=5)
    got = preprocess([image], size=16)
    expected = np.array(_reference(image, size=16), dtype=np.float64)
    assert got.shape == (1, 3, 16, 16)
    np.testing.assert_allclose(got[0], expected, rtol=0, atol=1e-6)


# ----------------------------------------------------------------------------
# (2) shape / dtype / contiguity


def test_output_shape_dtype_contiguity():
    images = [_noise_image(300, 200, 1), _noise_image(100, 400, 2), _noise_image(224, 224, 3)]
    out = preprocess(images)
    assert out.shape == (3, 3, 224, 224)
    assert out.dtype == np.float32
    assert out.flags["C_CONTIGUOUS"]
    assert np.isfinite(out).all()

    cropped = resize_and_crop(images[0])
    assert cropped.mode == "RGB"
    assert cropped.size == (224, 224)

    t = to_tensor([cropped])
    assert t.shape == (1, 3, 224, 224) and t.dtype == np.float32 and t.flags["C_CONTIGUOUS"]


def test_empty_batch():
    out = preprocess([])
    assert out.shape == (0, 3, 224, 224) and out.dtype == np.float32


def test_to_tensor_accepts_uint8_nhwc_array():
    images = [resize_and_crop(_noise_image(300, 250, s)) for s in range(3)]
    arr = np.stack([np.asarray(im) for im in images])
    np.testing.assert_array_equal(to_tensor(arr), to_tensor(images))


# ----------------------------------------------------------------------------
# (3) centre crop picks the centre


def _unnormalise(t: np.ndarray) -> np.ndarray:
    mean = np.array(MEAN, dtype=np.float32).reshape(3, 1, 1)
    std = np.array(STD, dtype=np.float32).reshape(3, 1, 1)
    return t * std + mean


@pytest.mark.parametrize("orientation", ["landscape", "portrait"])
def test_center_crop_picks_centre(orientation):
    # 672x224 (or 224x672): middle third red, outer thirds blue. No resize is
    # needed, so a correct centre crop is entirely red; a crop from either end
    # would be entirely blue.
    arr = np.zeros((224, 672, 3), dtype=np.uint8)
    arr[:, :, 2] = 255
    arr[:, 224:448] = (255, 0, 0)
    if orientation == "portrait":
        arr = np.ascontiguousarray(arr.transpose(1, 0, 2))
    out = _unnormalise(preprocess([Image.fromarray(arr, mode="RGB")])[0])
    red = np.broadcast_to(np.array([1, 0, 0], np.float32).reshape(3, 1, 1), out.shape)
    np.testing.assert_allclose(out, red, atol=1e-5)


def test_center_crop_picks_centre_after_resize():
    # 600x400 blue with a red centre square; resized to 336x224, crop x=56..280.
    arr = np.zeros((400, 600, 3), dtype=np.uint8)
    arr[:, :, 2] = 255
    arr[100:300, 200:400] = (255, 0, 0)  # centre 200x200 block
    out = _unnormalise(preprocess([Image.fromarray(arr, mode="RGB")])[0])
    red = np.array([1, 0, 0], np.float32)
    blue = np.array([0, 0, 1], np.float32)
    # Red block maps to x in [112, 224) of the resized image -> [56, 168) in
    # the crop, y in [56, 168). Check well inside / outside to avoid bicubic edges.
    np.testing.assert_allclose(out[:, 112, 112], red, atol=1e-5)
    np.testing.assert_allclose(out[:, 70:154, 70:154].mean(axis=(1, 2)), red, atol=1e-5)
    for y, x in [(5, 5), (5, 218), (218, 5), (218, 218), (112, 10), (112, 213)]:
        np.testing.assert_allclose(out[:, y, x], blue, atol=1e-5)


# ----------------------------------------------------------------------------
# (4) channel order


@pytest.mark.parametrize("wh", [(224, 224), (400, 300), (31, 77)])
def test_channel_order_pure_red(wh):
    out = preprocess([Image.new("RGB", wh, (255, 0, 0))])[0]
    expected = [(1 - MEAN[0]) / STD[0], (0 - MEAN[1]) / STD[1], (0 - MEAN[2]) / STD[2]]
    for c in range(3):
        np.testing.assert_allclose(out[c], expected[c], rtol=0, atol=1e-6)


def test_channel_order_each_primary():
    for c, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        out = _unnormalise(preprocess([Image.new("RGB", (50, 60), colour)])[0])
        for k in range(3):
            np.testing.assert_allclose(out[k], 1.0 if k == c else 0.0, atol=1e-6)


# ----------------------------------------------------------------------------
# (5) batches of mixed sizes


def test_mixed_batch_equals_per_image():
    sizes = [(320, 240), (240, 320), (224, 224), (50, 30), (301, 223), (225, 1000)]
    images = [_noise_image(w, h, seed=i) for i, (w, h) in enumerate(sizes)]
    batch = preprocess(images)
    assert batch.shape == (len(images), 3, 224, 224)
    for i, image in enumerate(images):
        np.testing.assert_array_equal(batch[i], preprocess([image])[0])


def test_does_not_mutate_input():
    image = _noise_image(300, 200, 9)
    before = image.tobytes()
    preprocess([image])
    assert image.size == (300, 200) and image.mode == "RGB" and image.tobytes() == before


# ----------------------------------------------------------------------------
# (6) non-RGB input is refused


@pytest.mark.parametrize("mode", ["L", "LA", "RGBA", "RGBX", "P", "CMYK", "YCbCr", "HSV", "I", "F", "1"])
def test_non_rgb_raises(mode):
    image = Image.new(mode, (40, 30))
    with pytest.raises(ValueError, match="RGB"):
        preprocess([image])
    with pytest.raises(ValueError, match="RGB"):
        resize_and_crop(image)
    with pytest.raises(ValueError, match="RGB"):
        to_tensor([image.resize((224, 224))])


def test_non_rgb_in_mixed_batch_raises():
    images = [_noise_image(50, 50, 1), Image.new("RGBA", (50, 50))]
    with pytest.raises(ValueError, match="item 1"):
        preprocess(images)


def test_to_tensor_rejects_bad_arrays_and_mixed_sizes():
    with pytest.raises(ValueError):
        to_tensor(np.zeros((2, 224, 224, 4), dtype=np.uint8))  # RGBA-shaped
    with pytest.raises(ValueError):
        to_tensor(np.zeros((224, 224, 3), dtype=np.uint8))  # not batched
    with pytest.raises(ValueError):
        to_tensor(np.zeros((1, 224, 224, 3), dtype=np.float32))  # scale unknown
    with pytest.raises(ValueError):
        to_tensor([Image.new("RGB", (224, 224)), Image.new("RGB", (10, 10))])


def test_single_image_not_in_list_is_rejected():
    with pytest.raises(TypeError):
        preprocess(Image.new("RGB", (10, 10)))  # type: ignore[arg-type]
