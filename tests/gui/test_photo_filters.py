"""The photo grid's filter, month headers and range of days, over a real library: a folder of photos with
EXIF capture times in different months and a chat export whose photos have none (they take the time of
the message that sent them). Searches run the tiny CLIP towers (tests/clip_models.py)."""

from __future__ import annotations

import io
import zipfile
from datetime import date, datetime

import pytest
from PIL import Image
from PySide6.QtCore import QDate

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.photos.filters import PhotoFilter
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.pixels import PixelBuffer, PixelLayout
from gallery_app.core.store import open_store
from gallery_app.ui.photos import PhotoGridModel, PhotoPane, jobs
from tests.text_embedders import WordHashEmbedder

#: Capture times written into the folder's photos (EXIF DateTimeOriginal), deliberately not in file order.
CAPTURED = {"pier.jpg": datetime(2024, 1, 6, 11, 30), "market.jpg": datetime(2024, 3, 2, 9, 15),
            "beach.jpg": datetime(2023, 7, 21, 18, 5)}
CHAT_TITLE = "Weekend away"
CHAT_LINES = [
    "[17/05/2024, 20:14:05] Tom: Train at nine tomorrow?",
    "[17/05/2024, 20:15:40] Maya: Yes, see you on the platform",
    "[18/05/2024, 16:02:00] Maya: \u200e<attached: 00000003-PHOTO-2024-05-18-16-02-00.jpg>",
    "[18/05/2024, 16:02:30] Maya: view from the cottage",
    "[18/05/2024, 19:40:12] Tom: \u200e<attached: 00000005-PHOTO-2024-05-18-19-40-12.jpg>",
    "[19/05/2024, 10:05:00] Tom: What a weekend",
]
CHAT_PHOTOS = {"00000003-PHOTO-2024-05-18-16-02-00.jpg": (40, 120, 200),
               "00000005-PHOTO-2024-05-18-19-40-12.jpg": (230, 150, 40)}


def _jpeg(colour, captured: datetime | None = None) -> bytes:
    image = Image.new("RGB", (96, 64), colour)
    exif = Image.Exif()
    if captured is not None:
        exif.get_ifd(0x8769)[0x9003] = captured.strftime("%Y:%m:%d %H:%M:%S")  # DateTimeOriginal
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, exif=exif.tobytes())
    return out.getvalue()


@pytest.fixture
def library(tmp_path, test_clip):
    """The folder indexed and the chat imported with the test CLIP: {"folder": ids, "chat": ids, "chat_id"}."""
    vision, _text, _weights = test_clip
    folder = tmp_path / "holiday"
    folder.mkdir()
    for number, (name, captured) in enumerate(CAPTURED.items()):
        (folder / name).write_bytes(_jpeg((200 - 60 * number, 60 * number, 90), captured))
    export = tmp_path / f"WhatsApp Chat - {CHAT_TITLE}.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("_chat.txt", "\r\n".join(CHAT_LINES) + "\r\n")
        for name, colour in CHAT_PHOTOS.items():
            archive.writestr(name, _jpeg(colour))  # no EXIF, as WhatsApp sends them
    conn = open_store()
    try:
        PhotoIndexer(conn, vision, workers=1).add_folder(folder)
        summary = import_chat(conn, export, WordHashEmbedder(), vision=vision)
        assert summary.title == CHAT_TITLE and summary.photos.added == 2
        chat_ids = {row[0] for row in conn.execute("SELECT photo_id FROM chat_photos")}
        folder_ids = {row[0] for row in conn.execute("SELECT id FROM photos WHERE folder_id IS NOT NULL")}
    finally:
        conn.close()
    return {"folder": folder_ids, "chat": chat_ids, "chat_id": summary.chat_id}


@pytest.fixture
def pane(qtbot, services, library):
    pane = PhotoPane(services)
    qtbot.addWidget(pane)
    pane.resize(1000, 800)
    pane.show()
    qtbot.waitUntil(lambda: len(pane.model.photos()) == 5 and len(pane.filter.collections()) == 3, timeout=10_000)
    yield pane
    pane.shutdown()


def _shown(pane: PhotoPane) -> set[int]:
    return {photo.id for photo in pane.model.photos()}


def _hits(results) -> set[int]:
    return {hit.photo.id for hit in results.hits}


def _search(pane: PhotoPane, qtbot, start):
    with qtbot.waitSignal(pane.results_shown, timeout=20_000) as shown:
        start()
    return shown.args[0]


