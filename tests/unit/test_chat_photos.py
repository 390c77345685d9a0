"""The photos of a chat export join the gallery: copied, linked to the message that sent them, never twice."""

from __future__ import annotations

import io
import zipfile
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gallery_app.core import paths, store
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.messages import Message, MessageKind
from gallery_app.core.errors import Cancelled
from gallery_app.core.photos.chat_photos import chat_context, chats_with_photos, photo_captions, photos_of_messages
from gallery_app.core.photos.filters import PhotoFilter
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import count_photos, list_photos
from gallery_app.core.photos.search import PhotoSearch
from gallery_app.core.store.vector_search import search
from gallery_app.core.store.vectors import list_vector_tables
from tests.text_embedders import WordHashEmbedder


def jpeg(colour: tuple[int, int, int], exif_time: str | None = None) -> bytes:
    out = io.BytesIO()
    image = Image.new("RGB", (64, 48), colour)
    if exif_time:
        exif = Image.Exif()
        exif.get_ifd(0x8769)[0x9003] = exif_time  # DateTimeOriginal
        image.save(out, "JPEG", exif=exif.tobytes())
    else:
        image.save(out, "JPEG")
    return out.getvalue()


WEEKEND = [
    "[18.05.24, 16:01:00] Maya: We made it!",
    "[18.05.24, 16:02:00] Maya: <attached: 00000001-PHOTO-2024-05-18-16-02-00.jpg>",
    "[18.05.24, 16:02:30] Maya: view from the cottage",
    "[18.05.24, 16:05:00] Jonas: ‎<attached: 00000002-PHOTO-2024-05-18-16-05-00.jpg> the lake, freezing",
    "[19.05.24, 09:00:00] Jonas: <attached: 00000003-PHOTO-2024-05-19-09-00-00.jpg>",
    "[19.05.24, 09:30:00] Maya: <attached: 00000004-PHOTO-2024-05-19-09-30-00.jpg>",
]
MEDIA = {
    "00000001-PHOTO-2024-05-18-16-02-00.jpg": jpeg((200, 30, 30)),
    "00000002-PHOTO-2024-05-18-16-05-00.jpg": jpeg((30, 200, 30)),
    "00000003-PHOTO-2024-05-19-09-00-00.jpg": jpeg((30, 30, 200), exif_time="2024:04:02 10:00:00"),
    "00000004-PHOTO-2024-05-19-09-30-00.jpg": jpeg((200, 30, 30)),  # the first photo again (forwarded)
}


