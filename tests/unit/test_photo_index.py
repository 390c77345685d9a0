"""Indexing photo folders: every fixture indexed or skipped for its reason, incremental re-runs,
renames keep their vectors, removals, cancel, batches, thumbnails and EXIF metadata."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gallery_app.core.photos import library
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import PhotoSource, count_photos, photo_by_path
from gallery_app.core.photos.photo_vectors import stored_vectors, vector_rowids
from gallery_app.core.photos.preparing import model_input
from gallery_app.core.photos.thumbnails import thumbnail_path
from gallery_app.core.photos.decode import decode_image
from tests.unit.test_photo_decode import EXPECTED_SKIPS, META, PHOTOS

pytestmark = [
    pytest.mark.shared_fixtures,  # all but one test read the shared photos
    pytest.mark.filterwarnings("ignore::UserWarning"),  # Pillow warns about the broken fixtures
]
DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"


def expected_vector(path: Path, weights: np.ndarray) -> np.ndarray:
    """What the test tower must give for a photo: normalised (channel means of CLIP's input) @ W."""
    pixels = model_input(decode_image(path, max_side=256).rgb)
    raw = pixels.mean(axis=(1, 2)) @ weights
    return raw / np.linalg.norm(raw)


def copy_tree(source: Path, target: Path, names: list[str]) -> list[Path]:
    copied = []
    for name in names:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, destination)
        copied.append(destination)
    return copied


def test_every_fixture_photo_is_indexed_or_skipped_with_its_reason(store, test_clip):
    vision, _, weights = test_clip
    summary = PhotoIndexer(store, vision, batch_size=8).add_folder(PHOTOS)

    assert summary.found == len(META)
    assert {s.path.relative_to(PHOTOS).as_posix(): s.reason for s in summary.skipped} == EXPECTED_SKIPS
    assert summary.added == len(META) - len(EXPECTED_SKIPS) == count_photos(store)
    assert summary.embedded == summary.added and summary.without_vectors == 0
    hopper = photo_by_path(store, PHOTOS / "pillow" / "hopper_orientation_6.jpg")
    vector = stored_vectors(store, vision, [hopper.id])[hopper.id]
    np.testing.assert_allclose(vector, expected_vector(PHOTOS / "pillow" / "hopper_orientation_6.jpg",
                                                       weights["vision"]), atol=1e-5)
    assert "5 skipped (2 truncated" in summary.describe()


def test_capture_time_place_camera_and_upright_size_are_stored(store, test_clip):
    vision = test_clip[0]
    PhotoIndexer(store, vision).add_folder(PHOTOS / "pillow_heif" / "heif_other")
    for name in ("pug.heic", "arrow.heic", "cat.hif"):
        entry = META[f"pillow_heif/heif_other/{name}"]
        record = photo_by_path(store, PHOTOS / "pillow_heif" / "heif_other" / name)
        assert record.camera == entry["camera"]
        assert record.format == "HEIF"
        assert record.source == "folder"
        if entry.get("datetime_original"):
            assert record.captured_at.replace("T", " ").startswith(entry["datetime_original"].replace(":", "-", 2)[:16])
    arrow = photo_by_path(store, PHOTOS / "pillow_heif" / "heif_other" / "arrow.heic")
    assert arrow.height > arrow.width  # portrait, as shot


def test_thumbnails_are_cached_by_content_and_upright(store, test_clip):
    folder = PHOTOS / "exif-orientation-examples"
    PhotoIndexer(store, test_clip[0]).add_folder(folder)
    reference = None
    for number in range(1, 9):
        record = photo_by_path(store, folder / f"Landscape_{number}.jpg")
        with Image.open(thumbnail_path(record.content_hash)) as thumbnail:
            assert max(thumbnail.size) == 256 and thumbnail.width > thumbnail.height  # landscape, upright
            pixels = np.asarray(thumbnail.convert("RGB").resize((64, 43)), dtype=np.float32)
        reference = pixels if reference is None else reference
        assert np.abs(pixels - reference).mean() < 8
    leftovers = [p for p in thumbnail_path("00").parent.parent.rglob(".thumb-*")]
    assert leftovers == []


def test_rerun_is_incremental_and_notices_changes_moves_copies_and_removals(store, test_clip, tmp_path):
    vision, _, weights = test_clip
    names = ["skimage/astronaut.png", "skimage/coffee.png", "skimage/chelsea.png", "pillow/hopper.jpg"]
    files = copy_tree(PHOTOS, tmp_path / "pics", names)
    indexer = PhotoIndexer(store, vision)
    first = indexer.add_folder(tmp_path / "pics")
    assert (first.added, first.unchanged) == (4, 0)

    again = indexer.add_folder(tmp_path / "pics")
    assert (again.added, again.unchanged, again.embedded, again.removed) == (0, 4, 0, 0)

    astronaut_id = photo_by_path(store, files[0]).id
    astronaut_vector = stored_vectors(store, vision, [astronaut_id])[astronaut_id]
    moved = tmp_path / "pics" / "trip" / "renamed.png"
    moved.parent.mkdir()
    files[0].rename(moved)  # renamed and moved into a sub-folder
    shutil.copy2(files[1], tmp_path / "pics" / "coffee copy.png")  # a copy of known content
    files[2].unlink()  # deleted
    shutil.copy2(PHOTOS / "skimage" / "rocket.jpg", files[3])  # changed in place
    changes = indexer.add_folder(tmp_path / "pics")

    assert (changes.moved, changes.added, changes.updated, changes.removed, changes.unchanged) == (1, 1, 1, 1, 1)
    assert changes.embedded == 1  # only the changed photo went through the model
    renamed = photo_by_path(store, moved)
    assert renamed.id == astronaut_id
    np.testing.assert_array_equal(stored_vectors(store, vision, [astronaut_id])[astronaut_id], astronaut_vector)
    copy = photo_by_path(store, tmp_path / "pics" / "coffee copy.png")
    np.testing.assert_array_equal(stored_vectors(store, vision, [copy.id])[copy.id],
                                  stored_vectors(store, vision, [photo_by_path(store, files[1]).id])[photo_by_path(store, files[1]).id])
    assert photo_by_path(store, files[2]) is None
    replaced = photo_by_path(store, files[3])
    np.testing.assert_allclose(stored_vectors(store, vision, [replaced.id])[replaced.id],
                               expected_vector(PHOTOS / "skimage" / "rocket.jpg", weights["vision"]), atol=1e-5)
    assert count_photos(store) == len(vector_rowids(store, vision)) == 4