def test_the_filter_lists_the_folder_and_the_chat_and_narrows_the_grid_and_every_search(pane, qtbot, library, tmp_path):
    labels = [pane.filter.itemText(row) for row in range(pane.filter.count())]
    assert labels == ["All photos (5)", "Folder: holiday (3)", f"Chat: {CHAT_TITLE} (2)"]
    assert pane.header.text() == "5 photos"

    pane.filter.choose("chat", library["chat_id"])
    qtbot.waitUntil(lambda: _shown(pane) == library["chat"], timeout=10_000)
    qtbot.waitUntil(lambda: pane.header.text() == f"2 photos in “{CHAT_TITLE}”", timeout=10_000)
    assert pane.model.month_headers() == ["May 2024"]

    # By words: only the chat's photos are ranked, and the line says where the search looked.
    results = _search(pane, qtbot, lambda: pane.search_text("view from the cottage"))
    assert _hits(results) == library["chat"]
    assert pane.status_line.text().endswith(f"“view from the cottage” in “{CHAT_TITLE}”")

    # Another filter while the results are shown: the same words, searched again inside it.
    results = _search(pane, qtbot, lambda: pane.filter.choose("folder", next(
        c.id for c in pane.filter.collections() if c.kind == "folder")))
    assert _hits(results) == library["folder"] and "in the folder “holiday”" in pane.status_line.text()
    results = _search(pane, qtbot, lambda: pane.filter.choose("all"))
    assert len(results.hits) == 5

    # By a photo of the chat: the other one, never itself and never the folder's.
    pane.filter.choose("chat", library["chat_id"])
    first, second = sorted(library["chat"])
    results = _search(pane, qtbot, lambda: pane.show_similar(first))
    assert _hits(results) == {second}

    # By an uploaded photo: it joins the gallery, the search stays inside the chat.
    upload = tmp_path / "sunset.png"
    Image.linear_gradient("L").convert("RGB").resize((120, 80)).save(upload)
    results = _search(pane, qtbot, lambda: pane.upload([upload]))
    assert _hits(results) == library["chat"] and results.added is not None
    qtbot.waitUntil(lambda: pane.filter.itemText(0) == "All photos (6)", timeout=10_000)

    # By the camera: the dialog searches among what the pane shows.
    services = pane.services
    dialog = pane.open_camera()
    assert dialog.where == pane.where == PhotoFilter(chat_id=library["chat_id"])
    dialog.close()
    frame = PixelBuffer(Image.new("RGB", (64, 48), (40, 120, 200)).tobytes(), 64, 48, PixelLayout.RGB888, 64 * 3)
    camera_results = jobs.search_pixels(None, services, frame, False, where=pane.where)
    assert _hits(camera_results) == library["chat"]

    # Escape goes back to the chat's grid, "All photos" to everything.
    pane._escape()
    qtbot.waitUntil(lambda: not pane.model.showing_results and _shown(pane) == library["chat"], timeout=10_000)
    pane.filter.choose("all")
    qtbot.waitUntil(lambda: len(_shown(pane)) == 6 and pane.header.text() == "6 photos", timeout=10_000)


def test_month_headers_follow_the_capture_time_and_chat_photos_take_their_message_month(pane, qtbot, library):
    assert pane.model.month_headers() == ["May 2024", "March 2024", "January 2024", "July 2023"]
    # Every photo sits under the header of its own month (capture time, else the message's time).
    month = None
    for row in range(pane.model.rowCount()):
        index = pane.model.index(row)
        header = index.data(PhotoGridModel.HeaderRole)
        if header is not None:
            month = header
            assert not index.flags() & index.flags().ItemIsSelectable
            continue
        photo = index.data(PhotoGridModel.PhotoRole)
        assert f"{photo.taken_time:%B %Y}" == month
        if photo.id in library["chat"]:
            assert photo.captured_at is None and photo.taken_at.startswith("2024-05-18")
        else:
            assert photo.taken_time == CAPTURED[photo.name]

    # On screen: a header is a line of its own, as wide as the grid; its photos start below it.
    view = pane.view
    qtbot.waitUntil(lambda: view.visualRect(pane.model.index(0)).width() > 0, timeout=5_000)
    for row in range(pane.model.rowCount() - 1):
        index = pane.model.index(row)
        if index.data(PhotoGridModel.HeaderRole) is not None:
            rect, below = view.visualRect(index), view.visualRect(pane.model.index(row + 1))
            assert rect.width() >= view.viewport().width() - 3 * view.spacing()
            assert below.top() > rect.bottom() and below.left() <= rect.left() + view.spacing()

    # Ranked results have no headers.
    results = _search(pane, qtbot, lambda: pane.search_text("a beach at sunset"))
    assert pane.model.rowCount() == len(results.hits) == 5 and pane.model.month_headers() == []


