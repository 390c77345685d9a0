"""The photo pane: grid over the gallery, text search, tap → similar, upload, viewer, duplicates,
add folder, the no-CLIP state, and a 10,000-photo gallery that loads one page at a time."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import Qt

from gallery_app.core.models.specs import Role
from gallery_app.core.photos import library
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.store import atomic, open_store
from gallery_app.ui.photos import PhotoGridModel, PhotoPane

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"
DEMO_COUNT = len([p for p in DEMO.iterdir() if p.suffix in (".png", ".jpg")])


def _index(folder: Path, vision) -> None:
    conn = open_store()
    try:
        PhotoIndexer(conn, vision, workers=2).add_folder(folder)
    finally:
        conn.close()


@pytest.fixture
def demo_folder(tmp_path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns("*.md", "*.json"))
    # A smaller re-encoded copy of one photo: a near-duplicate for the duplicates view.
    with Image.open(folder / "coffee.png") as image:
        image.convert("RGB").resize((300, 200)).save(folder / "coffee_small.jpg", quality=92)
    return folder


def _make_pane(qtbot, services) -> PhotoPane:
    pane = PhotoPane(services)
    qtbot.addWidget(pane)
    pane.resize(900, 700)
    pane.show()
    return pane


@pytest.fixture
def pane(qtbot, test_clip, demo_folder, services):
    vision, _text, _weights = test_clip
    _index(demo_folder, vision)
    pane = _make_pane(qtbot, services)
    qtbot.waitUntil(lambda: _shown(pane) == DEMO_COUNT + 1, timeout=10_000)
    yield pane
    pane.shutdown()


def _ids(pane: PhotoPane) -> list[int]:
    return [photo.id for photo in pane.model.photos()]


def _shown(pane: PhotoPane) -> int:
    """Photos in the grid (its rows also hold the month headers)."""
    return len(pane.model.photos())


def test_grid_shows_every_photo_with_its_thumbnail_and_the_count(pane, qtbot, qtmodeltester):
    assert pane.header.text() == f"{DEMO_COUNT + 1} photos"
    qtbot.waitUntil(lambda: pane.model.loaded_thumbnails() > 0, timeout=20_000)
    pane.view.scrollToBottom()  # the rows below the first screen ask for theirs once painted
    qtbot.waitUntil(lambda: pane.model.loaded_thumbnails() == DEMO_COUNT + 1, timeout=20_000)
    assert not pane.model.showing_results and not pane.model.canFetchMore()
    index = pane.model.index_of(pane.model.photos()[0].id)
    assert pane.model.data(index, PhotoGridModel.PathRole) in pane.model.data(index, Qt.ItemDataRole.ToolTipRole)
    assert pane.model.month_headers() and pane.model.index(0).data(PhotoGridModel.HeaderRole)
    qtmodeltester.check(pane.model)


def test_typed_query_shows_ranked_results_and_escape_returns_to_all(pane, qtbot, qtmodeltester):
    qtbot.keyClicks(pane.search_box, "a cat on a sofa")
    with qtbot.waitSignal(pane.results_shown, timeout=20_000) as shown:
        qtbot.keyClick(pane.search_box, Qt.Key.Key_Return)
    results = shown.args[0]
    assert re.match(r"\d+ results in \d+ ms", pane.status_line.text()), pane.status_line.text()
    assert pane.model.showing_results and pane.model.rowCount() == len(results.hits) == DEMO_COUNT + 1
    similarities = pane.model.similarities()
    assert similarities == sorted(similarities, reverse=True)
    tip = pane.model.data(pane.model.index(0), Qt.ItemDataRole.ToolTipRole)
    assert f"similarity {similarities[0]:.3f}" in tip
    qtmodeltester.check(pane.model)

    qtbot.keyClick(pane.search_box, Qt.Key.Key_Escape)
    assert pane.search_box.text() == ""
    qtbot.waitUntil(lambda: not pane.model.showing_results and _shown(pane) == DEMO_COUNT + 1)


def test_clicking_a_photo_shows_similar_ones_without_itself(pane, qtbot):
    index = pane.model.index_of(pane.model.photos()[1].id)
    tapped = index.data(PhotoGridModel.IdRole)
    with qtbot.waitSignal(pane.results_shown, timeout=20_000):
        qtbot.mouseClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=pane.view.visualRect(index).center())
    assert tapped not in _ids(pane)
    assert pane.model.rowCount() == DEMO_COUNT  # everything else
    assert "similar to" in pane.status_line.text()


def test_upload_searches_by_the_photo_and_the_count_ticks_up(pane, qtbot, tmp_path):
    new_photo = tmp_path / "sunset.png"
    Image.linear_gradient("L").convert("RGB").resize((320, 240)).save(new_photo)
    with qtbot.waitSignals([pane.results_shown, pane.count_changed], timeout=20_000, order="none"):
        pane.upload([new_photo])
    qtbot.waitUntil(lambda: pane.header.text() == f"{DEMO_COUNT + 2} photos", timeout=10_000)
    top = pane.model.photo_at(0)
    assert top.source == "upload" and top.name == "sunset.png"
    assert "added sunset.png to your gallery" in pane.status_line.text()


def test_a_file_that_is_not_a_photo_gets_a_message(pane, qtbot, tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello")
    with qtbot.waitSignal(pane.problem) as problem:
        assert pane.upload([text_file]) is None
    assert "not photos" in problem.args[0]


def test_double_click_opens_the_viewer_with_the_metadata(pane, qtbot):
    photo = pane.model.photos()[0]
    index = pane.model.index_of(photo.id)
    pane.view.scrollTo(index)
    where = pane.view.visualRect(index).center()
    # A real double-click is press, release, then a double-click event (QListView checks the pressed index).
    qtbot.mouseClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=where)
    qtbot.mouseDClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=where)
    qtbot.waitUntil(lambda: pane.viewer is not None and pane.viewer.isVisible())
    viewer = pane.viewer
    qtbot.waitUntil(viewer.image.has_image, timeout=10_000)
    assert viewer.photo.id == photo.id
    assert viewer.fields["Path"].text() == photo.path
    assert viewer.fields["Size"].text().startswith(f"{photo.width} × {photo.height}")
    assert not pane.model.showing_results  # the single click's "similar" was not run

    # EXIF fields as the viewer shows them (date, place, camera).
    with_exif = replace(photo, captured_at="2023-06-01T14:03:00", latitude=48.85837, longitude=2.294481,
                        camera="Apple iPhone 12")
    viewer = pane.open_viewer(with_exif)
    assert viewer.fields["Date"].text() == "2023-06-01 14:03:00"
    assert viewer.fields["Place"].text() == "48.85837, 2.29448"
    assert viewer.fields["Camera"].text() == "Apple iPhone 12"
    qtbot.waitUntil(viewer.image.has_image, timeout=10_000)
    viewer.close()


def test_duplicates_view_lists_the_near_identical_copy(pane, qtbot, qtmodeltester):
    dialog = pane.show_duplicates()
    qtbot.waitUntil(lambda: dialog.groups.rowCount() > 0, timeout=20_000)
    assert {"coffee.png", "coffee_small.jpg"} <= set(dialog.photo_names())
    assert "groups of near-identical photos" in dialog.summary.text()
    qtmodeltester.check(dialog.tree.model())
    dialog.close()


def test_add_folder_reports_progress_and_the_count_follows(pane, qtbot, tmp_path):
    folder = tmp_path / "holiday"
    folder.mkdir()
    for number, colour in enumerate(("red", "green", "blue", "yellow")):
        Image.new("RGB", (64, 48), colour).save(folder / f"p{number}.png")
    progress = []
    with qtbot.waitSignal(pane.folder_added, timeout=30_000) as added:
        worker = pane.add_folder(folder)
        worker.signals.progress.connect(lambda done, total: progress.append((done, total)))
    assert added.args[0].added == 4
    assert progress and progress[-1] == (4, 4)
    qtbot.waitUntil(lambda: pane.header.text() == f"{DEMO_COUNT + 5} photos", timeout=10_000)
    qtbot.waitUntil(lambda: _shown(pane) == DEMO_COUNT + 5, timeout=10_000)


def test_without_clip_the_photos_show_and_the_search_box_says_what_is_missing(qtbot, demo_folder, services):
    _index(demo_folder, None)  # no model here: rows without vectors
    pane = _make_pane(qtbot, services)
    try:
        qtbot.waitUntil(lambda: _shown(pane) == DEMO_COUNT + 1, timeout=10_000)
        qtbot.waitUntil(lambda: pane.clip_problem is not None, timeout=10_000)
        assert "CLIP" in pane.search_box.placeholderText()
        assert "Help → Models" in pane.search_box.placeholderText()
        assert "models fetch clip" in pane.search_box.toolTip()  # the whole story stays a hover away
        assert pane.header.text() == f"{DEMO_COUNT + 1} photos"
        with qtbot.waitSignal(pane.problem, timeout=10_000) as problem:
            pane.search_text("a cat")
        assert "CLIP ViT-B/32 text tower" in problem.args[0] and "Download is one click" in problem.args[0]
        assert "gallery-app-cli" not in problem.args[0] and not pane.get_clip_button.isHidden()
        with qtbot.waitSignal(pane.models_wanted) as wanted:
            pane.get_clip_button.click()
        assert wanted.args == [Role.CLIP_TEXT]
        assert _shown(pane) == DEMO_COUNT + 1  # the photos stay on screen
    finally:
        pane.shutdown()


@pytest.mark.timeout(60)
def test_ten_thousand_photos_load_a_page_at_a_time(qtbot, services, qtmodeltester, tmp_path):
    photo = tmp_path / "tiny.png"
    Image.new("RGB", (8, 8), "teal").save(photo)
    conn = open_store()
    with atomic(conn):
        for number in range(10_000):
            library.insert_photo(conn, {
                "path": str(tmp_path / f"photo_{number:05}.png"), "source": "folder",
                "content_hash": f"{number:064x}", "file_size": 100, "mtime_ns": 0, "width": 8, "height": 8,
                "captured_at": f"2020-01-01T00:{number // 600 % 60:02}:{number % 60:02}",
            })
    conn.close()
    pane = _make_pane(qtbot, services)
    try:
        qtbot.waitUntil(lambda: pane.model.rowCount() > 0, timeout=10_000)
        assert pane.header.text() == "10,000 photos"
        assert _shown(pane) == 200 and pane.model.canFetchMore()
        assert pane.model.month_headers() == ["January 2020"]
        qtbot.wait(200)
        # Only the rows on screen asked for thumbnails (these paths do not exist: broken-photo icons).
        assert 0 < pane.model.thumbnails.requested < 100
        pane.view.scrollToBottom()
        qtbot.waitUntil(lambda: _shown(pane) >= 400, timeout=10_000)
        assert len(set(_ids(pane))) == _shown(pane)
        assert pane.model.month_headers() == ["January 2020"]  # the second page goes on with the month
        qtmodeltester.check(pane.model)
    finally:
        pane.shutdown()


def test_an_upload_finishing_after_a_newer_search_does_not_replace_its_results(pane, qtbot, tmp_path):
    """Before: the upload's results were shown whenever it finished, over the search typed since."""
    new_photo = tmp_path / "later.png"
    Image.linear_gradient("L").convert("RGB").resize((320, 240)).save(new_photo)
    pane.upload([new_photo])
    pane.search_text("a red car")
    qtbot.waitUntil(lambda: pane.services.workers.active == 0, timeout=30_000)
    qtbot.waitUntil(lambda: "a red car" in pane.status_line.text(), timeout=10_000)
    qtbot.wait(200)
    assert "a red car" in pane.status_line.text() and "added later.png" not in pane.status_line.text()
