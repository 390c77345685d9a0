"""Duplicates without any model: identical files (content hash) and resized or re-encoded copies (perceptual
hash) of real photos; hashes filled in for photos indexed before they existed; CLIP pairs joined in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image

from gallery_app.core import store
from gallery_app.core.photos.duplicates import IDENTICAL, LOOKS_ALIKE, RESIZED, duplicate_groups
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import list_photos, photo_by_path
from gallery_app.core.photos.search import PhotoSearch
from gallery_app.core.photos.thumbnails import thumbnail_path
from gallery_app.core.store import open_store
from gallery_app.core.store.migrations import MIGRATIONS, migrate
from tests.conftest import SHARED_FIXTURES

SKIMAGE = SHARED_FIXTURES / "photos" / "skimage"
pytestmark = pytest.mark.shared_fixtures


@pytest.fixture
def folder(tmp_path):
    """A cat, its byte-identical backup, a smaller re-encoded copy of it, and two other photos."""
    folder = tmp_path / "photos"
    (folder / "backup").mkdir(parents=True)
    shutil.copy(SKIMAGE / "chelsea.png", folder / "chelsea.png")
    shutil.copy(SKIMAGE / "chelsea.png", folder / "backup" / "chelsea.png")
    with Image.open(SKIMAGE / "chelsea.png") as image:
        image.convert("RGB").resize((225, 150)).save(folder / "chelsea sent.jpg", quality=70)
    shutil.copy(SKIMAGE / "coffee.png", folder / "coffee.png")
    shutil.copy(SKIMAGE / "rocket.jpg", folder / "rocket.jpg")
    return folder


def _names(group) -> set[str]:
    return {p.name if Path(p.path).parent.name != "backup" else "backup/" + p.name for p in group.photos}


def test_without_a_model_identical_and_resized_copies_are_one_group(folder):
    """Before: duplicates needed the CLIP model (ModelNotAvailable) and found nothing without it."""
    conn = open_store()
    PhotoIndexer(conn, None).add_folder(folder)
    (group,) = PhotoSearch(conn).duplicates()
    assert _names(group) == {"chelsea.png", "backup/chelsea.png", "chelsea sent.jpg"}
    assert group.found_as == {IDENTICAL, RESIZED} and group.lowest_similarity is None
    assert group.describe() == "3 photos: identical files, resized or re-encoded copies"
    conn.close()


def test_photos_indexed_before_the_hash_existed_get_it_once(folder, tmp_path):
    path = tmp_path / "old.db"
    conn = store.connect(path)
    migrate(conn, MIGRATIONS[:6])  # the schema before 007
    conn.close()
    conn = open_store(path)
    PhotoIndexer(conn, None).add_folder(folder)
    conn.execute("UPDATE photos SET perceptual_hash = NULL")  # as 007 leaves the rows of an older gallery
    thumbnail_path(photo_by_path(conn, folder / "coffee.png").content_hash).unlink()  # decoded from the file
    groups = duplicate_groups(conn)
    assert [_names(g) for g in groups] == [{"chelsea.png", "backup/chelsea.png", "chelsea sent.jpg"}]
    assert all(len(p.perceptual_hash) == 16 for p in list_photos(conn))  # stored: the next look reads them
    conn.close()


def test_a_flat_picture_is_no_copy_of_another_flat_one(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    for colour in ("red", "blue", "white"):
        Image.new("RGB", (64, 48), colour).save(folder / f"{colour}.png")
    conn = open_store()
    PhotoIndexer(conn, None).add_folder(folder)
    assert {p.perceptual_hash for p in list_photos(conn)} == {""}
    assert PhotoSearch(conn).duplicates() == []
    conn.close()


def test_clip_pairs_join_the_copies_found_by_hash(folder):
    conn = open_store()
    PhotoIndexer(conn, None).add_folder(folder)
    ids = {p.name: p.id for p in list_photos(conn) if Path(p.path).parent.name != "backup"}
    # As if CLIP found the coffee and the rocket alike, and the cat's copy alike to the coffee.
    groups = duplicate_groups(conn, [(ids["coffee.png"], ids["rocket.jpg"], 0.97),
                                     (ids["chelsea sent.jpg"], ids["coffee.png"], 0.96)])
    (group,) = groups
    assert len(group.photos) == 5 and group.found_as == {IDENTICAL, RESIZED, LOOKS_ALIKE}
    assert group.lowest_similarity == pytest.approx(0.96)
    assert "look alike (similarity ≥ 0.960)" in group.describe()
    conn.close()


def test_with_clip_a_copy_reuses_its_twins_hash_and_the_groups_merge(folder, test_clip, tmp_path):
    vision, _text, _weights = test_clip
    conn = open_store()
    PhotoIndexer(conn, vision).add_folder(folder)
    later = tmp_path / "later"
    later.mkdir()
    shutil.copy(folder / "chelsea.png", later / "chelsea again.png")
    PhotoIndexer(conn, vision).add_folder(later)  # known content: its vector and row are copied, not decoded
    original = photo_by_path(conn, folder / "chelsea.png")
    again = photo_by_path(conn, later / "chelsea again.png")
    assert original.perceptual_hash and again.perceptual_hash == original.perceptual_hash
    groups = PhotoSearch(conn, vision=vision).duplicates(threshold=0.999)
    assert {"chelsea.png", "backup/chelsea.png", "chelsea sent.jpg", "chelsea again.png"} <= _names(groups[0])
    assert IDENTICAL in groups[0].found_as
    conn.close()
