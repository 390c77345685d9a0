"""The perceptual hash: resized and re-encoded copies of real photos stay a few bits apart, other photos far;
flat pictures get none; pairs are counted exactly (with and without NumPy's bit count)."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image, ImageOps

from gallery_app.core.photos import perceptual_hash
from gallery_app.core.photos.perceptual_hash import MAX_DISTANCE, close_pairs, difference_hash
from tests.conftest import SHARED_FIXTURES

SKIMAGE = SHARED_FIXTURES / "photos" / "skimage"
DIFFERENT_PHOTOS = ("astronaut.png", "camera.png", "chelsea.png", "coffee.png", "coins.png", "rocket.jpg",
                    "hubble_deep_field.jpg", "motorcycle_left.png", "page.png", "text.png", "moon.png")


def _bits(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def _upright(path) -> Image.Image:
    with Image.open(path) as image:
        upright = ImageOps.exif_transpose(image).convert("RGB")
    upright.thumbnail((256, 256))  # what the indexer decodes (shorter side 256) and the thumbnail holds
    return upright


def _copy(image: Image.Image, scale: float, quality: int) -> Image.Image:
    smaller = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    smaller.save(out, "JPEG", quality=quality)
    out.seek(0)
    return Image.open(out).convert("RGB")


@pytest.mark.shared_fixtures
def test_resized_and_re_encoded_copies_stay_close_and_different_photos_far():
    hashes = {name: difference_hash(_upright(SKIMAGE / name)) for name in DIFFERENT_PHOTOS}
    assert all(len(h) == 16 for h in hashes.values())
    for name, original in hashes.items():
        for scale, quality in ((0.5, 70), (0.8, 90), (0.35, 60)):
            copy = difference_hash(_copy(_upright(SKIMAGE / name), scale, quality))
            assert _bits(original, copy) <= MAX_DISTANCE, (name, scale, quality)
    for (a, ha), (b, hb) in itertools.combinations(hashes.items(), 2):
        assert _bits(ha, hb) > MAX_DISTANCE, (a, b)


def test_a_flat_picture_has_no_hash_so_two_plain_colours_are_not_copies():
    assert difference_hash(Image.new("RGB", (64, 48), "red")) == ""
    assert difference_hash(Image.new("RGB", (640, 480), "navy")) == ""
    ramp = Image.linear_gradient("L").convert("RGB")
    assert len(difference_hash(ramp)) == 16


@pytest.mark.parametrize("numpy_count", [True, False])
def test_close_pairs_are_every_pair_within_the_distance(numpy_count, monkeypatch):
    if not numpy_count:
        monkeypatch.setattr(perceptual_hash, "_bit_counts", perceptual_hash._bit_counts_by_table)
    generator = np.random.default_rng(7)
    hashes = np.frombuffer(generator.bytes(300 * 8), dtype=np.uint64).copy()
    for target, source, flips in ((5, 17, 3), (200, 17, 10), (299, 0, 11)):  # planted near copies
        value = int(hashes[source])
        for bit in generator.choice(64, size=flips, replace=False):
            value ^= 1 << int(bit)
        hashes[target] = np.uint64(value)
    distances = {(i, j): bin(int(hashes[i]) ^ int(hashes[j])).count("1") for i, j in itertools.combinations(range(300), 2)}
    expected = sorted((i, j, bits) for (i, j), bits in distances.items() if bits <= MAX_DISTANCE)
    assert sorted(close_pairs(hashes, block=64)) == expected
    assert (5, 17, 3) in expected and (17, 200, 10) in expected and not any(p[:2] == (0, 299) for p in expected)
