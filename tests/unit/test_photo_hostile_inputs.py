"""Photo files built to hurt: extreme shapes, pipes and devices, names that are not UTF-8, leftovers of killed runs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gallery_app.core.photos import library
from gallery_app.core.photos.clip_preprocess import MAX_ASPECT, center_crop_box, resize_and_crop, resized_size
from gallery_app.core.photos.decode import PhotoSkipped
from gallery_app.core.file_names import from_db, printable, to_db
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import PhotoSource
from gallery_app.core.photos.preparing import model_input, read_photo_file
from gallery_app.core.photos.thumbnails import STALE_AFTER_SECONDS, save_thumbnail, thumbnail_path

CAFE = os.fsdecode(b"caf\xe9.jpg")


def whole_resize_then_crop(image: Image.Image) -> np.ndarray:
    """CLIP's transform done literally (the whole image resized), for shapes where that still fits in memory."""
    new_w, new_h = resized_size(image.width, image.height)
    return np.asarray(image.resize((new_w, new_h), Image.Resampling.BICUBIC).crop(center_crop_box(new_w, new_h)))


def striped(width: int, height: int) -> Image.Image:
    """Colour changes along the long side, so a crop from the wrong place shows."""
    steps = np.linspace(0, 255, max(width, height)).astype(np.uint8)
    line = np.stack([steps, steps[::-1], np.full_like(steps, 90)], axis=-1)
    pixels = line[None, :, :] if width >= height else line[:, None, :]
    return Image.fromarray(np.ascontiguousarray(np.broadcast_to(pixels, (height, width, 3))), "RGB")


# --- extreme aspect ratios -------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(1, 20_000), (1, 2_000_000), (60_000, 1)])
def test_strips_become_a_model_input_at_once(size):
    image = Image.new("RGB", size, (10, 200, 30))
    started = time.perf_counter()
    pixels = model_input(image)  # before: 26 s and 4.2 GB, MemoryError, 16 GB
    assert time.perf_counter() - started < 2
    assert pixels.shape == (3, 224, 224)
    expected = model_input(Image.new("RGB", (224, 224), (10, 200, 30)))
    np.testing.assert_allclose(pixels, expected, atol=1e-5)


@pytest.mark.parametrize("size", [(12, 1_500), (3_000, 20), (41, 4_000)])
def test_a_strip_is_cut_where_clips_centre_crop_would_look(size):
    image = striped(*size)
    assert max(size) > MAX_ASPECT * min(size)
    difference = np.abs(np.asarray(resize_and_crop(image), np.int16) - whole_resize_then_crop(image))
    assert difference.max() <= 3  # the same picture: only the resampling grid moved by under a pixel


@pytest.mark.parametrize("size", [(4_480, 224), (300, 6_000), (6_000, 1_000), (640, 480)])
def test_panoramas_up_to_the_limit_are_resized_whole_as_before(size):
    image = striped(*size)
    np.testing.assert_array_equal(np.asarray(resize_and_crop(image)), whole_resize_then_crop(image))


# --- only regular files are read ---------------------------------------------------------------------

def within(seconds: float, call, *args, **kwargs):
    """``call``'s result or its ``PhotoSkipped``, run on a thread so that a hang fails the test instead of the run."""
    outcome = []

    def run():
        try:
            outcome.append(call(*args, **kwargs))
        except PhotoSkipped as skipped:
            outcome.append(skipped)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"{call.__name__}{args} did not return within {seconds} s"
    return outcome[0]


def read_with_deadline(path: Path):
    return within(10, read_photo_file, path)


def test_a_named_pipe_is_skipped_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "fifo.jpg")
    skipped = read_with_deadline(tmp_path / "fifo.jpg")
    assert isinstance(skipped, PhotoSkipped) and skipped.reason == "unsupported"
    assert str(skipped) == "fifo.jpg was skipped: it is not a regular file but a named pipe."


def test_devices_and_folders_are_skipped_and_links_to_photos_are_read(tmp_path):
    (tmp_path / "zero.jpg").symlink_to("/dev/zero")
    (tmp_path / "album.jpg").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "real.png")
    (tmp_path / "link.png").symlink_to(tmp_path / "real.png")
    (tmp_path / "dangling.png").symlink_to(tmp_path / "gone.png")

    assert "a device" in str(read_with_deadline(tmp_path / "zero.jpg"))
    assert "a folder" in str(read_with_deadline(tmp_path / "album.jpg"))
    assert read_with_deadline(tmp_path / "dangling.png").reason == "missing"
    data, info = read_with_deadline(tmp_path / "link.png")
    assert data == (tmp_path / "real.png").read_bytes() and info.st_size == len(data)


# --- file names that are not UTF-8 -----------------------------------------------------------------

def test_names_that_are_not_utf8_are_stored_as_their_bytes_and_shown_escaped():
    assert to_db("/photos/café.jpg") == "/photos/café.jpg"  # every UTF-8 path stays the text it was
    assert to_db(f"/photos/{CAFE}") == b"/photos/caf\xe9.jpg"
    assert from_db(to_db(f"/photos/{CAFE}")) == f"/photos/{CAFE}"
    assert printable(f"/photos/{CAFE}") == "/photos/caf\\xe9.jpg"
    assert printable("line\nbreak\x1b[31mred.jpg") == "line\\nbreak\\x1b[31mred.jpg"
    assert printable("/photos/café 東京.jpg") == "/photos/café 東京.jpg"


