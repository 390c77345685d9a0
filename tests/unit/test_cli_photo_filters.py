"""gallery-app-cli with chat photos: `chat import` adds them, `photos list` says who sent them, and listing and
every search take the same --chat / --folder / --from / --to filters; bad filters exit 2 saying why."""

from __future__ import annotations

import os
import re
from datetime import datetime

import pytest

from gallery_app.cli import main
from gallery_app.core.models import loading
from tests.chat_photo_exports import jpeg_bytes, photo_chat, write_export
from tests.text_embedders import WordHashEmbedder

SENT = "Sent by Maya in “Weekend away” on Sat 18 May 2024, 09:00"


@pytest.fixture(autouse=True)
def word_hash_embedder(monkeypatch):
    """`chat import` embeds its passages with the fake embedder: these tests are about the photos."""
    embedder = WordHashEmbedder()
    monkeypatch.setattr(loading, "open_text_embedder", lambda setting=None, **kwargs: embedder)


@pytest.fixture
def gallery(tmp_path, capsys):
    """Chat 1 "Weekend away" sent 3 photos on 18 May 2024; the folder "holiday" holds 2 taken (file time) in 2023."""
    lines, members = photo_chat(3, senders=("Maya", "Daniel", "Priya"))
    export = write_export(tmp_path / "WhatsApp Chat - Weekend away.zip", lines, members)
    folder = tmp_path / "holiday"
    folder.mkdir()
    for number in (101, 102):
        photo = folder / f"beach-{number}.jpg"
        photo.write_bytes(jpeg_bytes(number))
        stamp = datetime(2023, 1, 10, 12, 0).timestamp()
        os.utime(photo, (stamp, stamp))
    assert main(["chat", "import", str(export)]) == 0
    assert main(["photos", "add", str(folder)]) == 0
    capsys.readouterr()
    return export, folder


def listed(capsys, *options: str) -> list[str]:
    assert main(["photos", "list", *options]) == 0
    return capsys.readouterr().out.splitlines()


def hits(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"^\s+-?\d\.\d{3}\s+#\d+", line)]


def test_chat_import_adds_the_photos_with_a_progress_bar_and_says_they_wait_for_clip(tmp_path, capsys):
    lines, members = photo_chat(3)
    export = write_export(tmp_path / "WhatsApp Chat - Weekend away.zip", lines, members)

    assert main(["chat", "import", str(export)]) == 0

    out, err = capsys.readouterr()
    assert "3 photos added to the gallery. They can be searched once the CLIP model is here." in out
    assert "Adding photos [#########################] 100% 3/3 photos" in err
    assert "Embedding messages [" in err.split("Adding photos")[-1]  # the photos' bar first, then the passages'
    assert "Note: The clip-vision model" in err and "models fetch" in err  # how to make them searchable

    assert main(["chat", "import", str(export)]) == 0
    out, err = capsys.readouterr()
    assert "already up to date" in out and "photo" not in out and "Adding photos" not in err
    assert len(listed(capsys)) == 3


def test_list_shows_who_sent_each_chat_photo_and_narrows_to_a_chat_a_folder_or_days(gallery, capsys):
    _export, folder = gallery
    everything = listed(capsys)
    assert len(everything) == 5
    chat_lines = [line for line in everything if "[chat]" in line]
    assert len(chat_lines) == 3 and f"[chat] {SENT}  " in chat_lines[-1]  # newest first: Maya's is the oldest
    assert "Sent by Priya in “Weekend away” on Sat 18 May 2024, 09:06" in chat_lines[0]
    assert all("Sent by" not in line for line in everything if "[folder]" in line)

    assert listed(capsys, "--chat", "1") == chat_lines
    in_folder = listed(capsys, "--folder", str(folder))
    assert len(in_folder) == 2 and all(line.endswith(".jpg") and "/holiday/beach-" in line for line in in_folder)
    assert listed(capsys, "--folder", "#1") == in_folder == listed(capsys, "--folder", "1")
    assert listed(capsys, "--from", "2024-05-18", "--to", "2024-05-18") == chat_lines
    assert listed(capsys, "--to", "2023-12-31") == in_folder
    assert listed(capsys, "--chat", "1", "--to", "2023-12-31") == ["No photos of chat 1 to 2023-12-31."]


