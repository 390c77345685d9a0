"""decode_image/read_metadata against real photos and broken files from other projects' test suites."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import ExifTags, Image

from gallery_app.core.photos.decode import PhotoSkipped, decode_image, read_metadata, to_rgb

from tests.conftest import SHARED_FIXTURES

PHOTOS = SHARED_FIXTURES / "photos"
pytestmark = pytest.mark.shared_fixtures

# Empty without ../shared: the tests are then skipped (or failed under CI) by the marker, not at import,
# so the modules importing these names still collect.
META = ({entry["file"]: entry for entry in json.loads((PHOTOS / "photos_meta.json").read_text("utf-8"))}
        if (PHOTOS / "photos_meta.json").is_file() else {})

# What each non-decoding fixture must be skipped as (photos_meta.json records the Pillow error behind it).
EXPECTED_SKIPS = {
    "pillow/truncated_jpeg.jpg": "truncated",
    "pillow/ultrahdr.jpg": "truncated",  # image data stripped upstream; only metadata is left
    "pillow_heif/heif_corrupted/corrupted.heic": "corrupt",
    "pillow_heif/heif_corrupted/empty.heic": "empty",
    "pillow_heif/heif_special/200MP.heic": "too many pixels",
}

# Orientation comparisons: the same photo decoded from differently stored pixels differs only by JPEG/WebP
# re-encoding noise, resampling on a different grid (and, for exif-orientation-examples, the printed digit).
# Measured on 0–255: ≤ 0.7 for those examples, ≈ 3.0 (JPEG) and ≈ 3.6 (WebP) for hopper, 1.9 for the AVIF.
# A wrong flip or half turn of the same photos measures 36–83, so 8 separates the two with room on both sides.
SAME_IMAGE_MAD = 8.0
COMPARE_SIZE = (64, 64)


def mean_abs_diff(a: Image.Image, b: Image.Image) -> float:
    a = np.asarray(a.resize(COMPARE_SIZE, Image.Resampling.BOX), dtype=np.float32)
    b = np.asarray(b.resize(COMPARE_SIZE, Image.Resampling.BOX), dtype=np.float32)
    return float(np.abs(a - b).mean())


def test_meta_lists_every_fixture_and_the_expected_skips_are_the_non_decoding_ones():
    on_disk = {
        p.relative_to(PHOTOS).as_posix()
        for p in PHOTOS.rglob("*")
        if p.is_file() and p.suffix.lower() not in (".json", ".txt", ".markdown", "") and p.name != "LICENSE"
    }
    assert on_disk == set(META)
    not_decoding = {f for f, e in META.items() if not e.get("decodes", False)}
    assert not_decoding == set(EXPECTED_SKIPS)


@pytest.mark.parametrize("name", sorted(META))
def test_every_fixture_decodes_or_is_skipped_for_the_right_reason(name):
    entry = META[name]
    path = PHOTOS / name
    if name in EXPECTED_SKIPS:
        with pytest.raises(PhotoSkipped) as info:
            decode_image(path, max_side=224)
        assert info.value.reason == EXPECTED_SKIPS[name]
        assert path.name in str(info.value)  # the message names the file
        return
    decoded = decode_image(path, max_side=224)
    assert decoded.rgb.mode == "RGB"
    stored_w, stored_h = map(int, entry["size"].split("x"))
    turned = decoded.orientation in (5, 6, 7, 8)
    assert (decoded.width, decoded.height) == ((stored_h, stored_w) if turned else (stored_w, stored_h))
    # Upright proportions survive scaling; the shorter side is max_side unless the photo is smaller.
    assert min(decoded.rgb.size) == min(224, decoded.width, decoded.height)
    assert (decoded.rgb.width >= decoded.rgb.height) == (decoded.width >= decoded.height)
    assert decoded.format == entry["format"]
    expected_orientation = entry.get("exif_orientation")
    assert decoded.orientation == (expected_orientation if expected_orientation in range(1, 9) else 1)


def exif_examples(kind: str):
    return [PHOTOS / "exif-orientation-examples" / f"{kind}_{n}.jpg" for n in range(1, 9)]


@pytest.mark.parametrize("kind", ["Landscape", "Portrait"])
def test_exif_orientation_examples_all_come_out_upright(kind):
    reference = decode_image(exif_examples(kind)[0], max_side=224).rgb
    for path in exif_examples(kind)[1:] + [PHOTOS / "exif-orientation-examples" / f"{kind}_0.jpg"]:
        decoded = decode_image(path, max_side=224)
        assert decoded.rgb.size == reference.size, path.name
        assert mean_abs_diff(decoded.rgb, reference) < SAME_IMAGE_MAD, path.name
        if kind == "Portrait":
            assert decoded.height > decoded.width and decoded.rgb.height > decoded.rgb.width
        else:
            assert decoded.width > decoded.height and decoded.rgb.width > decoded.rgb.height
    # The bound is meaningful: an image left mirrored or upside down is far above it.
    assert mean_abs_diff(reference.transpose(Image.Transpose.FLIP_LEFT_RIGHT), reference) > 3 * SAME_IMAGE_MAD
    assert mean_abs_diff(reference.transpose(Image.Transpose.ROTATE_180), reference) > 3 * SAME_IMAGE_MAD


@pytest.mark.parametrize("ext", ["jpg", "webp"])
def test_hopper_orientations_match_the_upright_hopper(ext):
    reference = decode_image(PHOTOS / "pillow" / "hopper.jpg").rgb
    for n in range(2, 9):
        decoded = decode_image(PHOTOS / "pillow" / f"hopper_orientation_{n}.{ext}", max_side=224)
        assert decoded.orientation == n
        assert mean_abs_diff(decoded.rgb, reference) < SAME_IMAGE_MAD, n
    assert mean_abs_diff(reference.transpose(Image.Transpose.FLIP_LEFT_RIGHT), reference) > 3 * SAME_IMAGE_MAD


def test_orientation_stored_in_png_xmp_and_avif_is_applied():
    roses = decode_image(PHOTOS / "pillow" / "xmp_tags_orientation.png").rgb
    for name in ["pillow/avif/xmp_tags_orientation.avif"]:
        decoded = decode_image(PHOTOS / name)
        assert decoded.orientation == 3
        assert decoded.rgb.size == roses.size
        # AVIF re-encoding noise only; an un-rotated copy would be far off.
        assert mean_abs_diff(decoded.rgb, roses) < SAME_IMAGE_MAD
    for name in ["pillow/exif_imagemagick_orientation.png", "pillow/xmp_tags_orientation_exiftool.png"]:
        assert decode_image(PHOTOS / name).orientation == 3
    # Orientation 3 is a half turn: the decoded PNG equals its raw pixels rotated by 180°.
    with Image.open(PHOTOS / "pillow" / "exif_imagemagick_orientation.png") as raw:
        rotated = to_rgb(raw.rotate(180))
    decoded = decode_image(PHOTOS / "pillow" / "exif_imagemagick_orientation.png").rgb
    np.testing.assert_array_equal(np.asarray(decoded), np.asarray(rotated))


def test_orientation_8_turns_a_2x1_image_into_1x2():
    decoded = decode_image(PHOTOS / "pillow" / "orientation_rectangle.jpg")
    assert (decoded.width, decoded.height) == (1, 2) and decoded.rgb.size == (1, 2)


def test_draft_decoding_still_covers_max_side(monkeypatch):
    """JPEG draft mode really decodes smaller, but never below max_side on the shorter side."""
    from PIL import JpegImagePlugin

    drafted = []
    real_draft = JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        result = real_draft(self, mode, size)
        drafted.append(self.size)  # the size the decoder will actually produce
        return result

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    for max_side in (100, 224, 300, 599):
        for name in ["exif-orientation-examples/Portrait_6.jpg", "pillow/xmp_test.jpg", "skimage/retina.jpg"]:
            drafted.clear()
            decoded = decode_image(PHOTOS / name, max_side=max_side)
            assert drafted and min(drafted[-1]) >= max_side, (name, max_side, drafted)
            assert min(decoded.rgb.size) == max_side
    # 1800×1200 for a 224 target: decoded at 1/4 scale (450×300), not at full size.
    drafted.clear()
    decode_image(PHOTOS / "exif-orientation-examples" / "Landscape_1.jpg", max_side=224)
    assert drafted == [(450, 300)]


def test_without_max_side_the_full_image_is_decoded():
    decoded = decode_image(PHOTOS / "exif-orientation-examples" / "Portrait_8.jpg")
    assert decoded.rgb.size == (decoded.width, decoded.height) == (1200, 1800)


@pytest.mark.parametrize(
    "name, source_mode",
    [
        ("pillow/pil_sample_cmyk.jpg", "CMYK"),
        ("pillow/hopper_gray.jpg", "L"),
        ("pillow/hopper_bad_exif.jpg", "L"),
        ("skimage/no_time_for_that_tiny.gif", "P"),
        ("pillow/xmp_tags_orientation.png", "RGBA"),
        ("pillow_heif/heif/RGBA_8__128x128.heif", "RGBA"),
        ("pillow_heif/heif/L_8__128x128.heif", "L"),
    ],
)
def test_other_modes_become_rgb(name, source_mode):
    with Image.open(PHOTOS / name) as raw:
        assert raw.mode == source_mode
    assert decode_image(PHOTOS / name).rgb.mode == "RGB"


def test_cmyk_jpeg_looks_like_its_rgb_twin():
    cmyk = decode_image(PHOTOS / "pillow" / "pil_sample_cmyk.jpg").rgb
    rgb = decode_image(PHOTOS / "pillow" / "pil_sample_rgb.jpg").rgb
    assert mean_abs_diff(cmyk, rgb) < 2 * SAME_IMAGE_MAD  # different encoders; inverted CMYK would be ~100+


def test_alpha_is_composited_over_white():
    image = Image.new("RGBA", (2, 1), (255, 0, 0, 0))
    image.putpixel((1, 0), (0, 0, 255, 255))
    assert np.asarray(to_rgb(image)).tolist() == [[[255, 255, 255], [0, 0, 255]]]
    assert np.asarray(to_rgb(Image.new("LA", (1, 1), (0, 0)))).tolist() == [[[255, 255, 255]]]
    palette = Image.new("P", (1, 1), 0)
    palette.info["transparency"] = 0
    assert np.asarray(to_rgb(palette)).tolist() == [[[255, 255, 255]]]


def test_16_bit_grey_is_scaled_not_clipped(tmp_path):
    values = np.array([[0, 257 * 100, 65535]], dtype=np.uint16)
    path = tmp_path / "deep.png"
    Image.fromarray(values).save(path)  # 16-bit greyscale PNG (mode I;16 or I when read back)
    decoded = decode_image(path)
    assert np.asarray(decoded.rgb)[0, :, 0].tolist() == [0, 100, 255]


def test_multi_frame_files_use_the_first_frame():
    for name in ["pillow/frozenpond.mpo", "pillow_heif/heif_other/nokia/bird_burst.heic"]:
        with Image.open(PHOTOS / name) as raw:
            assert getattr(raw, "n_frames", 1) > 1
            first = to_rgb(raw).copy()  # copy: an RGB file comes back as is, still lazy
        decoded = decode_image(PHOTOS / name)
        np.testing.assert_array_equal(np.asarray(decoded.rgb), np.asarray(first))


def test_pixel_limit_is_checked_from_the_header(tmp_path):
    path = PHOTOS / "exif-orientation-examples" / "Landscape_1.jpg"
    with pytest.raises(PhotoSkipped) as info:
        decode_image(path, max_pixels=1800 * 1200 - 1)
    assert info.value.reason == "too many pixels" and "Landscape_1.jpg" in str(info.value)
    assert decode_image(path, max_pixels=1800 * 1200).width == 1800
    # The 200 MP HEIC is refused with the default limit, before any pixel is decoded.
    with pytest.raises(PhotoSkipped) as info:
        decode_image(PHOTOS / "pillow_heif" / "heif_special" / "200MP.heic")
    assert info.value.reason == "too many pixels"


def test_missing_empty_and_unsupported_files(tmp_path):
    with pytest.raises(PhotoSkipped) as info:
        decode_image(tmp_path / "gone.jpg")
    assert info.value.reason == "missing" and "gone.jpg" in str(info.value)
    (tmp_path / "empty.jpg").write_bytes(b"")
    with pytest.raises(PhotoSkipped) as info:
        decode_image(tmp_path / "empty.jpg")
    assert info.value.reason == "empty"
    (tmp_path / "notes.txt").write_text("not a picture")
    with pytest.raises(PhotoSkipped) as info:
        decode_image(tmp_path / "notes.txt")
    assert info.value.reason == "unsupported"
    (tmp_path / "fake.png").write_text("not a picture")
    with pytest.raises(PhotoSkipped) as info:
        decode_image(tmp_path / "fake.png")
    assert info.value.reason == "corrupt"


# --- metadata -------------------------------------------------------------------------------------


def exif_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y:%m:%d %H:%M:%S")


@pytest.mark.parametrize("name", sorted(META))
def test_metadata_matches_photos_meta(name):
    entry = META[name]
    meta = read_metadata(PHOTOS / name)  # never raises, even for broken files
    expected_time = entry.get("datetime_original")
    if expected_time and ":" in expected_time[:5]:  # the EXIF "YYYY:MM:DD HH:MM:SS" form
        assert meta.capture_time == exif_time(expected_time)
    elif expected_time:  # ISO-like text from XMP or a non-standard DateTime: the same wall-clock time
        assert meta.capture_time is not None
        assert meta.capture_time.isoformat()[:19] == expected_time[:19]
    if entry.get("camera"):
        assert meta.camera == entry["camera"]
    if meta.gps is not None:
        assert entry.get("gps")  # never invent a position


HEIC_WITH_GPS = {
    # name: (latitude, longitude) as the files' EXIF states them (checked with exiftool-style DMS sums).
    "pillow_heif/heif_other/empty_icc.heic": (46.7547, 33.3361),
    "pillow_heif/heif_other/pug.heic": (44.8505, 34.9766),
    "pillow_heif/heif_special/xiaomi.heic": (47.2273, 39.7000),
    "pillow_heif/heif_special/aux_YCbCr.heic": (59.5128, 24.8343),
}


def test_heic_metadata_has_capture_time_and_gps_where_the_meta_says_so():
    for name, entry in META.items():
        if not name.startswith(("pillow_heif/heif_other/", "pillow_heif/heif_special/")) or name in EXPECTED_SKIPS:
            continue
        meta = read_metadata(PHOTOS / name)
        assert (meta.capture_time is not None) == bool(entry.get("datetime_original")), name
        if name == "pillow_heif/heif_other/spatial_photo.heic":
            # Its GPS block exists but holds 0°,0° (location off on the device): reported as unknown.
            assert entry["gps"] and meta.gps is None
            continue
        assert (meta.gps is not None) == bool(entry.get("gps")), name
        if name in HEIC_WITH_GPS:
            assert meta.gps == pytest.approx(HEIC_WITH_GPS[name], abs=1e-3)


def test_gps_is_converted_to_signed_degrees(tmp_path):
    exif = Image.Exif()
    exif[ExifTags.IFD.GPSInfo] = {1: "S", 2: (33.0, 51.0, 54.0), 3: "W", 4: (151.0, 12.0, 36.0)}
    path = tmp_path / "sydney_west.jpg"
    Image.new("RGB", (8, 8)).save(path, exif=exif)
    lat, lon = read_metadata(path).gps
    assert lat == pytest.approx(-(33 + 51 / 60 + 54 / 3600))
    assert lon == pytest.approx(-(151 + 12 / 60 + 36 / 3600))


def test_exif_gps_fixture_with_nonsense_values_gives_no_position():
    """Pillow's exif_gps.jpg has a GPS block with only a latitude of 4294967295°: not a place on Earth."""
    meta = read_metadata(PHOTOS / "pillow" / "exif_gps.jpg")
    assert meta.gps is None
    assert meta.capture_time == datetime(2099, 9, 29, 10, 10, 10)
    assert meta.camera == "Make XXX-XXX"


def test_bad_exif_and_non_images_never_raise(tmp_path):
    assert read_metadata(PHOTOS / "pillow" / "hopper_bad_exif.jpg").capture_time is None
    (tmp_path / "junk.jpg").write_bytes(b"\xff\xd8\xff\xe1 junk")
    assert read_metadata(tmp_path / "junk.jpg").gps is None
    assert read_metadata(tmp_path / "missing.jpg").camera is None
    buffer = io.BytesIO()
    exif = Image.Exif()
    exif[ExifTags.IFD.GPSInfo] = {1: "N", 2: (0.0, 0.0, 0.0)}  # latitude without longitude
    Image.new("RGB", (4, 4)).save(buffer, "JPEG", exif=exif)
    (tmp_path / "half_gps.jpg").write_bytes(buffer.getvalue())
    assert read_metadata(tmp_path / "half_gps.jpg").gps is None