def export_zip(path: Path, lines: list[str], media: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("_chat.txt", "\r\n".join(lines) + "\r\n")
        for name, data in media.items():
            zf.writestr(name, data)
    return path


@pytest.fixture
def conn(tmp_path):
    connection = store.open_store(tmp_path / "library.db")
    yield connection
    connection.close()


def test_an_exports_photos_join_the_gallery_with_sender_time_and_caption(conn, tmp_path):
    summary = import_chat(conn, export_zip(tmp_path / "WhatsApp Chat - Weekend away.zip", WEEKEND, MEDIA),
                          WordHashEmbedder())
    assert summary.photos.found == 4
    assert (summary.photos.added, summary.photos.linked, summary.photos.refused) == (3, 0, [])
    assert "3 photos added to the gallery" in summary.describe()
    photos = list_photos(conn, where=PhotoFilter(chat_id=summary.chat_id))
    assert len(photos) == 3 and all(p.source == "chat" for p in photos)
    assert all(Path(p.path).is_file() and "photos/chats" in p.path for p in photos)
    sent = {p.name: chat_context(conn, [p.id])[p.id] for p in photos}
    first = sent["00000001-PHOTO-2024-05-18-16-02-00.jpg"]
    # Sent twice (forwarded the next morning): one photo, two messages, earliest first.
    assert [(c.sender, c.sent_at) for c in first] == [("Maya", datetime(2024, 5, 18, 16, 2)),
                                                      ("Maya", datetime(2024, 5, 19, 9, 30))]
    assert first[0].caption == "view from the cottage"  # the sender's next message, within a minute
    assert first[0].describe() == ("Sent by Maya in “Weekend away” on Sat 18 May 2024, 16:02 — “view from the cottage”")
    assert sent["00000002-PHOTO-2024-05-18-16-05-00.jpg"][0].caption == "the lake, freezing"
    # The timeline: the capture time where EXIF has one, else when the chat sent it.
    taken = {p.name: p.taken_at for p in photos}
    assert taken == {"00000001-PHOTO-2024-05-18-16-02-00.jpg": "2024-05-18T16:02:00",
                     "00000002-PHOTO-2024-05-18-16-05-00.jpg": "2024-05-18T16:05:00",
                     "00000003-PHOTO-2024-05-19-09-00-00.jpg": "2024-04-02T10:00:00"}
    assert [p.name for p in photos][0] == "00000002-PHOTO-2024-05-18-16-05-00.jpg"  # newest first
    assert chats_with_photos(conn) == [(summary.chat_id, "Weekend away", 3)]
    by_message = photos_of_messages(conn, [c.message_id for c in first])
    assert {p.name for p in by_message.values()} == {"00000001-PHOTO-2024-05-18-16-02-00.jpg"}


def test_importing_again_adds_nothing_and_a_longer_export_only_its_new_photos(conn, tmp_path):
    path = export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA)
    import_chat(conn, path, WordHashEmbedder())
    again = import_chat(conn, path, WordHashEmbedder())
    assert again.photos is None and count_photos(conn) == 3
    longer = WEEKEND + ["[20.05.24, 18:00:00] Jonas: <attached: 00000005-PHOTO-2024-05-20-18-00-00.jpg>"]
    media = {**MEDIA, "00000005-PHOTO-2024-05-20-18-00-00.jpg": jpeg((250, 250, 0))}
    summary = import_chat(conn, export_zip(tmp_path / "weekend-longer.zip", longer, media), WordHashEmbedder())
    assert (summary.photos.found, summary.photos.added) == (1, 1)
    assert count_photos(conn) == 4


def test_a_photo_already_in_a_folder_is_linked_not_copied_and_takes_the_chats_date(conn, tmp_path, test_clip):
    vision, text, _weights = test_clip
    folder = tmp_path / "Pictures"
    folder.mkdir()
    (folder / "cottage.jpg").write_bytes(MEDIA["00000001-PHOTO-2024-05-18-16-02-00.jpg"])
    PhotoIndexer(conn, vision, workers=1).add_folder(folder)
    (before,) = list_photos(conn)
    assert before.taken_at != "2024-05-18T16:02:00"  # no EXIF: the file's time
    summary = import_chat(conn, export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA), WordHashEmbedder(),
                          vision=vision)
    assert (summary.photos.added, summary.photos.linked) == (2, 2)  # sent twice, linked twice
    assert count_photos(conn) == 3
    in_chat = list_photos(conn, where=PhotoFilter(chat_id=summary.chat_id))
    linked = next(p for p in in_chat if p.id == before.id)
    assert linked.path == before.path and linked.source == "folder"
    assert linked.taken_at == "2024-05-18T16:02:00"
    # The vector's day follows, so a date-range search finds it on the chat's day.
    (table,) = [t for t in list_vector_tables(conn) if t.kind == "photos"]
    days = {n.rowid for n in search(conn, table, np.ones(table.dims, np.float32), model_key=table.model_key, k=10,
                                   where={"taken_day": 20240518})}
    assert before.id in days