@pytest.mark.parametrize("options, said", [
    (["--chat", "7"], "There is no chat 7. See the chats and their numbers with: gallery-app-cli chat list"),
    (["--chat", "seven"], "'seven' is not a chat number"),
    (["--from", "18/05/2024"], "argument --from: '18/05/2024' is not a date written YYYY-MM-DD (for example 2024-05-31)"),
    (["--to", "2024-02-30"], "argument --to: 2024-02-30 is not a day of the calendar (YYYY-MM-DD)"),
    (["--from", "2024-06-01", "--to", "2024-05-01"],
     "The range starts on 01 Jun 2024, after it ends (01 May 2024). Choose a start date on or before the end date."),
    (["--folder", "/nowhere/photos"], "/nowhere/photos is not a photo folder of the gallery. Its folders: #1 "),
    (["--folder", "9"], "9 is not a photo folder of the gallery."),
    (["--chat", "1", "--folder", "1"], "argument --folder: not allowed with argument --chat"),
])
@pytest.mark.parametrize("command", [["photos", "list"], ["photos", "search", "beach"], ["photos", "similar", "#1"]])
def test_a_bad_filter_exits_2_and_says_what_is_wrong(gallery, capsys, command, options, said):
    with pytest.raises(SystemExit) as stopped:
        main([*command, *options])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err, err
    assert "Traceback" not in err


def test_every_search_stays_inside_the_filters(test_clip, gallery, capsys, tmp_path):
    """The same filters narrow search by words, by a gallery photo and by an image file (CLIP here from the start)."""
    _export, folder = gallery

    def found(*argv: str) -> list[str]:
        assert main(list(argv)) == 0
        return hits(capsys.readouterr().out)

    everywhere = found("photos", "search", "a beach", "-k", "10")
    assert len(everywhere) == 5
    in_chat = found("photos", "search", "a beach", "-k", "10", "--chat", "1")
    assert len(in_chat) == 3 and all("  — Sent by " in hit and "in “Weekend away”" in hit for hit in in_chat)
    assert len(found("photos", "search", "a beach", "-k", "10", "--folder", str(folder))) == 2
    in_2023 = found("photos", "search", "a beach", "-k", "10", "--from", "2023-01-01", "--to", "2023-12-31")
    assert len(in_2023) == 2 and all("/holiday/beach-" in hit for hit in in_2023)
    probe = tmp_path / "probe.jpg"
    probe.write_bytes(jpeg_bytes(102))
    like = found("photos", "query-image", str(probe), "--folder", "#1")
    assert len(like) == 2 and "beach-102.jpg" in like[0] and re.match(r"^\s+1\.000", like[0])
    similar = found("photos", "similar", str(folder / "beach-101.jpg"), "--folder", "#1")
    assert len(similar) == 1 and "beach-102.jpg" in similar[0]  # never itself, never a chat photo
    similar_sent = found("photos", "similar", str(folder / "beach-101.jpg"), "--chat", "1", "--from", "2024-05-18")
    assert len(similar_sent) == 3 and all("Sent by" in hit for hit in similar_sent)


def test_photos_added_before_clip_become_searchable_with_the_next_photos_add(tmp_path, capsys, monkeypatch,
                                                                          test_clip_folder):
    lines, members = photo_chat(3)
    export = write_export(tmp_path / "WhatsApp Chat - Weekend away.zip", lines, members)
    assert main(["chat", "import", str(export)]) == 0  # no CLIP yet: recorded without vectors
    folder = tmp_path / "later"
    folder.mkdir()
    (folder / "one.jpg").write_bytes(jpeg_bytes(7))
    capsys.readouterr()
    monkeypatch.setenv("GALLERY_APP_MODELS_DIR", str(test_clip_folder[0]))  # CLIP arrives
    assert main(["photos", "add", str(folder)]) == 0
    assert "3 photos recorded before the CLIP model was here are now searchable." in capsys.readouterr().out
    assert main(["photos", "search", "a beach", "-k", "10", "--chat", "1"]) == 0
    assert len(hits(capsys.readouterr().out)) == 3
