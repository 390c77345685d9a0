"""Reading WhatsApp exports from disk: .txt encodings, .zip files (safe and unsafe), titles, extraction."""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gallery_app.core.chat.export_file import (
    ChatExport,
    ChatFileError,
    ExportMedia,
    MemberRefused,
    decode_chat_bytes,
    read_export,
    safe_extract_member,
)
from gallery_app.core.chat.whatsapp import parse_chat_text
from gallery_app.core.errors import AppError
from tests.conftest import SHARED_FIXTURES

EXAMPLE_ZIP = SHARED_FIXTURES / "whatsapp" / "pustur_whatsapp-chat-parser-website" / "whatsapp-chat-parser-example.zip"
CHAT = "[20.06.19, 15:58:53] John: Hey 👋\r\n[20.06.19, 15:58:57] Loris: Welcome, Zoë!\r\n"


def make_zip(path: Path, members: dict[str, bytes | str], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def patch_headers(path: Path, *, flags_or: int = 0, file_size: int | None = None) -> None:
    """Rewrite the general-purpose flags / uncompressed size in every local and central header."""
    data = bytearray(path.read_bytes())
    for signature, flags_at, size_at in ((b"PK\x03\x04", 6, 22), (b"PK\x01\x02", 8, 24)):
        start = 0
        while (at := data.find(signature, start)) >= 0:
            flags = struct.unpack_from("<H", data, at + flags_at)[0]
            struct.pack_into("<H", data, at + flags_at, flags | flags_or)
            if file_size is not None:
                struct.pack_into("<I", data, at + size_at, file_size)
            start = at + 4
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------------------------
# The example export from the web viewer
# --------------------------------------------------------------------------------------------


@pytest.mark.shared_fixtures
def test_example_zip_finds_the_chat_and_lists_the_media():
    export = read_export(EXAMPLE_ZIP)
    assert isinstance(export, ChatExport)
    assert export.source == EXAMPLE_ZIP
    assert export.title == "whatsapp-chat-parser-example"
    assert export.text.startswith("[20.06.19, 15:58:47] Messages to this group are now secured")
    assert export.attachments == [
        "00000001-PHOTO-2019-06-20-16-00-15.jpg",
        "00000002-VIDEO-2019-06-20-16-01-42.mp4",
        "00000003-AUDIO-2019-06-20-16-03-55.mp3",
        "00000004-whatsapp-chat-parser-example.zip",  # a nested zip is listed, never opened
    ]
    assert not any("__MACOSX" in name for name in export.attachments)
    chat = parse_chat_text(export.text)
    assert set(chat.attachments) <= set(export.attachments)


@pytest.mark.shared_fixtures
def test_extracting_one_attachment_from_the_example(tmp_path: Path):
    out = safe_extract_member(EXAMPLE_ZIP, "00000001-PHOTO-2019-06-20-16-00-15.jpg", tmp_path / "media")
    assert out == (tmp_path / "media" / "00000001-PHOTO-2019-06-20-16-00-15.jpg").resolve()
    assert out.read_bytes()[:3] == b"\xff\xd8\xff"
    assert [p.name for p in (tmp_path / "media").iterdir()] == [out.name]  # no temporary file left


# --------------------------------------------------------------------------------------------
# Choosing the chat inside a .zip
# --------------------------------------------------------------------------------------------


def test_zip_with_a_named_chat_file(tmp_path: Path):
    path = make_zip(tmp_path / "WhatsApp Chat - Lisbon trip.zip", {
        "WhatsApp Chat with Lisbon trip.txt": CHAT, "IMG-20190620-WA0001.jpg": b"\xff\xd8\xff", "notes/": b"",
        "._WhatsApp Chat with Lisbon trip.txt": b"resource fork", "readme.txt": "x" * 5000,
    })
    export = read_export(path)
    assert export.title == "Lisbon trip"
    assert export.text == CHAT
    assert export.attachments == ["IMG-20190620-WA0001.jpg", "readme.txt"]


def test_zip_prefers_chat_txt_and_otherwise_the_largest_txt(tmp_path: Path):
    export = read_export(make_zip(tmp_path / "a.zip", {"big.txt": "x" * 9000, "sub/_chat.txt": CHAT}))
    assert export.text == CHAT
    export = read_export(make_zip(tmp_path / "b.zip", {"small.txt": "small", "big.txt": CHAT * 10}))
    assert export.text == CHAT * 10 and export.attachments == ["small.txt"]


def test_zip_stored_without_compression(tmp_path: Path):
    export = read_export(make_zip(tmp_path / "c.zip", {"_chat.txt": CHAT}, zipfile.ZIP_STORED))
    assert export.text == CHAT


def test_zip_without_a_text_file(tmp_path: Path):
    path = make_zip(tmp_path / "photos.zip", {"IMG-1.jpg": b"\xff\xd8\xff", "__MACOSX/._chat.txt": b"x",
                                              "inner.zip": b"PK\x05\x06" + bytes(18)})
    with pytest.raises(ChatFileError, match=r"This \.zip has no WhatsApp chat inside \(no \.txt file\)\."):
        read_export(path)


def test_zip_with_a_utf16_chat(tmp_path: Path):
    path = make_zip(tmp_path / "d.zip", {"_chat.txt": CHAT.encode("utf-16")})
    assert read_export(path).text == CHAT


# --------------------------------------------------------------------------------------------
# Unsafe and broken .zip files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/x", "C:/Windows/x.txt", "c:evil.txt", "media/../../x.jpg",
                                  "a\\..\\..\\x.jpg", "\\\\server\\share\\x.jpg"])
