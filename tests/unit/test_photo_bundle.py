"""Bundled gallery vectors: exported from an indexed folder, imported elsewhere in one batch."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from gallery_app.core.errors import VectorModelMismatch
from gallery_app.core.photos.bundle import export_bundle, import_bundle
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import count_photos, list_photos
from gallery_app.core.photos.photo_vectors import stored_vectors
from gallery_app.core.store import open_store

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"


def test_a_bundle_round_trips_vectors_and_metadata_without_the_model_running(test_clip, tmp_path, monkeypatch):
    vision = test_clip[0]
    source = open_store(tmp_path / "source.db")
    PhotoIndexer(source, vision).add_folder(DEMO)
    bundle = tmp_path / "demo-vectors.npz"
    assert export_bundle(source, vision, DEMO, bundle) == 7

    installed = tmp_path / "installed"
    shutil.copytree(DEMO, installed)
    target = open_store(tmp_path / "target.db")
    monkeypatch.setattr(vision, "embed_pixels", lambda *_: pytest.fail("a bundle import must not run the model"))
    result = import_bundle(target, vision, bundle, installed)
    assert (result.imported, result.missing) == (7, [])
    assert count_photos(target) == 7
    before = {Path(p.path).name: p for p in list_photos(source)}
    for photo in list_photos(target):
        assert photo.source == "bundled" and Path(photo.path).parent == installed
        original = before[photo.name]
        assert (photo.content_hash, photo.width, photo.height) == (original.content_hash, original.width, original.height)
        np.testing.assert_array_equal(stored_vectors(target, vision, [photo.id])[photo.id],
                                      stored_vectors(source, vision, [original.id])[original.id])
    again = import_bundle(target, vision, bundle, installed)
    assert (again.imported, again.already_there) == (0, 7)

    # A folder with a photo missing and one changed: those are reported, the rest imported.
    partial = tmp_path / "partial"
    shutil.copytree(DEMO, partial)
    (partial / "coffee.png").unlink()
    (partial / "rocket.jpg").write_bytes(b"not the rocket")
    third = open_store(tmp_path / "third.db")
    result = import_bundle(third, vision, bundle, partial)
    assert result.imported == 5 and sorted(result.missing) == ["coffee.png", "rocket.jpg"]


def test_a_bundle_from_another_model_is_refused(test_clip, tmp_path):
    vision = test_clip[0]
    conn = open_store()
    PhotoIndexer(conn, vision).add_folder(DEMO)
    bundle = tmp_path / "v.npz"
    export_bundle(conn, vision, DEMO, bundle)
    with np.load(bundle) as data:
        arrays = dict(data)
    arrays["header"] = np.array(str(arrays["header"]).replace("clip-vit-b-32", "another-clip"))
    np.savez(bundle, **arrays)
    with pytest.raises(VectorModelMismatch, match="another-clip"):
        import_bundle(open_store(tmp_path / "other.db"), vision, bundle, DEMO)