def test_cancel_keeps_finished_batches_and_a_rerun_completes(store, test_clip, tmp_path):
    names = sorted(p.relative_to(PHOTOS).as_posix() for p in (PHOTOS / "pillow").glob("hopper*"))[:10]
    copy_tree(PHOTOS, tmp_path / "pics", names)
    seen = []

    def progress(stage, done, total):
        seen.append((stage, done, total))

    stop_after_first_batch = PhotoIndexer(store, test_clip[0], batch_size=4, progress=progress,
                                          cancel=lambda: any(stage == "indexing" for stage, *_ in seen))
    summary = stop_after_first_batch.add_folder(tmp_path / "pics")
    assert summary.cancelled and "Stopped early" in summary.describe()
    assert count_photos(store) == 4 and summary.removed == 0
    assert ("indexing", 4, 10) in seen

    rest = PhotoIndexer(store, test_clip[0], batch_size=4).add_folder(tmp_path / "pics")
    assert (rest.unchanged, rest.added) == (4, 6) and count_photos(store) == 10


def test_a_crash_mid_index_loses_at_most_the_current_batch(store, test_clip, tmp_path, monkeypatch):
    names = sorted(p.relative_to(PHOTOS).as_posix() for p in (PHOTOS / "pillow").glob("hopper*"))[:10]
    copy_tree(PHOTOS, tmp_path / "pics", names)
    vision = test_clip[0]
    calls = []
    real_embed = vision.embed_pixels

    def failing_embed(pixels):
        calls.append(len(pixels))
        if len(calls) == 2:
            raise RuntimeError("power cut")
        return real_embed(pixels)

    monkeypatch.setattr(vision, "embed_pixels", failing_embed)
    with pytest.raises(RuntimeError):
        PhotoIndexer(store, vision, batch_size=4).add_folder(tmp_path / "pics")
    assert count_photos(store) == 4 == len(vector_rowids(store, vision))  # the first batch, whole


def test_without_a_model_photos_are_kept_and_embedded_later(store, test_clip, tmp_path):
    copy_tree(PHOTOS, tmp_path / "pics", ["skimage/coffee.png", "skimage/chelsea.png"])
    summary = PhotoIndexer(store, None).add_folder(tmp_path / "pics")
    assert summary.added == 2 and summary.embedded == 0
    assert PhotoIndexer(store, test_clip[0]).embed_missing() == 2
    assert len(vector_rowids(store, test_clip[0])) == 2


def test_files_that_are_not_photos_are_ignored_and_hidden_folders_skipped(store, test_clip, tmp_path):
    pics = tmp_path / "pics"
    copy_tree(PHOTOS, pics, ["skimage/coffee.png"])
    (pics / "notes.txt").write_text("not a photo")
    (pics / ".thumbnails").mkdir()
    shutil.copy2(PHOTOS / "skimage" / "chelsea.png", pics / ".thumbnails" / "chelsea.png")
    summary = PhotoIndexer(store, test_clip[0]).add_folder(pics)
    assert (summary.found, summary.added, summary.skipped) == (1, 1, [])


def test_adding_something_that_is_not_a_folder_is_a_clear_error(store, test_clip, tmp_path):
    from gallery_app.core.errors import AppError

    with pytest.raises(AppError, match="is not a folder"):
        PhotoIndexer(store, test_clip[0]).add_folder(tmp_path / "nowhere")


def test_upload_source_is_recorded(store, test_clip, tmp_path):
    (path,) = copy_tree(PHOTOS, tmp_path, ["skimage/coffee.png"])
    summary = PhotoIndexer(store, test_clip[0]).add_files([path], PhotoSource.UPLOAD)
    assert library.photo_by_id(store, summary.photo_ids[0]).source == "upload"
    assert json.loads(json.dumps(summary.describe()))


@pytest.mark.parametrize("kind", ["Landscape", "Portrait"])
def test_every_exif_orientation_gives_the_model_the_same_upright_input(kind):
    """Measured: ≤ 0.024 (CLIP-normalised units) between orientations; a mirrored input scores 0.55–0.9."""
    from gallery_app.core.photos.preparing import DECODE_SIDE

    folder = PHOTOS / "exif-orientation-examples"
    reference = model_input(decode_image(folder / f"{kind}_1.jpg", max_side=DECODE_SIDE).rgb)
    assert np.abs(reference[:, :, ::-1] - reference).mean() > 0.3  # the bound below can tell a flip apart
    for number in range(2, 9):
        pixels = model_input(decode_image(folder / f"{kind}_{number}.jpg", max_side=DECODE_SIDE).rgb)
        assert np.abs(pixels - reference).mean() < 0.06, number