def test_an_unsafe_member_is_left_out_and_the_chat_still_reads(tmp_path: Path, name: str):
    path = make_zip(tmp_path / "evil.zip", {"_chat.txt": CHAT, name: b"boom"})
    export = read_export(path)
    assert export.text == CHAT
    assert name not in export.attachments
    with ExportMedia(export) as media:
        member = media.find(name.replace("\\", "/").rsplit("/", 1)[-1])
        if member is not None:  # found by its file name, then refused with the reason
            with pytest.raises(ChatFileError, match="unsafe path"):
                media.read(member)


@pytest.mark.parametrize("name", ["../_chat.txt", "/_chat.txt"])
def test_a_chat_text_with_an_unsafe_name_refuses_the_export(tmp_path: Path, name: str):
    path = make_zip(tmp_path / "evil.zip", {name: CHAT})
    with pytest.raises(ChatFileError, match="cannot be opened safely: its name points outside"):
        read_export(path)


def _bomb_zip(path: Path, bomb_name: str) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_chat.txt", CHAT)
        zf.writestr("IMG-1.jpg", os.urandom(2000))
        with zf.open(bomb_name, "w") as member:
            chunk = bytes(1 << 20)
            for _ in range(300):  # 300 MB of zeros: about 300 kB compressed
                member.write(chunk)
    return path


def test_a_zip_bomb_member_is_refused_alone(tmp_path: Path):
    path = _bomb_zip(tmp_path / "bomb.zip", "zeros.jpg")
    assert path.stat().st_size < 1_000_000
    export = read_export(path)
    assert export.text == CHAT
    assert export.attachments == ["IMG-1.jpg"]
    with ExportMedia(export) as media:
        assert len(media.read(media.find("IMG-1.jpg"))) == 2000
        with pytest.raises(ChatFileError, match=r"“zeros\.jpg” was not read: it looks like a zip bomb"):
            media.read(media.find("zeros.jpg"))