def test_a_range_of_days_limits_the_grid_and_the_search_and_a_backwards_range_is_refused(pane, qtbot, library):
    # Ticking "Dates" offers the gallery's whole timeline: nothing is hidden yet.
    pane.dates.toggle.setChecked(True)
    assert pane.dates.days() == (date(2023, 7, 21), date(2024, 5, 18))
    qtbot.wait(50)
    assert len(_shown(pane)) == 5

    pane.dates.set_days(date(2024, 1, 1), date(2024, 3, 31))
    winter = {photo_id for photo_id in library["folder"]} - {_id_of(pane, "beach.jpg")}
    qtbot.waitUntil(lambda: _shown(pane) == winter, timeout=10_000)
    assert pane.model.month_headers() == ["March 2024", "January 2024"]
    qtbot.waitUntil(lambda: pane.header.text() == "2 photos from 1 Jan 2024 to 31 Mar 2024", timeout=10_000)
    results = _search(pane, qtbot, lambda: pane.search_text("a market"))
    assert _hits(results) == winter

    # Editing a date as the person does (arrows, calendar, digits): applied once it settles.
    with qtbot.waitSignal(pane.results_shown, timeout=20_000) as shown:
        pane.dates.since_edit.setDate(QDate(2024, 2, 1))
    assert _hits(shown.args[0]) == {_id_of(pane, "market.jpg")}
    pane._escape()
    qtbot.waitUntil(lambda: _shown(pane) == {_id_of(pane, "market.jpg")}, timeout=10_000)

    # With the chat: its photos of May only.
    pane.filter.choose("chat", library["chat_id"])
    qtbot.waitUntil(lambda: pane.header.text() == f"0 photos in “{CHAT_TITLE}” from 1 Feb 2024 to 31 Mar 2024",
                    timeout=10_000)
    assert pane.model.rowCount() == 0
    pane.dates.set_days(date(2024, 5, 18), date(2024, 5, 18))
    qtbot.waitUntil(lambda: _shown(pane) == library["chat"], timeout=10_000)
    assert pane.header.text() == f"2 photos in “{CHAT_TITLE}” on 18 May 2024"

    # A start after the end: refused with the reason, the grid as it was.
    with qtbot.waitSignal(pane.problem) as problem:
        pane.dates.set_days(date(2024, 6, 1), date(2024, 5, 1))
    assert "starts on 01 Jun 2024, after it ends (01 May 2024)" in problem.args[0]
    assert "after it ends" in pane.status_line.text() and "after it ends" in pane.dates.since_edit.toolTip()
    qtbot.wait(50)
    assert _shown(pane) == library["chat"] and pane.where.since == date(2024, 5, 18)

    # Unticked: every day again (and the red outline goes).
    pane.dates.clear()
    qtbot.waitUntil(lambda: pane.header.text() == f"2 photos in “{CHAT_TITLE}”", timeout=10_000)
    assert pane.dates.since_edit.styleSheet() == "" and "after it ends" not in pane.status_line.text()
    pane.filter.choose("all")
    qtbot.waitUntil(lambda: len(_shown(pane)) == 5 and pane.header.text() == "5 photos", timeout=10_000)


def test_a_chat_imported_while_the_pane_is_open_joins_the_filter(qtbot, services, tmp_path, test_clip):
    vision, _text, _weights = test_clip
    pane = PhotoPane(services)
    qtbot.addWidget(pane)
    pane.show()
    try:
        qtbot.waitUntil(lambda: pane.filter.collections()[0].label == "All photos (0)", timeout=10_000)
        export = tmp_path / f"WhatsApp Chat - {CHAT_TITLE}.zip"
        with zipfile.ZipFile(export, "w") as archive:
            archive.writestr("_chat.txt", "\r\n".join(CHAT_LINES) + "\r\n")
            for name, colour in CHAT_PHOTOS.items():
                archive.writestr(name, _jpeg(colour))
        conn = open_store()
        try:
            import_chat(conn, export, WordHashEmbedder(), vision=vision)
        finally:
            conn.close()
        services.data_changed.emit("chats")  # what the chat pane says after an import
        qtbot.waitUntil(lambda: [c.label for c in pane.filter.collections()]
                        == ["All photos (2)", f"Chat: {CHAT_TITLE} (2)"], timeout=10_000)
        qtbot.waitUntil(lambda: len(pane.model.photos()) == 2 and pane.model.month_headers() == ["May 2024"],
                        timeout=10_000)
    finally:
        pane.shutdown()


def _id_of(pane: PhotoPane, name: str) -> int:
    conn = open_store()
    try:
        return conn.execute("SELECT id FROM photos WHERE path LIKE ?", (f"%/{name}",)).fetchone()[0]
    finally:
        conn.close()
