"""Reading a WhatsApp export from disk: a ``_chat.txt`` (or "WhatsApp Chat with X.txt") or the .zip.

Nothing is extracted to disk while reading: the chat text inside a .zip is read into memory,
and its other members are only listed (`ChatExport.attachments`). `ExportMedia` reads the
attachments a message names (the chat's photos go into the gallery); `safe_extract_member`
writes one member into a folder.

A .zip is untrusted input. Each member is judged on its own: one whose name could point outside
a folder (absolute paths, drive letters, ".."), that is encrypted, or that is big and compressed
more than 200:1 (a zip bomb) is never read, and a chat text like that refuses the whole export;
an attachment like that is refused alone, with its reason. While reading, the bytes are counted
again, in case the sizes in the .zip lie.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable
from gallery_app.core.text_encoding import utf16_without_bom
from gallery_app.core.units import describe_size

__all__ = ["CHAT_FILE_SUFFIXES", "ChatExport", "ChatFileError", "ExportMedia", "read_export", "decode_chat_bytes",
           "is_chat_export", "member_problem", "MemberRefused", "safe_extract_member"]

#: What WhatsApp's "Export chat" writes: the chat text, or a .zip with it and the media.
CHAT_FILE_SUFFIXES = (".txt", ".zip")

#: The largest chat text that is opened: five times the biggest real export we have seen (20 MB,
#: ~5 hours to import), so no real chat is refused, while a crafted one that unpacks 136:1
#: (190 MB from a 1.4 MB .zip) is refused before it costs minutes and gigabytes to read.
MAX_CHAT_TEXT_BYTES = 100_000_000

#: A member at least this big that is compressed more than `MAX_COMPRESSION_RATIO`:1 is a zip bomb.
BIG_MEMBER_BYTES = 1_000_000
MAX_COMPRESSION_RATIO = 200
_CHUNK = 1 << 20
_WRONG_TYPE_HINT = "Choose the _chat.txt or the .zip WhatsApp made (Export chat in WhatsApp's chat menu)."
_WRONG_TYPE_HINT_MORE = "In WhatsApp, open the chat, then More › Export chat."
#: The first bytes of files that are surely not a chat text.
_BINARY_MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"GIF8", b"%PDF", b"RIFF", b"Rar!", b"7z\xbc\xaf", b"\x1f\x8b",
                 b"OggS", b"ID3", b"BM", b"II*\x00", b"MM\x00*")
# "WhatsApp Chat with Jonas", "WhatsApp Chat - Lisbon trip", "WhatsApp Chat mit X" and friends.
_TITLE_PREFIX = re.compile(
    r"^(?:(?:WhatsApp[ -]Chat|Chat de WhatsApp|Chat WhatsApp|Conversa do WhatsApp|Discussion WhatsApp)"
    r" (?:with|mit|con|com|met|avec|z|s|med|ile|na|dengan) |WhatsApp Chat\s*[-–—:]\s+)",
    re.IGNORECASE,
)


def is_chat_export(path: Path) -> bool:
    """Named like a WhatsApp export (whether it really is one, ``read_export`` finds out)."""
    return path.suffix.lower() in CHAT_FILE_SUFFIXES


class ChatFileError(AppError):
    """The chosen file cannot be read as a WhatsApp export (missing, wrong type, damaged, unsafe)."""


@dataclass(frozen=True)
class ChatExport:
    #: From the file name: "WhatsApp Chat with Jonas.txt" → "Jonas"; "_chat.txt" → its folder's name.
    #: Always valid UTF-8: bytes of the name that are not (b"Jos\xe9") are written out as "\xe9".
    title: str
    #: The decoded chat text (line ends as in the file).
    text: str
    #: Names of the other members of a .zip (media), as stored in the .zip (always valid UTF-8:
    #: zipfile decodes them as UTF-8 or cp437); [] for a .txt.
    attachments: list[str]
    #: The path as the file system gives it (it may hold undecodable bytes as surrogates, so that it
    #: opens the file again; store it with ``file_names.to_db``, show it with ``file_names.printable``).
    source: Path


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


def decode_chat_bytes(raw: bytes | bytearray) -> str:
    """The text of a chat file. Never raises.

    UTF-8 with or without BOM, UTF-16 LE/BE with a BOM, UTF-16 without a BOM recognised from its
    NUL bytes (mostly-ASCII text has a NUL in every other byte), and as a last resort UTF-8 with
    the undecodable bytes replaced by "�".
    """
    view = memoryview(raw)  # decoded in place: a 100 MB chat is not copied before it is decoded
    if raw.startswith(codecs.BOM_UTF8):
        return str(view[3:], "utf-8", "replace")
    if raw.startswith(codecs.BOM_UTF16_LE):
        return str(view[2:], "utf-16-le", "replace")
    if raw.startswith(codecs.BOM_UTF16_BE):
        return str(view[2:], "utf-16-be", "replace")
    return str(view, utf16_without_bom(raw) or "utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# Titles
# ---------------------------------------------------------------------------------------------


def _title_from_name(stem: str) -> str:
    stem = printable(stem)
    title = _TITLE_PREFIX.sub("", stem).strip()
    return title or stem.strip()


def export_title(path: Path) -> str:
    """The chat's name as the export's file (or, for a bare _chat.txt, its folder) tells it."""
    if path.suffix.lower() == ".txt" and path.stem.lower() in ("_chat", "chat"):
        folder = path.resolve().parent.name
        # A folder someone named "weekend_away" reads better as "Weekend away".
        humane = folder.replace("_", " ").strip()
        return _title_from_name(humane[:1].upper() + humane[1:]) if humane else "WhatsApp chat"
    return _title_from_name(path.stem)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def read_export(path: Path, *, max_text_bytes: int = MAX_CHAT_TEXT_BYTES) -> ChatExport:
    """The chat in `path` (a .txt, a .zip, or a folder holding a _chat.txt). Raises ChatFileError."""
    path = Path(path)
    shown = printable(path.name)
    try:
        if path.is_dir():
            return read_export(_chat_in_folder(path), max_text_bytes=max_text_bytes)
        if not path.is_file():
            raise ChatFileError(f"Could not find “{shown}”.",
                                hint="It may have been moved, renamed or deleted. Choose it again.")
        with path.open("rb") as f:
            head = f.read(8)
        suffix = path.suffix.lower()
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")):  # a .zip, whatever its name
            return _read_zip(path, max_text_bytes)
        if suffix == ".zip":
            raise ChatFileError(f"“{shown}” is not a valid .zip file, or it is damaged.",
                                hint="Export the chat from WhatsApp again and choose the new .zip.")
        if suffix != ".txt" or head.startswith(_BINARY_MAGIC) or head[4:].startswith(b"ftyp"):
            raise ChatFileError(f"“{shown}” is not a WhatsApp export: choose the _chat.txt or the .zip "
                                "WhatsApp made.", hint=_WRONG_TYPE_HINT_MORE)
        size = path.stat().st_size
        if size > max_text_bytes:
            raise _too_large(f"“{shown}”", size, max_text_bytes)
        return ChatExport(title=export_title(path), text=decode_chat_bytes(path.read_bytes()), attachments=[],
                          source=path)
    except ChatFileError:
        raise
    except PermissionError as exc:
        raise ChatFileError(f"“{shown}” could not be opened: permission denied.",
                            hint="Check that you are allowed to read it, or copy it somewhere else first.") from exc
    except OSError as exc:
        raise ChatFileError(f"“{shown}” could not be read ({exc.strerror or exc}).") from exc


def _chat_in_folder(folder: Path) -> Path:
    chat = folder / "_chat.txt"
    if chat.is_file():
        return chat
    named = sorted(p for p in folder.glob("*.txt") if p.name.lower().startswith("whatsapp chat"))
    if len(named) == 1:
        return named[0]
    raise ChatFileError(f"The folder “{printable(folder.name)}” has no WhatsApp chat in it (no _chat.txt).",
                        hint=_WRONG_TYPE_HINT)


def _too_large(what: str, size: int | None, limit: int) -> ChatFileError:
    """The error for a chat text over the cap (`size` None: found while reading, the .zip understated it)."""
    actual = f"is {describe_size(size)}" if size is not None else f"is larger than {describe_size(limit)}"
    return ChatFileError(
        f"The chat in {what} {actual}, too large to open: a chat can be at most {describe_size(limit)}, "
        "so nothing was imported.",
        hint="The biggest real chats are a few tens of MB: check that this is the export you meant, "
             "or export the chat again from WhatsApp.")


def _not_a_complete_zip(name: str, outcome: str = "nothing was imported") -> ChatFileError:
    return ChatFileError(
        f"“{name}” is not a complete zip file (it may have been cut short while it was copied or downloaded), "
        f"so {outcome}.",
        hint="Export the chat from WhatsApp again (More › Export chat) and choose the new .zip.")


def _unsafe_name(name: str) -> bool:
    """Member names that could point outside the folder they are extracted into."""
    if not name or "\x00" in name:
        return True
    unified = name.replace("\\", "/")
    if unified.startswith("/") or re.match(r"^[A-Za-z]:", unified):
        return True
    return any(part == ".." for part in unified.split("/"))


def _is_noise(name: str) -> bool:
    """macOS resource forks ("__MACOSX/…", "._name"): never the chat, never an attachment."""
    parts = name.replace("\\", "/").split("/")
    return parts[0] == "__MACOSX" or parts[-1].startswith("._")


def _readable_members(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members that can be read at all. Unsafe and bomb-like members are left out here (and refused one
    by one when read, see ``ExportMedia``), so one bad attachment never costs the chat or its other photos.
    No cap on their total: an export with media is as big as its videos, and only the chat text and the
    photos are ever read, each with its own cap."""
    return [i for i in zf.infolist() if member_problem(i) is None]