def test_search_stays_inside_a_chat_and_a_range_of_days(conn, tmp_path, test_clip):
    vision, text, _weights = test_clip
    folder = tmp_path / "Pictures"
    folder.mkdir()
    (folder / "red.jpg").write_bytes(jpeg((210, 20, 20)))  # close to the chat's red photo, but not in the chat
    PhotoIndexer(conn, vision, workers=1).add_folder(folder)
    summary = import_chat(conn, export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA), WordHashEmbedder(),
                          vision=vision)
    photos = PhotoSearch(conn, vision=vision, text=text)
    everywhere = {h.photo.name for h in photos.by_text("red", k=10).hits}
    assert "red.jpg" in everywhere
    in_chat = {h.photo.name for h in photos.by_text("red", k=10, where=PhotoFilter(chat_id=summary.chat_id)).hits}
    assert in_chat == {"00000001-PHOTO-2024-05-18-16-02-00.jpg", "00000002-PHOTO-2024-05-18-16-05-00.jpg",
                       "00000003-PHOTO-2024-05-19-09-00-00.jpg"}
    may_18 = PhotoFilter(chat_id=summary.chat_id, since=date(2024, 5, 18), until=date(2024, 5, 18))
    assert {h.photo.name for h in photos.by_text("red", k=10, where=may_18).hits} == {
        "00000001-PHOTO-2024-05-18-16-02-00.jpg", "00000002-PHOTO-2024-05-18-16-05-00.jpg"}
    assert {p.name for p in list_photos(conn, where=may_18)} == {
        "00000001-PHOTO-2024-05-18-16-02-00.jpg", "00000002-PHOTO-2024-05-18-16-05-00.jpg"}
    red_id = next(h.photo.id for h in photos.by_text("red", k=10).hits if h.photo.name.startswith("00000001"))
    similar = {h.photo.name for h in photos.similar_to(red_id, k=10, where=PhotoFilter(chat_id=summary.chat_id)).hits}
    assert "red.jpg" not in similar and "00000001-PHOTO-2024-05-18-16-02-00.jpg" not in similar


def test_an_unsafe_or_bomb_photo_is_refused_alone_with_its_reason(conn, tmp_path):
    lines = WEEKEND[:3] + ["[18.05.24, 17:00:00] Jonas: <attached: evil.jpg>",
                           "[18.05.24, 17:01:00] Jonas: <attached: bomb.png>",
                           "[18.05.24, 17:02:00] Jonas: <attached: huge.png>",
                           "[18.05.24, 17:03:00] Jonas: <attached: gone.jpg>"]
    huge = io.BytesIO()
    Image.new("1", (20000, 20000)).save(huge, "PNG")  # 400 million pixels in a few kB
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_chat.txt", "\r\n".join(lines) + "\r\n")
        zf.writestr("00000001-PHOTO-2024-05-18-16-02-00.jpg", MEDIA["00000001-PHOTO-2024-05-18-16-02-00.jpg"])
        zf.writestr("../evil.jpg", jpeg((1, 2, 3)))
        zf.writestr("bomb.png", bytes(50_000_000))
        zf.writestr("huge.png", huge.getvalue())
    summary = import_chat(conn, path, WordHashEmbedder())
    assert summary.messages_added == 7
    photos = summary.photos
    assert (photos.found, photos.added, photos.missing) == (5, 1, 1)
    reasons = dict(photos.refused)
    assert set(reasons) == {"evil.jpg", "bomb.png", "huge.png"}
    assert "unsafe path" in reasons["evil.jpg"]
    assert "zip bomb" in reasons["bomb.png"]
    assert "too large to open safely" in reasons["huge.png"]
    assert not any(Path(p.path).name == "huge.png" for p in list_photos(conn))
    assert not list(paths.data_dir().rglob("huge.png"))  # its copy is removed again
    assert "3 refused" in summary.describe() and "1 not in the export" in summary.describe()