def test_a_folder_with_a_latin1_name_indexes_every_photo_and_re_runs_incrementally(store, tmp_path, test_clip):
    vision = test_clip[0]
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/Urlaub M\xfcnchen"))  # the folder's name too
    folder.mkdir()
    for number in range(3):
        Image.new("RGB", (32, 24), (number * 80, 40, 200)).save(folder / f"photo-{number}.png")
    Image.new("RGB", (32, 24), (250, 250, 0)).save(folder / CAFE, "JPEG")

    first = PhotoIndexer(store, vision, workers=1).add_folder(folder)
    assert (first.found, first.added, first.skipped) == (4, 4, [])
    assert "Urlaub M\\xfcnchen" in first.describe()
    record = library.photo_by_path(store, folder / CAFE)
    assert record is not None and record.name == "caf\\xe9.jpg" and Path(record.path).read_bytes()
    assert folder / CAFE in {Path(r.path) for r in library.list_photos(store)}

    again = PhotoIndexer(store, vision, workers=1).add_folder(folder)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 4)

    (folder / CAFE).rename(folder / os.fsdecode(b"\xe9t\xe9.jpg"))
    moved = PhotoIndexer(store, vision, workers=1).add_folder(folder)
    assert (moved.moved, moved.removed) == (1, 0)
    (folder / os.fsdecode(b"\xe9t\xe9.jpg")).unlink()
    gone = PhotoIndexer(store, vision, workers=1).add_folder(folder)
    assert (gone.removed, library.count_photos(store)) == (1, 3)


# --- leftovers of a killed run ---------------------------------------------------------------------

def left_by_a_killed_run(path: Path) -> Path:
    path.write_bytes(b"\xff\xd8 half a JPEG")
    long_ago = time.time() - STALE_AFTER_SECONDS - 60
    os.utime(path, (long_ago, long_ago))
    return path


def test_the_next_index_removes_thumbnails_half_written_by_a_killed_run(store, tmp_path):
    kept = save_thumbnail(Image.new("RGB", (300, 200)), "ab" * 32)
    stale, fresh = kept.parent / ".thumb-k1ll3d.jpg", kept.parent / ".thumb-wr1t1ng.jpg"
    left_by_a_killed_run(stale)
    fresh.write_bytes(b"\xff\xd8 another process is writing this one now")
    (tmp_path / "photos").mkdir()

    PhotoIndexer(store, None, workers=1).add_folder(tmp_path / "photos")

    assert not stale.exists()
    assert fresh.exists() and kept == thumbnail_path("ab" * 32) and kept.is_file()


def test_an_upload_removes_copies_half_written_by_a_killed_run(store, tmp_path, app_dirs):
    from gallery_app.core.photos.additions import add_upload

    uploads = app_dirs[0] / "photos" / "uploads"
    uploads.mkdir(parents=True)
    stale = left_by_a_killed_run(uploads / ".incoming-k1ll3d.jpg")
    Image.new("RGB", (40, 30), (1, 2, 3)).save(tmp_path / "new.png")

    record, added = add_upload(store, None, tmp_path / "new.png")

    assert added and record.source == PhotoSource.UPLOAD.value and Path(record.path).parent == uploads
    assert not stale.exists()


# --- the upload, camera and bundle paths share the same rules ---------------------------------------

def test_a_strip_uploaded_searched_by_or_seen_by_the_camera_is_handled_at_once(store, tmp_path, test_clip):
    from gallery_app.core.photos.pixels import PixelLayout, from_numpy
    from gallery_app.core.photos.search import PhotoSearch

    vision, text, _ = test_clip
    search = PhotoSearch(store, vision=vision, text=text)
    strip = tmp_path / "strip.png"
    Image.new("RGB", (1, 2_000_000), (200, 30, 30)).save(strip)
    started = time.perf_counter()
    uploaded = search.by_image_file(strip, k=1, add=True)
    looked_up = search.by_image_file(strip, k=1)
    frame = from_numpy(np.full((1, 60_000, 3), 30, np.uint8), PixelLayout.BGR888)
    captured = search.by_pixels(frame, k=1, add=True)
    assert time.perf_counter() - started < 10  # before: MemoryError on the first, 16 GB for the frame
    assert uploaded.added is not None and uploaded.added.height == 2_000_000
    assert looked_up.hits[0].photo.id == uploaded.added.id
    assert captured.added is not None and (captured.added.width, captured.added.height) == (60_000, 1)


def test_a_pipe_given_as_an_upload_or_query_image_is_refused_at_once(store, tmp_path, test_clip):
    from gallery_app.core.photos.search import PhotoSearch

    os.mkfifo(tmp_path / "fifo.jpg")
    search = PhotoSearch(store, vision=test_clip[0])
    for add in (False, True):
        refused = within(10, search.by_image_file, tmp_path / "fifo.jpg", add=add)
        assert "not a regular file but a named pipe" in str(refused)


def test_a_bundle_round_trips_a_name_that_is_not_utf8(store, tmp_path, test_clip):
    from gallery_app.core.photos.bundle import export_bundle, import_bundle
    from gallery_app.core.store import open_store

    vision = test_clip[0]
    folder = tmp_path / "shipped"
    folder.mkdir()
    Image.new("RGB", (30, 20), (5, 90, 160)).save(folder / CAFE, "JPEG")
    PhotoIndexer(store, vision, workers=1).add_folder(folder)
    assert export_bundle(store, vision, folder, tmp_path / "v.npz") == 1

    elsewhere = open_store(tmp_path / "elsewhere.db")
    result = import_bundle(elsewhere, vision, tmp_path / "v.npz", folder)
    assert (result.imported, result.missing) == (1, [])
    assert library.photo_by_path(elsewhere, folder / CAFE).name == "caf\\xe9.jpg"
    elsewhere.close()