def test_a_zip_bomb_chat_text_refuses_the_export(tmp_path: Path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("_chat.txt", "w") as member:
            for _ in range(300):
                member.write(bytes(1 << 20))
    with pytest.raises(ChatFileError, match="cannot be opened safely: it looks like a zip bomb"):
        read_export(path)


def test_a_member_that_unpacks_past_its_header_is_refused_while_reading(tmp_path: Path):
    path = make_zip(tmp_path / "liar.zip", {"_chat.txt": CHAT, "IMG-1.jpg": bytes(3_000_000)})
    patch_headers(path, file_size=100)
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("IMG-1.jpg").file_size == 100
    media = ExportMedia(ChatExport("t", CHAT, ["IMG-1.jpg"], path), max_bytes=1_000_000)
    with media, pytest.raises(ChatFileError, match="was not read"):
        media.read("IMG-1.jpg")


def test_media_beside_an_unpacked_chat_text(tmp_path: Path):
    folder = tmp_path / "Weekend away"
    folder.mkdir()
    (folder / "_chat.txt").write_text(CHAT, "utf-8")
    (folder / "IMG-1.jpg").write_bytes(b"\xff\xd8\xff photo")
    os.mkfifo(folder / "pipe.jpg")
    export = read_export(folder / "_chat.txt")
    with ExportMedia(export) as media:
        assert media.read(media.find("IMG-1.jpg")) == b"\xff\xd8\xff photo"
        assert media.find("pipe.jpg") is None  # not a regular file: never opened (it would block)
        assert media.find("../_chat.txt") is None
        assert media.find("nowhere.jpg") is None


def test_a_chat_text_declared_over_the_cap_is_refused_but_big_media_never_is(tmp_path: Path):
    # Media that is never read (videos) does not count: an export with media is as big as its videos.
    path = make_zip(tmp_path / "big.zip", {"_chat.txt": CHAT * 100, "VID-1.mp4": os.urandom(3_000_000)})
    with pytest.raises(ChatFileError, match="too large"):
        read_export(path, max_text_bytes=1_000)
    export = read_export(path)
    assert export.text == CHAT * 100 and export.attachments == ["VID-1.mp4"]


def test_a_lying_size_in_the_headers_is_caught_while_reading(tmp_path: Path):
    path = make_zip(tmp_path / "liar.zip", {"_chat.txt": CHAT * 5000})  # ~500 kB, declared as 100 bytes
    patch_headers(path, file_size=100)
    assert zipfile.ZipFile(path).getinfo("_chat.txt").file_size == 100
    with pytest.raises(ChatFileError):
        read_export(path, max_text_bytes=1_000)


def test_encrypted_zip_is_refused(tmp_path: Path):
    # zipfile cannot write encrypted members: set the "encrypted" flag on an ordinary one instead.
    path = make_zip(tmp_path / "secret.zip", {"_chat.txt": CHAT})
    patch_headers(path, flags_or=0x1)
    with pytest.raises(ChatFileError, match="password"):
        read_export(path)
    with pytest.raises(ChatFileError, match="password"):
        safe_extract_member(path, "_chat.txt", tmp_path / "out")


@pytest.mark.parametrize("content", [b"this is not a zip at all", b"", b"PK\x03\x04garbage" + bytes(100)])
def test_not_a_zip_renamed_to_zip(tmp_path: Path, content: bytes):
    path = tmp_path / "WhatsApp Chat with Jonas.zip"
    path.write_bytes(content)
    with pytest.raises(ChatFileError, match=r"not a (valid \.zip|complete zip) file"):
        read_export(path)


def test_truncated_zip(tmp_path: Path):
    path = make_zip(tmp_path / "cut.zip", {"_chat.txt": CHAT * 100})
    path.write_bytes(path.read_bytes()[:150])
    with pytest.raises(ChatFileError):
        read_export(path)


# --------------------------------------------------------------------------------------------
# .txt files, other files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoded", [
    CHAT.encode("utf-8"), b"\xef\xbb\xbf" + CHAT.encode("utf-8"), CHAT.encode("utf-16"),
    b"\xff\xfe" + CHAT.encode("utf-16-le"), b"\xfe\xff" + CHAT.encode("utf-16-be"),
    CHAT.encode("utf-16-le"), CHAT.encode("utf-16-be"),
], ids=["utf8", "utf8-bom", "utf16-native-bom", "utf16le-bom", "utf16be-bom", "utf16le-no-bom", "utf16be-no-bom"])
def test_text_encodings(tmp_path: Path, encoded: bytes):
    assert decode_chat_bytes(encoded) == CHAT
    path = tmp_path / "_chat.txt"
    path.write_bytes(encoded)
    assert read_export(path).text == CHAT