def test_captions_come_from_the_message_or_the_senders_next_one_within_a_minute():
    def message(second: int, sender: str, text: str, attachment: str | None = None, caption: str | None = None):
        kind = MessageKind.TEXT
        return Message(datetime(2024, 5, 18, 16, 0) + (datetime(2024, 1, 1, 0, 0, second % 60) - datetime(2024, 1, 1))
                       + (datetime(2024, 1, 1, 0, second // 60) - datetime(2024, 1, 1)), sender, text, kind, 1,
                       attachment, caption=caption)

    messages = [
        message(0, "Maya", "<attached: a.jpg> sunset", "a.jpg", "sunset"),
        message(10, "Maya", "<attached: b.jpg>", "b.jpg", ""),
        message(20, "Jonas", "nice!"),            # someone else's answer is not the caption
        message(40, "Maya", "the bay at 6pm"),   # the sender's next message within a minute is
        message(100, "Maya", "<attached: c.jpg>", "c.jpg", ""),
        message(200, "Maya", "too late to be a caption"),
        message(300, "Maya", "<attached: d.pdf>", "d.pdf", ""),
    ]
    keys = [f"k{i}" for i in range(len(messages))]
    assert photo_captions(messages, keys) == {"k0": "sunset", "k1": "the bay at 6pm", "k4": ""}


def test_an_import_cancelled_while_adding_photos_keeps_the_messages_and_the_next_one_finishes(conn, tmp_path):
    path = export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA)
    stop = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "photos" and done < total:
            stop.append(True)

    with pytest.raises(Cancelled, match="the messages are saved"):
        import_chat(conn, path, WordHashEmbedder(), progress=progress, cancel=lambda: bool(stop))
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == len(WEEKEND)
    assert count_photos(conn) == 0
    summary = import_chat(conn, path, WordHashEmbedder())
    assert (summary.photos.added, summary.photos.refused) == (3, [])
    assert count_photos(conn) == 3
    assert sorted(p.name for p in paths.data_dir().rglob("*.jpg") if "chats" in p.parts) == sorted(
        {"00000001-PHOTO-2024-05-18-16-02-00.jpg", "00000002-PHOTO-2024-05-18-16-05-00.jpg",
         "00000003-PHOTO-2024-05-19-09-00-00.jpg"})  # the copies left by the first run were used, not doubled


def test_a_folder_added_after_the_chat_takes_the_place_of_the_chats_copies(conn, tmp_path, test_clip):
    vision, _text, _weights = test_clip
    summary = import_chat(conn, export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA), WordHashEmbedder(),
                          vision=vision)
    copy = next(p for p in list_photos(conn) if p.name == "00000001-PHOTO-2024-05-18-16-02-00.jpg")
    folder = tmp_path / "Pictures"
    folder.mkdir()
    (folder / "cottage.jpg").write_bytes(MEDIA["00000001-PHOTO-2024-05-18-16-02-00.jpg"])
    PhotoIndexer(conn, vision, workers=1).add_folder(folder)
    assert count_photos(conn) == 3  # not shown twice
    adopted = next(p for p in list_photos(conn) if p.id == copy.id)
    assert (adopted.name, adopted.source) == ("cottage.jpg", "folder")
    assert not Path(copy.path).exists()  # the app's copy is gone, the person's file stays
    assert [c.sender for c in chat_context(conn, [copy.id])[copy.id]] == ["Maya", "Maya"]
    assert adopted.id in {p.id for p in list_photos(conn, where=PhotoFilter(chat_id=summary.chat_id))}
    (table,) = [t for t in list_vector_tables(conn) if t.kind == "photos"]
    uploads_or_folders = {n.rowid for n in search(conn, table, np.ones(table.dims, np.float32),
                                                  model_key=table.model_key, k=10, where={"source": "folder"})}
    assert uploads_or_folders == {copy.id}  # the vector's source followed


def test_a_range_that_ends_on_the_last_day_a_calendar_has_is_accepted(conn):
    assert list_photos(conn, where=PhotoFilter(since=date(2024, 1, 1), until=date.max)) == []


def test_the_photos_are_told_done_only_once_they_are_linked(conn, tmp_path):
    # The window reloads the grid and its chat filter when the photos are done: the links must be there by then.
    linked_when_done = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "photos" and done == total:
            linked_when_done.append(conn.execute("SELECT count(*) FROM chat_photos").fetchone()[0])

    import_chat(conn, export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA), WordHashEmbedder(), progress=progress)
    assert linked_when_done == [4]


def test_a_copys_name_keeps_only_characters_every_file_system_takes(conn, tmp_path):
    lines = ['[18.05.24, 16:02:00] Maya: <attached: Sunset: "Bay"?.jpg>']
    summary = import_chat(conn, export_zip(tmp_path / "names.zip", lines, {'Sunset: "Bay"?.jpg': jpeg((9, 9, 9))}),
                          WordHashEmbedder())
    assert summary.photos.added == 1
    (photo,) = list_photos(conn)
    assert photo.name == "Sunset_ _Bay__.jpg" and Path(photo.path).is_file()  # a data folder on Windows or FAT