def member_problem(info: zipfile.ZipInfo, max_bytes: int | None = None) -> str | None:
    """Why this member of a .zip must not be read (a sentence), or None."""
    if _unsafe_name(info.filename):
        return "its name points outside the export (an unsafe path)"
    if info.flag_bits & 0x1:
        return "it is password-protected"
    if info.file_size >= BIG_MEMBER_BYTES and info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
        return (f"it looks like a zip bomb (compressed {info.file_size // max(info.compress_size, 1):,} to 1, "
                f"unpacking to {describe_size(info.file_size)})")
    if max_bytes is not None and info.file_size > max_bytes:
        return _over_the_cap(info.file_size, max_bytes)
    return None


def _over_the_cap(size: int, max_bytes: int) -> str:
    return f"it is {describe_size(size)}, more than the {describe_size(max_bytes)} a photo can be"


def _pick_chat(infos: list[zipfile.ZipInfo]) -> zipfile.ZipInfo | None:
    texts = [i for i in infos if not i.is_dir() and not _is_noise(i.filename)
             and i.filename.lower().endswith(".txt")]
    if not texts:
        return None

    def base(i: zipfile.ZipInfo) -> str:
        return PurePosixPath(i.filename.replace("\\", "/")).name

    chats = [i for i in texts if base(i).lower() == "_chat.txt"]
    if chats:
        return min(chats, key=lambda i: i.filename.count("/"))  # the top-level one if there are several
    named = [i for i in texts if base(i).lower().startswith("whatsapp chat")]
    if len(named) == 1:
        return named[0]
    return max(texts, key=lambda i: i.file_size)