def test_invalid_utf8_is_replaced_not_fatal():
    assert decode_chat_bytes(b"12/03/2019, 10:00 - Ana: caf\xe9 \xff") == "12/03/2019, 10:00 - Ana: caf\ufffd \ufffd"
    assert decode_chat_bytes(b"") == ""


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_decoding_never_raises(raw: bytes):
    assert isinstance(decode_chat_bytes(raw), str)


@pytest.mark.parametrize("file, title", [
    ("WhatsApp Chat with Jonas.txt", "Jonas"), ("WhatsApp Chat mit Die üblichen Verdächtigen.txt",
                                                "Die üblichen Verdächtigen"),
    ("WhatsApp Chat - Lisbon trip.txt", "Lisbon trip"), ("notes.txt", "notes"),
])
def test_titles_from_file_names(tmp_path: Path, file: str, title: str):
    path = tmp_path / file
    path.write_text(CHAT, "utf-8")
    assert read_export(path).title == title


def test_chat_txt_takes_its_folder_name(tmp_path: Path):
    folder = tmp_path / "Lisbon trip"
    folder.mkdir()
    (folder / "_chat.txt").write_text(CHAT, "utf-8")
    assert read_export(folder / "_chat.txt").title == "Lisbon trip"
    assert read_export(folder).text == CHAT  # a folder holding a _chat.txt works too


def test_txt_export_has_no_attachments(tmp_path: Path):
    path = tmp_path / "WhatsApp Chat with Jonas.txt"
    path.write_text(CHAT, "utf-8")
    assert read_export(path) == ChatExport(title="Jonas", text=CHAT, attachments=[], source=path)


def test_text_file_over_the_cap_is_refused(tmp_path: Path):
    path = tmp_path / "_chat.txt"
    path.write_text(CHAT * 100, "utf-8")
    with pytest.raises(ChatFileError, match="too large"):
        read_export(path, max_text_bytes=1000)


@pytest.mark.parametrize("name, content", [
    ("IMG-20190620-WA0001.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF"), ("chat.pdf", b"%PDF-1.7"),
    ("_chat.txt", b"\x89PNG\r\n\x1a\n" + bytes(20)), ("export.html", b"<html>"),
])
def test_wrong_file_type(tmp_path: Path, name: str, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ChatFileError, match="is not a WhatsApp export: choose the _chat.txt or the .zip WhatsApp made"):
        read_export(path)


def test_missing_file(tmp_path: Path):
    with pytest.raises(ChatFileError, match="Could not find") as caught:
        read_export(tmp_path / "gone.zip")
    assert isinstance(caught.value, AppError) and caught.value.hint


def test_folder_without_a_chat(tmp_path: Path):
    with pytest.raises(ChatFileError, match="no WhatsApp chat"):
        read_export(tmp_path)


# --------------------------------------------------------------------------------------------
# safe_extract_member
# --------------------------------------------------------------------------------------------


def test_safe_extract_keeps_folders_inside_the_destination(tmp_path: Path):
    path = make_zip(tmp_path / "e.zip", {"_chat.txt": CHAT, "media/IMG-1.jpg": b"\xff\xd8\xffdata"})
    out = safe_extract_member(path, "media/IMG-1.jpg", tmp_path / "dest")
    assert out == (tmp_path / "dest" / "media" / "IMG-1.jpg").resolve()
    assert out.read_bytes() == b"\xff\xd8\xffdata"


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/x", "C:/x.txt", "a/../../evil.txt", "..\\evil.txt"])
def test_safe_extract_refuses_traversal(tmp_path: Path, name: str):
    path = make_zip(tmp_path / "evil.zip", {"_chat.txt": CHAT, name: b"boom"})
    dest = tmp_path / "dest"
    with pytest.raises(ChatFileError):
        safe_extract_member(path, name, dest)
    assert not (tmp_path / "evil.txt").exists()
    assert not dest.exists() or not any(dest.rglob("*"))


