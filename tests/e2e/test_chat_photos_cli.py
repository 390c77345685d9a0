"""Issue 14's acceptance through gallery-app-cli: a chat export's photos join the gallery with who sent them
and when; hostile members are refused one by one while the rest imports; re-imports add only what is new;
a photo already in a gallery folder is linked, not copied."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from gallery_app.cli import main
from gallery_app.core import paths
from gallery_app.core.photos.chat_photos import chat_context
from gallery_app.core.photos.library import count_photos, list_photos
from gallery_app.core.store import open_store
from tests.chat_photo_exports import attached, jpeg_bytes, line, photo_chat, png_claiming, write_export
from tests.conftest import SHARED_FIXTURES

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
PUSTUR = SHARED_FIXTURES / "whatsapp" / "pustur_whatsapp-chat-parser-website" / "whatsapp-chat-parser-example.zip"
PUSTUR_PHOTO = "00000001-PHOTO-2019-06-20-16-00-15.jpg"
EMBEDDER = ["--embedder", "all-minilm-l6-v2-int8"]  # the small offline one: these tests are about the photos


def cli(*args: str) -> subprocess.CompletedProcess:
    """The installed command as a person runs it, on this checkout's code."""
    return subprocess.run([sys.executable, "-m", "gallery_app.cli", *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


def run(capsys, *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def gallery():
    return open_store(paths.database_path())


def chat_copies() -> list[str]:
    """The files chat imports copied into the data folder."""
    folder = paths.library_dir("chats")
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


@pytest.mark.shared_fixtures
def test_the_pustur_export_adds_its_one_photo_with_sender_and_time_and_a_second_import_adds_nothing(test_clip):
    imported = cli("chat", "import", str(PUSTUR), *EMBEDDER)
    assert imported.returncode == 0, imported.stderr
    assert "1 photo added to the gallery." in imported.stdout, imported.stdout
    assert "refused" not in imported.stdout and "not in the export" not in imported.stdout
    assert "Adding photos [#########################] 100% 1/1 photos" in imported.stderr
    # The video, the audio, the nested .zip and __MACOSX/ are attachments, not photos.
    assert chat_copies() == [PUSTUR_PHOTO]
    conn = gallery()
    (photo,) = list_photos(conn)
    assert photo.source == "chat" and photo.taken_at == "2019-06-20T16:00:15"
    (sent,) = chat_context(conn, [photo.id])[photo.id]
    assert sent.sender == "Loris" and sent.sent_at == datetime(2019, 6, 20, 16, 0, 15)

    listed = cli("photos", "list", "--chat", str(sent.chat_id))
    assert listed.returncode == 0, listed.stderr
    (row,) = listed.stdout.splitlines()
    assert "[chat] Sent by Loris in “whatsapp-chat-parser-example” on Thu 20 Jun 2019, 16:00" in row
    assert row.endswith(PUSTUR_PHOTO)
    found = cli("photos", "search", "a screenshot", "--chat", str(sent.chat_id), "--from", "2019-06-20",
                "--to", "2019-06-20")
    assert found.returncode == 0 and found.stdout.startswith("1 results in "), found.stdout + found.stderr

    again = cli("chat", "import", str(PUSTUR), *EMBEDDER)
    assert again.returncode == 0, again.stderr
    assert "already up to date" in again.stdout and "photo" not in again.stdout, again.stdout
    assert count_photos(gallery()) == 1 and chat_copies() == [PUSTUR_PHOTO]


def test_a_bomb_a_pixel_bomb_and_a_traversal_path_are_refused_one_by_one_and_the_rest_imports(tmp_path, capsys):
    start = datetime(2024, 5, 18, 10, 0)
    names = ["first.jpg", "bomb.jpg", "huge.png", "evil.jpg", "last.jpg"]
    lines = [line(start.replace(minute=n), "Maya", attached(name)) for n, name in enumerate(names)]
    lines += [line(start.replace(hour=11), "Daniel", "all of them arrived?")]
    members = {
        "first.jpg": jpeg_bytes(1),
        # 3 MB that deflate to a few KB: more than 200 to 1 and at least 1 MB.
        "bomb.jpg": jpeg_bytes(2) + b"\0" * 3_000_000,
        # A few hundred bytes that claim 400 million pixels: the decoder refuses it before reading a pixel.
        "huge.png": png_claiming(20_000, 20_000),
        "../evil.jpg": jpeg_bytes(4),  # the message attaches "evil.jpg"; the member points outside
        "last.jpg": jpeg_bytes(5),
    }
    export = write_export(tmp_path / "WhatsApp Chat - Hostile.zip", lines, members, stored=["huge.png"])

    out = run(capsys, "chat", "import", str(export), *EMBEDDER)

    assert "Imported “Hostile”: 6 messages" in out
    assert "2 photos added to the gallery, 3 refused (" in out, out
    assert "bomb.jpg: it looks like a zip bomb (compressed " in out
    assert "huge.png: the image is too large to open safely" in out  # refused by the decoder, from its header
    assert "evil.jpg: its name points outside the export (an unsafe path)" in out
    assert chat_copies() == ["first.jpg", "last.jpg"]  # nothing refused is left in the data folder
    assert not (tmp_path / "evil.jpg").exists() and not (paths.library_dir("chats") / "evil.jpg").exists()
    listed = run(capsys, "photos", "list", "--chat", "1").splitlines()
    assert [row.rsplit("/", 1)[1] for row in listed] == ["last.jpg", "first.jpg"]


def test_a_longer_export_adds_only_the_new_photo(tmp_path, capsys):
    lines, members = photo_chat(2)
    run(capsys, "chat", "import", str(write_export(tmp_path / "WhatsApp Chat - Weekend away.zip", lines, members)),
        *EMBEDDER)
    more_lines, more_members = photo_chat(1, start=datetime(2024, 5, 19, 9, 0), first_number=3)
    longer = write_export(tmp_path / "later" / "WhatsApp Chat - Weekend away.zip", lines + more_lines,
                          {**members, **more_members})

    out = run(capsys, "chat", "import", str(longer), *EMBEDDER)

    assert "Added 2 new messages to “Weekend away”" in out and "1 photo added to the gallery." in out, out
    assert count_photos(gallery()) == 3 and len(chat_copies()) == 3
    listed = run(capsys, "photos", "list", "--chat", "1").splitlines()
    assert len(listed) == 3 and "Sun 19 May 2024, 09:00" in listed[0]


def test_a_photo_already_in_a_gallery_folder_is_linked_not_copied(tmp_path, capsys):
    folder = tmp_path / "Pictures"
    folder.mkdir()
    (folder / "IMG_0001.jpg").write_bytes(jpeg_bytes(1))  # the same photo Maya sent
    run(capsys, "photos", "add", str(folder))
    lines, members = photo_chat(2)

    out = run(capsys, "chat", "import", str(write_export(tmp_path / "WhatsApp Chat - Weekend away.zip", lines, members)),
              *EMBEDDER)

    assert "1 photo added to the gallery, 1 already there (linked)." in out, out
    assert count_photos(gallery()) == 2 and len(chat_copies()) == 1  # the folder's copy stays the only one
    listed = run(capsys, "photos", "list", "--chat", "1").splitlines()
    assert len(listed) == 2
    (linked,) = [row for row in listed if row.endswith("/Pictures/IMG_0001.jpg")]
    assert "[folder] Sent by Maya in “Weekend away” on Sat 18 May 2024, 09:00" in linked