def _refuse_unreadable_chat(chat: zipfile.ZipInfo, name: str) -> None:
    """Refuse the whole export when its chat text is a member that must not be read, saying why."""
    problem = member_problem(chat)
    if problem is None:
        return
    if chat.flag_bits & 0x1:
        raise ChatFileError(f"“{name}” is password-protected, so the chat inside cannot be read.",
                            hint="Export the chat from WhatsApp again, without a password.")
    raise ChatFileError(f"The chat in “{name}” cannot be opened safely: {problem}.",
                        hint="Only open .zip files that WhatsApp made.")


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, zip_name: str) -> bytearray:
    """The member's bytes, refusing to go past `limit` whatever its header claims (one buffer, no copies)."""
    data = bytearray()
    with zf.open(info) as member:
        while chunk := member.read(_CHUNK):
            if len(data) + len(chunk) > limit:
                raise _too_large(f"“{zip_name}”", None, limit)
            data += chunk
    return data


def _read_zip(path: Path, max_text_bytes: int) -> ChatExport:
    name = printable(path.name)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = _readable_members(zf)
            # Chosen among all members, then judged: a refused _chat.txt must not give way to another .txt.
            chat = _pick_chat(zf.infolist())
            if chat is None:
                raise ChatFileError("This .zip has no WhatsApp chat inside (no .txt file).", hint=_WRONG_TYPE_HINT)
            _refuse_unreadable_chat(chat, name)
            if chat.file_size > max_text_bytes:
                raise _too_large(f"“{name}”", chat.file_size, max_text_bytes)
            raw = _read_member(zf, chat, max_text_bytes, name)
            attachments = [i.filename for i in infos
                           if i is not chat and not i.is_dir() and not _is_noise(i.filename)]
    except ChatFileError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, RuntimeError) as exc:
        raise _not_a_complete_zip(name) from exc
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        # A damaged end-of-central-directory record points before the file's start: zipfile's seek
        # then fails with "Invalid argument", which says nothing to a person.
        raise _not_a_complete_zip(name) from exc
    text = decode_chat_bytes(raw)
    del raw
    return ChatExport(title=_title_from_name(path.stem), text=text, attachments=attachments, source=path)