def test_safe_extract_refuses_a_symlinked_folder_that_leads_outside(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    try:
        (dest / "media").symlink_to(outside, target_is_directory=True)
    except OSError:
        pytest.skip("cannot create symlinks here")
    path = make_zip(tmp_path / "f.zip", {"media/IMG-1.jpg": b"data"})
    with pytest.raises(ChatFileError, match="outside"):
        safe_extract_member(path, "media/IMG-1.jpg", dest)
    assert not any(outside.iterdir())


def test_safe_extract_missing_member_and_folder(tmp_path: Path):
    path = make_zip(tmp_path / "g.zip", {"_chat.txt": CHAT, "media/": b""})
    with pytest.raises(ChatFileError, match="is not in"):
        safe_extract_member(path, "nope.jpg", tmp_path / "dest")
    with pytest.raises(ChatFileError, match="folder"):
        safe_extract_member(path, "media/", tmp_path / "dest")


def test_an_underscored_folder_name_reads_as_a_title(tmp_path: Path):
    folder = tmp_path / "weekend_away"
    folder.mkdir()
    (folder / "_chat.txt").write_text(CHAT, "utf-8")
    assert read_export(folder / "_chat.txt").title == "Weekend away"


# --------------------------------------------------------------------------------------------
# Weak spots: a chat that unpacks to too much, a damaged end record, names that are not UTF-8
# --------------------------------------------------------------------------------------------


def test_a_chat_over_the_size_cap_is_refused_with_its_size_and_the_cap(tmp_path: Path):
    # 101 MB of chat from a ~0.4 MB .zip: under the 200:1 bomb ratio, so only the chat cap stops it
    # (before the cap existed, 190 MB like this took 96 s and 3.4 GB to parse).
    path = tmp_path / "WhatsApp Chat with Big.zip"
    line = b"[20.06.19, 15:58:53] John: the same words again and again, a hundred times over\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("_chat.txt", "w") as member:
            block = line * 10_000
            for _ in range(101_000_000 // len(block) + 1):
                member.write(block)
    info = zipfile.ZipFile(path).getinfo("_chat.txt")
    assert info.file_size > 101_000_000 and info.file_size < 200 * info.compress_size
    with pytest.raises(ChatFileError) as caught:
        read_export(path)
    message = str(caught.value)
    assert f"is {info.file_size / 1e6:.0f} MB, too large to open: a chat can be at most 100 MB" in message
    assert "nothing was imported" in message


def test_a_text_file_over_the_size_cap_names_both_sizes(tmp_path: Path):
    path = tmp_path / "_chat.txt"
    with path.open("wb") as f:
        f.truncate(100_000_001)  # sparse: nothing is written, and nothing should be read
    with pytest.raises(ChatFileError, match=r"is 100 MB, too large to open: a chat can be at most 100 MB"):
        read_export(path)


def _break_end_record(path: Path) -> None:
    """Make the end-of-central-directory record place the central directory 1,000 bytes too late.

    zipfile then takes the difference for bytes prepended to the archive, and each member's
    offset comes out negative: opening one fails in seek() with "Invalid argument".
    """
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x05\x06")
    offset = struct.unpack_from("<I", data, at + 16)[0]
    struct.pack_into("<I", data, at + 16, offset + 1000)  # offset of the central directory
    path.write_bytes(bytes(data))


def test_a_damaged_end_of_central_directory_gets_a_message_for_a_person(tmp_path: Path):
    path = make_zip(tmp_path / "WhatsApp Chat with Jonas.zip", {"_chat.txt": CHAT, "IMG-1.jpg": b"x" * 100})
    _break_end_record(path)
    with pytest.raises(OSError, match="Invalid argument"), zipfile.ZipFile(path) as zf:
        zf.read("_chat.txt")  # what used to reach the person
    with pytest.raises(ChatFileError) as caught:
        read_export(path)
    assert str(caught.value).startswith("“WhatsApp Chat with Jonas.zip” is not a complete zip file")
    assert "Invalid argument" not in str(caught.value) and "Export the chat from WhatsApp again" in str(caught.value)
    with pytest.raises(ChatFileError, match="not a complete zip file.*nothing was extracted"):
        safe_extract_member(path, "IMG-1.jpg", tmp_path / "out")
    assert not (tmp_path / "out" / "IMG-1.jpg").exists()


NOT_UTF8 = os.fsdecode(b"Jos\xe9")  # what os.listdir gives for a Latin-1 name on Linux


def _utf8_safe(export: ChatExport) -> None:
    for text in (export.title, export.text, *export.attachments):
        text.encode("utf-8")


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes; Windows names are always Unicode")
def test_a_chat_file_whose_name_is_not_utf8(tmp_path: Path):
    txt = tmp_path / f"WhatsApp Chat with {NOT_UTF8}.txt"
    txt.write_text(CHAT, encoding="utf-8")
    export = read_export(txt)
    assert export.title == "Jos\\xe9"  # the odd byte written out, as photos' names are
    _utf8_safe(export)
    assert export.source == txt and export.source.read_bytes() == CHAT.encode("utf-8")  # still opens the file
    zipped = make_zip(tmp_path / f"WhatsApp Chat with {NOT_UTF8}.zip", {"_chat.txt": CHAT})
    _utf8_safe(read_export(zipped))
    assert read_export(zipped).title == "Jos\\xe9"
    folder = tmp_path / NOT_UTF8
    folder.mkdir()
    (folder / "_chat.txt").write_text(CHAT, encoding="utf-8")
    assert read_export(folder).title == "Jos\\xe9"
    with pytest.raises(ChatFileError) as caught:
        read_export(tmp_path / f"{NOT_UTF8} gone.txt")
    str(caught.value).encode("utf-8")
    (tmp_path / f"{NOT_UTF8}.zip").write_bytes(b"PK\x03\x04garbage" + bytes(100))
    with pytest.raises(ChatFileError) as caught:
        read_export(tmp_path / f"{NOT_UTF8}.zip")
    str(caught.value).encode("utf-8")


def test_a_member_stored_with_a_decomposed_name_is_found_by_the_messages_name(tmp_path: Path):
    import unicodedata

    path = make_zip(tmp_path / "mac.zip", {"_chat.txt": CHAT, unicodedata.normalize("NFD", "Café.jpg"): b"photo"})
    with ExportMedia(read_export(path)) as media:
        assert media.read(media.find("Café.jpg")) == b"photo"  # the message writes NFC, macOS zips NFD


def test_a_refused_chat_text_is_not_replaced_by_another_text_in_the_zip(tmp_path: Path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("_chat.txt", "w") as member:
            for _ in range(5):
                member.write(bytes(1 << 20))
        zf.writestr("notes.txt", CHAT)
    with pytest.raises(ChatFileError, match="cannot be opened safely: it looks like a zip bomb"):
        read_export(path)


def test_a_safe_member_wins_over_an_unsafe_one_of_the_same_name(tmp_path: Path):
    path = make_zip(tmp_path / "two.zip", {"_chat.txt": CHAT, "..\\..\\IMG-1.jpg": b"evil", "media/IMG-1.jpg": b"real"})
    with ExportMedia(read_export(path)) as media:
        assert media.read(media.find("IMG-1.jpg")) == b"real"


def test_an_unpacked_exports_link_to_a_file_outside_it_is_refused_with_its_reason(tmp_path: Path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.jpg").write_bytes(b"\xff\xd8\xff secret")
    export = tmp_path / "export"
    export.mkdir()
    (export / "_chat.txt").write_text("04/06/2024, 09:30 - Maya: outside.jpg (file attached)\n"
                                      "04/06/2024, 09:31 - Maya: inside.jpg (file attached)\n", "utf-8")
    (export / "outside.jpg").symlink_to(Path("..") / "private" / "secret.jpg")
    (export / "inside.jpg").write_bytes(b"\xff\xd8\xff mine")
    (export / "also_inside.jpg").symlink_to("inside.jpg")  # a link inside the export is the export's
    with ExportMedia(read_export(export)) as media:
        with pytest.raises(MemberRefused, match="a link to a file outside the export"):
            media.read(media.find("outside.jpg"))
        assert media.read(media.find("inside.jpg")) == b"\xff\xd8\xff mine"
        assert media.read(media.find("also_inside.jpg")) == b"\xff\xd8\xff mine"