def _extracted(tmp_path: Path) -> Path:
    """The export's photos as a person unzipped them into a folder of their own."""
    folder = tmp_path / "extracted"
    folder.mkdir()
    for name, data in MEDIA.items():
        (folder / name).write_bytes(data)
    return folder


def _chat_photo_links(conn) -> int:
    return conn.execute("SELECT count(*) FROM chat_photos").fetchone()[0]


@pytest.mark.parametrize("between", ["_index_copies", "_link"])
def test_a_folder_added_while_a_chat_adds_the_same_photos_gives_one_photo_each_all_linked(
        conn, tmp_path, monkeypatch, between):
    # `chat import many.zip &` then `photos add extracted/` (issue 23): the folder commits while the chat
    # has copied its photos but not indexed them ("_index_copies"), or indexed but not linked them ("_link").
    from gallery_app.core.photos import chat_photos

    folder = _extracted(tmp_path)
    original = getattr(chat_photos, between)
    other = store.open_store(tmp_path / "library.db")

    def folder_commits_first(*args, **kwargs):
        PhotoIndexer(other, None, workers=1).add_folder(folder)
        return original(*args, **kwargs)

    monkeypatch.setattr(chat_photos, between, folder_commits_first)
    try:
        summary = import_chat(conn, export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA), WordHashEmbedder())
    finally:
        other.close()
    assert count_photos(conn) == 4  # the folder's four files, as one after the other gives: no chat copy besides
    assert _chat_photo_links(conn) == 4  # every message that sent a photo is linked to it
    in_chat = list_photos(conn, where=PhotoFilter(chat_id=summary.chat_id))
    assert {Path(p.path).parent for p in in_chat} == {folder.resolve()}  # the person's files, not copies
    chats = paths.library_dir("chats")
    assert not chats.exists() or not any(p.is_file() for p in chats.rglob("*"))  # no copy left behind


def test_a_chat_import_and_a_folder_of_its_photos_at_the_same_time(tmp_path):
    # The probe of issue 23 with real threads: whichever commits first, one row per photo and every link.
    import threading

    from tests.chat_photo_exports import photo_chat

    lines, media = photo_chat(40)
    export = export_zip(tmp_path / "many.zip", lines, media)
    folder = tmp_path / "extracted"
    folder.mkdir()
    for name, data in media.items():
        (folder / name).write_bytes(data)
    for attempt in range(3):
        database = tmp_path / f"library-{attempt}.db"
        store.open_store(database).close()
        errors: list[BaseException] = []

        def run(job):
            connection = store.open_store(database)
            try:
                job(connection)
            except BaseException as exc:  # reported below, on the test's thread
                errors.append(exc)
            finally:
                connection.close()

        jobs = [threading.Thread(target=run, args=(lambda c: import_chat(c, export, WordHashEmbedder()),)),
                threading.Thread(target=run, args=(lambda c: PhotoIndexer(c, None, workers=1).add_folder(folder),))]
        for job in jobs:
            job.start()
        for job in jobs:
            job.join(120)
        assert not errors, errors
        check = store.open_store(database)
        try:
            assert (count_photos(check), _chat_photo_links(check)) == (40, 40), f"attempt {attempt}"
        finally:
            check.close()


def test_a_chat_photo_copy_deleted_from_the_data_folder_comes_back_when_the_chat_is_imported_again(conn, tmp_path):
    # Before: its row, link and thumbnail stayed, the file did not, and importing the chat again changed nothing.
    path = export_zip(tmp_path / "weekend.zip", WEEKEND, MEDIA)
    import_chat(conn, path, WordHashEmbedder())
    copies = [Path(p.path) for p in list_photos(conn)]
    ids = sorted(p.id for p in list_photos(conn))
    copies[0].unlink()
    again = import_chat(conn, path, WordHashEmbedder())
    assert copies[0].is_file()
    assert "1 photo missing from the data folder restored from the export." in again.describe()
    assert sorted(p.id for p in list_photos(conn)) == ids and _chat_photo_links(conn) == 4