# ---------------------------------------------------------------------------------------------
# Reading the media of an export
# ---------------------------------------------------------------------------------------------

#: The largest attachment read into memory: WhatsApp sends photos of a few MB (documents up to 2 GB,
#: but those are never read).
MAX_ATTACHMENT_BYTES = 100_000_000


def _name_key(name: str) -> str:
    """A file name as messages and zip members are matched: NFC (zips made on macOS store NFD names)."""
    return unicodedata.normalize("NFC", name)


class MemberRefused(ChatFileError):
    """One file of an export that was not read, and why (``reason``: "it looks like a zip bomb (…)")."""

    def __init__(self, member: str, reason: str):
        super().__init__(f"“{printable(member)}” was not read: {reason}.")
        self.member = member
        self.reason = reason


class ExportMedia:
    """The media files of an export, found by the name a message gives: members of its .zip (in any folder
    of it), or the files beside an unpacked export's _chat.txt. Use as a context manager.

    ``read`` checks each member on its own (unsafe path, password, zip bomb, size, and the bytes counted
    while reading in case the .zip lies), raising ``MemberRefused`` with the reason for that one file.
    """

    def __init__(self, export: ChatExport, *, max_bytes: int = MAX_ATTACHMENT_BYTES):
        self.export = export
        self.max_bytes = max_bytes
        self._zip: zipfile.ZipFile | None = None
        self._by_name: dict[str, tuple[tuple[bool, int], zipfile.ZipInfo]] = {}
        self._chosen: dict[str, zipfile.ZipInfo] = {}

    def __enter__(self) -> ExportMedia:
        source = Path(self.export.source)
        try:
            if zipfile.is_zipfile(source):
                self._zip = zipfile.ZipFile(source)
                for info in self._zip.infolist():
                    if not info.is_dir() and not _is_noise(info.filename):
                        unified = info.filename.replace("\\", "/")
                        base = _name_key(PurePosixPath(unified).name)
                        # A safe member before an unsafe one of the same name (which is only found to be
                        # refused with its reason), then the shallowest (WhatsApp puts media beside the chat).
                        rank = (member_problem(info) is not None, unified.count("/"))
                        known = self._by_name.get(base)
                        if known is None or rank < known[0]:
                            self._by_name[base] = (rank, info)
                # ``read`` reads the member ``find`` chose (getinfo gives the last of two with one name).
                self._chosen = {info.filename: info for _rank, info in self._by_name.values()}
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise _not_a_complete_zip(printable(source.name), "its photos were not read") from exc
        return self

    def __exit__(self, *exc_info) -> None:
        if self._zip is not None:
            self._zip.close()

    def find(self, name: str) -> str | None:
        """Where the attachment ``name`` (as a message writes it) is in the export, or None when it is not."""
        if self._zip is not None:
            found = self._by_name.get(_name_key(name))
            return found[1].filename if found is not None else None
        if _unsafe_name(name) or "/" in name.replace("\\", "/"):
            return None
        beside = Path(self.export.source).parent / name
        return name if beside.is_file() else None

    def read(self, member: str) -> bytes:
        if self._zip is not None:
            return self._read_zip_member(member)
        folder = Path(self.export.source).parent
        path = folder / member
        try:
            # A hand-unpacked hostile .zip restores links: "outside.jpg -> ../private/secret.jpg" is not the export's.
            if not path.resolve().is_relative_to(folder.resolve()):
                raise MemberRefused(member, "it is a link to a file outside the export")
            size = path.stat().st_size
            if size > self.max_bytes:
                raise MemberRefused(member, _over_the_cap(size, self.max_bytes))
            return path.read_bytes()
        except OSError as exc:
            raise MemberRefused(member, f"it could not be read ({exc.strerror or exc})") from exc

    def _read_zip_member(self, member: str) -> bytes:
        info = self._chosen.get(member) or self._zip.getinfo(member)
        problem = member_problem(info, self.max_bytes)
        if problem:
            raise MemberRefused(member, problem)
        data = bytearray()
        try:
            with self._zip.open(info) as stream:
                while chunk := stream.read(_CHUNK):
                    data += chunk
                    if len(data) > self.max_bytes or len(data) > MAX_COMPRESSION_RATIO * max(info.compress_size, 1) + BIG_MEMBER_BYTES:
                        raise MemberRefused(member, "it unpacks to more than its header says (a zip bomb)")
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, RuntimeError) as exc:
            raise MemberRefused(member, f"it is damaged in the .zip ({exc})") from exc
        return bytes(data)


