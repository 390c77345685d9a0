"""Searching the gallery: by words, by a gallery photo (never itself), by a file (optionally added),
by a camera frame in any channel order, and near-duplicate groups."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gallery_app.core.errors import AppError, ModelNotAvailable
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import count_photos, photo_by_path
from gallery_app.core.photos.photo_vectors import stored_vectors
from gallery_app.core.photos.pixels import PixelLayout, from_numpy
from gallery_app.core.photos.search import PhotoSearch
from gallery_app.core.store import open_store
from tests.unit.test_photo_decode import PHOTOS

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"


@pytest.fixture
def gallery(test_clip, tmp_path):
    """The demo photos indexed with the test towers; (search, vision, text weights, folder)."""
    vision, text, weights = test_clip
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    conn = open_store()
    PhotoIndexer(conn, vision).add_folder(folder)
    yield PhotoSearch(conn, vision=vision, text=text), weights, folder
    conn.close()


def test_text_search_ranks_by_cosine_with_the_text_vector(gallery):
    search, weights, _ = gallery
    results = search.by_text("a cat on a sofa", k=3)
    ids = search.text.tokenizer.encode_batch(["a cat on a sofa"]).astype(np.float32)
    query = (ids @ weights["text"])[0]
    query /= np.linalg.norm(query)
    stored = stored_vectors(search.conn, search.vision, [p.id for p in _all(search)])
    expected = sorted(stored, key=lambda i: -float(stored[i] @ query))[:3]
    assert [hit.photo.id for hit in results.hits] == expected
    for hit in results.hits:
        assert hit.similarity == pytest.approx(float(stored[hit.photo.id] @ query), abs=1e-5)
    assert results.describe().startswith("3 results in ")


def _all(search):
    from gallery_app.core.photos.library import list_photos

    return list_photos(search.conn)


def test_similar_never_returns_the_tapped_photo(gallery):
    search, _, folder = gallery
    for photo in _all(search):
        results = search.similar_to(photo.id, k=10)
        assert photo.id not in [hit.photo.id for hit in results.hits]
        assert len(results.hits) == count_photos(search.conn) - 1
        similarities = [hit.similarity for hit in results.hits]
        assert similarities == sorted(similarities, reverse=True)
    by_path = search.similar_to(folder / "coffee.png", k=2)
    assert photo_by_path(search.conn, folder / "coffee.png").id not in [h.photo.id for h in by_path.hits]


@pytest.mark.shared_fixtures
def test_upload_with_add_counts_one_more_and_finds_itself_at_similarity_one(gallery, tmp_path):
    search, _, _ = gallery
    new_photo = tmp_path / "holiday.jpg"
    Image.open(PHOTOS / "pillow" / "hopper.jpg").save(new_photo)
    before = count_photos(search.conn)

    results = search.by_image_file(new_photo, k=3, add=True)

    assert count_photos(search.conn) == before + 1
    assert results.added is not None and results.added.source == "upload"
    assert Path(results.added.path).is_file() and Path(results.added.path) != new_photo  # the gallery's own copy
    assert results.hits[0].photo.id == results.added.id
    assert results.hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert "added holiday.jpg" in results.describe()

    again = search.by_image_file(new_photo, k=3, add=True)
    assert count_photos(search.conn) == before + 1 and again.already_there


def test_query_image_without_add_changes_nothing(gallery):
    search, _, folder = gallery
    before = count_photos(search.conn)
    results = search.by_image_file(folder / "chelsea.png", k=1)
    assert count_photos(search.conn) == before and results.added is None
    assert results.hits[0].photo.path == str(folder / "chelsea.png")
    assert results.hits[0].similarity == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("layout", [PixelLayout.BGR888, PixelLayout.BGRA8888, PixelLayout.RGB888])
def test_a_camera_frame_in_any_declared_order_finds_the_same_photo(gallery, layout):
    search, _, folder = gallery
    rgb = np.asarray(Image.open(folder / "coffee.png").convert("RGB"))
    channels = {PixelLayout.BGR888: rgb[..., ::-1],
                PixelLayout.BGRA8888: np.dstack([rgb[..., ::-1], np.full(rgb.shape[:2], 255, np.uint8)]),
                PixelLayout.RGB888: rgb}[layout]
    results = search.by_pixels(from_numpy(np.ascontiguousarray(channels), layout), k=1)
    assert results.hits[0].photo.path == str(folder / "coffee.png")
    assert results.hits[0].similarity == pytest.approx(1.0, abs=1e-4)


def test_a_frame_declared_with_the_wrong_order_is_noticed(gallery):
    search, _, folder = gallery
    rgb = np.ascontiguousarray(np.asarray(Image.open(folder / "coffee.png").convert("RGB"))[..., ::-1])
    wrong = search.by_pixels(from_numpy(rgb, PixelLayout.RGB888), k=1)  # BGR data labelled RGB
    assert wrong.hits[0].similarity < 0.999


@pytest.mark.shared_fixtures
def test_a_kept_capture_is_added_as_a_camera_photo_with_its_time(gallery):
    search, _, folder = gallery
    rgb = np.asarray(Image.open(PHOTOS / "pillow" / "hopper.png").convert("RGB"))
    before = count_photos(search.conn)
    results = search.by_pixels(from_numpy(np.ascontiguousarray(rgb), PixelLayout.RGB888), add=True)
    assert count_photos(search.conn) == before + 1
    assert results.added.source == "camera" and results.added.captured_at
    assert results.hits[0].photo.id == results.added.id and results.hits[0].similarity > 0.999


def test_duplicates_group_near_identical_photos(gallery, tmp_path):
    search, _, folder = gallery
    Image.open(folder / "coffee.png").resize((200, 133)).save(folder / "coffee small.jpg", quality=80)
    PhotoIndexer(search.conn, search.vision).add_folder(folder)
    groups = search.duplicates(threshold=0.999)
    names = [{Path(p.path).name for p in g.photos} for g in groups]
    assert {"coffee.png", "coffee small.jpg"} in names
    assert all(g.lowest_similarity > 0.999 for g in groups if g.lowest_similarity is not None)


def test_missing_models_and_unknown_photos_give_clear_errors(gallery):
    search, _, _ = gallery
    with pytest.raises(ModelNotAvailable, match="CLIP text model"):
        PhotoSearch(search.conn, vision=search.vision).by_text("dog")
    with pytest.raises(ModelNotAvailable, match="CLIP vision model"):
        PhotoSearch(search.conn, text=search.text).similar_to(1)
    with pytest.raises(AppError, match="no photo #999"):
        search.similar_to("#999")
    with pytest.raises(AppError, match="Type a few words"):
        search.by_text("   ")
