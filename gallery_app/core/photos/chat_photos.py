"""Photos sent in chats: copied out of the export into the gallery, each linked to the message that sent it.

A chat import calls ``import_chat_photos`` once its messages are stored. Every message whose
attachment is a photo and is not linked yet is looked up in the export (``ExportMedia``: members
of the .zip, or files beside an unpacked _chat.txt) and read with that file's own safety checks. A
photo whose content is already in the gallery (a folder's, another chat's, an upload) is linked,
not copied again; a new one is copied under ``<data>/photos/chats/<chat id>/`` and indexed like
any photo (vectors when CLIP is here, recorded without otherwise). So the same export imported
again adds nothing, and a longer one adds only the photos of its new messages.

The links are written after indexing: an import stopped in between leaves photos without their
chat, and the next import finds them by content and links them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath

import apsw

from gallery_app.core import paths
from gallery_app.core.chat.export_file import ChatExport, ExportMedia, MemberRefused
from gallery_app.core.chat.messages import Message, MessageKind
from gallery_app.core.errors import AppError
from gallery_app.core.file_names import printable
from gallery_app.core.models.runtimes.clip import ClipVisionEncoder
from gallery_app.core.photos import library
from gallery_app.core.photos.additions import write_atomically
from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.library import PhotoRecord, PhotoSource
from gallery_app.core.photos.photo_vectors import refresh_timeline
from gallery_app.core.photos.preparing import PHOTO_SUFFIXES, content_hash
from gallery_app.core.store import atomic

#: (done, total) over the chat's photos still to add.
PhotoProgress = Callable[[int, int], None]
#: A caption may be the sender's next message when it follows the photo this soon.
CAPTION_FOLLOWS_WITHIN = timedelta(minutes=1)


def is_photo_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in PHOTO_SUFFIXES and not PurePosixPath(name).name.startswith(".")


def photo_captions(messages: Sequence[Message], keys: Sequence[str]) -> dict[str, str]:
    """Message key → caption of every photo message: its own words, else the same sender's next message
    when that comes within a minute and carries only text ("view from the cottage" sent just after)."""
    captions: dict[str, str] = {}
    for index, message in enumerate(messages):
        if not message.attachment or not is_photo_name(message.attachment):
            continue
        caption = (message.caption or "").strip()
        if not caption:
            for later_index in range(index + 1, len(messages)):  # no slice: a big chat has thousands of photos
                later = messages[later_index]
                if later.timestamp - message.timestamp > CAPTION_FOLLOWS_WITHIN:
                    break
                if later.sender == message.sender:
                    if later.kind is MessageKind.TEXT and not later.attachment:
                        caption = later.text.strip()
                    break
        captions[keys[index]] = caption
    return captions


@dataclass(frozen=True)
class ChatPhoto:
    """A photo as one chat message sent it."""

    photo_id: int
    chat_id: int
    chat_title: str
    message_id: int
    sender: str | None
    sent_at: datetime
    caption: str

    def describe(self) -> str:
        """'Sent by Maya in “Weekend away” on Sat 18 May 2024, 16:02 — “view from the cottage”'."""
        text = f"Sent by {self.sender or 'someone'} in “{self.chat_title}” on {self.sent_at:%a %d %b %Y, %H:%M}"
        return text + (f" — “{self.caption}”" if self.caption else "")


@dataclass
class ChatPhotoSummary:
    found: int = 0          # photo attachments of messages not linked before
    added: int = 0          # copied into the gallery
    linked: int = 0         # already in the gallery (same content): linked, not copied
    missing: int = 0        # named by a message, not in the export ("Export without media", or a cut .zip)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file, why): unsafe, undecodable …
    without_vectors: int = 0
    cancelled: bool = False
    #: The app's copies of this chat's photos that were gone from the data folder, written again from the export.
    restored: int = 0

    def describe(self) -> str:
        restored = (f"{self.restored} photo{'s' if self.restored != 1 else ''} missing from the data folder "
                    "restored from the export.") if self.restored else ""
        if not self.found:
            return restored
        parts = [f"{self.added} photo{'s' if self.added != 1 else ''} added to the gallery"]
        if self.linked:
            parts.append(f"{self.linked} already there (linked)")
        if self.missing:
            parts.append(f"{self.missing} not in the export")
        if self.refused:
            parts.append(f"{len(self.refused)} refused ({'; '.join(f'{n}: {why}' for n, why in self.refused[:3])}"
                         + (" …" if len(self.refused) > 3 else "") + ")")
        text = ", ".join(parts) + "."
        if self.without_vectors:
            text += " They can be searched once the CLIP model is here."
        if restored:
            text += " " + restored
        if self.cancelled:
            text = "Stopped while adding photos; those added so far are kept. " + text
        return text


@dataclass
class _Pending:
    message_id: int
    member: str
    caption: str


def import_chat_photos(conn: apsw.Connection, export: ChatExport, chat_id: int, captions: dict[str, str],
                       vision: ClipVisionEncoder | None, *, progress: PhotoProgress | None = None,
                       cancel: Callable[[], bool] | None = None) -> ChatPhotoSummary:
    """Add the photos of ``chat_id``'s messages that the export holds and that are not linked yet."""
    summary = ChatPhotoSummary()
    cancel = cancel or (lambda: False)
    progress = progress or (lambda done, total: None)
    summary.restored = _restore_lost_copies(conn, export, chat_id)
    waiting = [(message_id, key, name) for message_id, key, name in conn.execute(
        "SELECT id, message_key, attachment FROM messages WHERE chat_id = ? AND attachment IS NOT NULL "
        "AND id NOT IN (SELECT message_id FROM chat_photos) ORDER BY ts, id", (chat_id,)) if is_photo_name(name)]
    summary.found = len(waiting)
    if not waiting:
        return summary
    links: list[tuple[_Pending, int]] = []    # (message, photo id) known now
    copies: dict[str, list[_Pending]] = {}    # new copy's path → the messages that sent that content
    folder = paths.library_dir("chats") / str(chat_id)
    with ExportMedia(export) as media:
        known_by_hash: dict[str, int] = {}
        copy_by_hash: dict[str, str] = {}
        for number, (message_id, key, name) in enumerate(waiting):
            if cancel():
                summary.cancelled = True
                break
            member = media.find(name)
            if member is None:
                summary.missing += 1
                continue
            pending = _Pending(message_id, member, captions.get(key, ""))
            try:
                data = media.read(member)
            except MemberRefused as refused:
                summary.refused.append((printable(name), refused.reason))
                continue
            digest = content_hash(data)
            if digest not in known_by_hash and digest not in copy_by_hash:
                existing = library.photos_with_hashes(conn, [digest]).get(digest)
                if existing:
                    known_by_hash[digest] = existing[0].id
            if digest in known_by_hash:
                links.append((pending, known_by_hash[digest]))
                summary.linked += 1
            elif digest in copy_by_hash:
                copies[copy_by_hash[digest]].append(pending)
            else:
                try:
                    target = _write_copy(folder, _copy_name(name), data, digest)
                except OSError as exc:
                    summary.refused.append((printable(name), f"it could not be copied ({exc.strerror or exc})"))
                    continue
                copy_by_hash[digest] = str(target)
                copies[str(target)] = [pending]
            del data
            progress((number + 1) // 4, len(waiting))  # reading is the quick quarter
    if copies and not summary.cancelled:
        _index_copies(conn, vision, copies, links, summary, progress, cancel, len(waiting))
    _link(conn, chat_id, links)
    summary.without_vectors = summary.added if vision is None else 0
    progress(len(waiting), len(waiting))
    return summary


def _restore_lost_copies(conn: apsw.Connection, export: ChatExport, chat_id: int) -> int:
    """Write again the app's copies of this chat's photos that someone deleted from the data folder (their
    rows, links and vectors stayed: the grid showed photos that no longer open). Only the same content."""
    lost = [(Path(path), digest, name) for path, digest, name in conn.execute(
        "SELECT DISTINCT p.path, p.content_hash, m.attachment FROM chat_photos c JOIN photos p ON p.id = c.photo_id "
        "JOIN messages m ON m.id = c.message_id WHERE c.chat_id = ? AND p.source = ?", (chat_id, PhotoSource.CHAT.value))
        if not Path(path).exists()]
    if not lost:
        return 0
    restored: set[Path] = set()
    with ExportMedia(export) as media:
        for path, digest, name in lost:
            member = media.find(name)
            if path in restored or member is None:
                continue
            try:
                data = media.read(member)
            except MemberRefused:
                continue
            if content_hash(data) != digest:
                continue
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(path, lambda out: out.write(data))
            except OSError:
                continue
            restored.add(path)
    return len(restored)


#: Characters a file name may not hold on some systems the data folder may live on (Windows, a FAT stick).
_NOT_IN_FILE_NAMES = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def _copy_name(name: str) -> str:
    """The copy's file name: the attachment's, without characters another system's files cannot have."""
    base = _NOT_IN_FILE_NAMES.sub("_", PurePosixPath(name.replace("\\", "/")).name).rstrip(" .")
    return base if base and not base.startswith(".") else f"photo{base}"  # a leading dot would hide it


def _write_copy(folder: Path, name: str, data: bytes, digest: str) -> Path:
    """The copy of one photo under ``folder``: ``name``, or ``name-<hash>`` when another file has it."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if target.exists():
        if target.is_file() and content_hash(target.read_bytes()) == digest:
            return target  # left by an import stopped before it indexed this photo
        target = target.with_name(f"{target.stem}-{digest[:8]}{target.suffix}")
    write_atomically(target, lambda out: out.write(data))
    return target


def _index_copies(conn: apsw.Connection, vision: ClipVisionEncoder | None, copies: dict[str, list[_Pending]],
                  links: list[tuple[_Pending, int]], summary: ChatPhotoSummary, progress: PhotoProgress,
                  cancel: Callable[[], bool], total: int) -> None:
    quarter = total // 4
    # Never ``total`` here: "all done" is told only once the links are written (the grid reloads on it).
    indexer = PhotoIndexer(conn, vision, cancel=cancel, progress=lambda stage, done, of: progress(
        min(total - 1, quarter + (total - quarter) * done // max(of, 1)), total))
    result = indexer.add_files([Path(p) for p in copies], PhotoSource.CHAT)
    summary.cancelled = summary.cancelled or result.cancelled
    skipped = {str(s.path): s for s in result.skipped}  # add_files reports resolved paths
    for path, senders in copies.items():
        resolved = str(Path(path).resolve())
        if resolved in skipped:
            summary.refused.append((printable(Path(path).name), skipped[resolved].detail.rstrip(".")))
            Path(path).unlink(missing_ok=True)
            continue
        photo_id = result.ids_by_path.get(resolved)
        if photo_id is None:
            continue  # not reached before a cancel: the file stays for the next import
        links.extend((pending, photo_id) for pending in senders)
        if resolved in result.joined:
            summary.linked += len(senders)
        else:
            summary.added += 1


def _link(conn: apsw.Connection, chat_id: int, links: list[tuple[_Pending, int]]) -> None:
    if not links:
        return
    with atomic(conn):
        conn.executemany(
            "INSERT INTO chat_photos(message_id, chat_id, photo_id, member, caption) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(message_id) DO NOTHING",
            [(p.message_id, chat_id, photo_id, p.member, p.caption) for p, photo_id in links])
        refresh_timeline(conn, sorted({photo_id for _, photo_id in links}))


# --- reading --------------------------------------------------------------------------------------

_CONTEXT = ("SELECT c.photo_id, c.chat_id, ch.title, c.message_id, m.sender, m.ts, c.caption FROM chat_photos c "
            "JOIN messages m ON m.id = c.message_id JOIN chats ch ON ch.id = c.chat_id")


def _context(row) -> ChatPhoto:
    photo_id, chat_id, title, message_id, sender, ts, caption = row
    return ChatPhoto(photo_id, chat_id, title, message_id, sender, datetime.fromisoformat(ts), caption)


def chat_context(conn: apsw.Connection, photo_ids: Sequence[int]) -> dict[int, list[ChatPhoto]]:
    """Photo id → every message that sent it, earliest first."""
    found: dict[int, list[ChatPhoto]] = {}
    ids = [int(i) for i in photo_ids]
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        rows = conn.execute(f"{_CONTEXT} WHERE c.photo_id IN ({','.join('?' * len(part))}) ORDER BY m.ts, m.id", part)
        for row in rows:
            context = _context(row)
            found.setdefault(context.photo_id, []).append(context)
    return found


def photos_of_messages(conn: apsw.Connection, message_ids: Sequence[int]) -> dict[int, PhotoRecord]:
    """Message id → the gallery photo it sent (for showing a thumbnail in place of "<attached: …>")."""
    ids = [int(i) for i in message_ids]
    pairs: dict[int, int] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        pairs.update(conn.execute(
            f"SELECT message_id, photo_id FROM chat_photos WHERE message_id IN ({','.join('?' * len(part))})", part))
    records = library.photos_by_ids(conn, sorted(set(pairs.values())))
    return {message_id: records[photo_id] for message_id, photo_id in pairs.items() if photo_id in records}


def chats_with_photos(conn: apsw.Connection) -> list[tuple[int, str, int]]:
    """(chat id, title, how many photos) of every chat that sent photos, by title."""
    rows = conn.execute("SELECT ch.id, ch.title, count(DISTINCT c.photo_id) FROM chats ch "
                        "JOIN chat_photos c ON c.chat_id = ch.id GROUP BY ch.id ORDER BY ch.title COLLATE NOCASE")
    return [(chat_id, title, count) for chat_id, title, count in rows]


def chat_exists(conn: apsw.Connection, chat_id: int) -> None:
    """Raise a clear error when there is no chat ``chat_id``."""
    if conn.execute("SELECT 1 FROM chats WHERE id = ?", (int(chat_id),)).fetchone() is None:
        raise AppError(f"There is no chat {chat_id}.", hint="See the chats and their numbers with: gallery-app-cli chat list")