# ---------------------------------------------------------------------------------------------
# Extracting one attachment
# ---------------------------------------------------------------------------------------------


def safe_extract_member(zip_path: Path, member: str, dest_dir: Path, *,
                        max_bytes: int = 2_000_000_000) -> Path:
    """Write one member of the .zip into `dest_dir` (keeping its folders) and return its path.

    Refuses unsafe names and anything that would land outside `dest_dir` (checked on the
    resolved path, so symlinked folders inside `dest_dir` cannot lead out either). The file
    appears complete or not at all.
    """
    zip_path, dest_dir = Path(zip_path), Path(dest_dir)
    if _unsafe_name(member) or _is_noise(member):
        raise ChatFileError(f"“{member}” is not a safe name for a file, so it was not extracted.")
    root = dest_dir.resolve()
    target = (root / member.replace("\\", "/")).resolve()
    if target == root or not target.is_relative_to(root):
        raise ChatFileError(f"“{member}” would be written outside the chosen folder, so it was not extracted.")
    try:
        with zipfile.ZipFile(zip_path) as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise ChatFileError(f"“{member}” is not in “{zip_path.name}”.") from None
            if info.is_dir():
                raise ChatFileError(f"“{member}” is a folder, not a file.")
            if info.flag_bits & 0x1:
                raise ChatFileError(f"“{member}” is password-protected, so it cannot be extracted.")
            if info.file_size > max_bytes or (info.file_size >= BIG_MEMBER_BYTES and
                                              info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1)):
                raise ChatFileError(f"“{member}” is too large to extract safely.")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".partial-")
            try:
                with os.fdopen(fd, "wb") as out, zf.open(info) as src:
                    written = 0
                    while chunk := src.read(_CHUNK):
                        written += len(chunk)
                        if written > max_bytes:
                            raise ChatFileError(f"“{member}” is too large to extract safely.")
                        out.write(chunk)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    except ChatFileError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, RuntimeError) as exc:
        raise _not_a_complete_zip(printable(zip_path.name), "nothing was extracted") from exc
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise _not_a_complete_zip(printable(zip_path.name), "nothing was extracted") from exc
        raise ChatFileError(f"“{member}” could not be extracted ({exc.strerror or exc}).") from exc
    return target
