"""The photos table: one row per photo file, where it came from and what its EXIF says."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from enum import Enum
from pathlib import Path

import apsw

from gallery_app.core.file_names import from_db, printable, to_db
from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter


class PhotoSource(str, Enum):
    FOLDER = "folder"  # found in a folder the person added
    UPLOAD = "upload"  # a file searched by and added ("Upload photo…", dropped on the window)
    CAMERA = "camera"  # a webcam capture that was kept
    BUNDLED = "bundled"  # shipped with the app, vectors precomputed
    CHAT = "chat"  # sent in a chat: copied out of the export under the data folder


@dataclass(frozen=True)
class PhotoRecord:
    id: int
    path: str
    folder_id: int | None
    source: str
    content_hash: str
    file_size: int
    mtime_ns: int
    width: int
    height: int
    format: str | None
    captured_at: str | None  # ISO local time as the camera wrote it
    latitude: float | None
    longitude: float | None
    camera: str | None
    #: The timeline's time (ISO local): the capture time, else when a chat first sent it, else the file's time.
    taken_at: str
    #: The difference hash (photos/perceptual_hash.py): None not computed yet, "" none (a flat picture).
    perceptual_hash: str | None = None

    @property
    def name(self) -> str:
        """The file name as a person reads it (``path`` is the one that opens the file)."""
        return printable(Path(self.path).name)

    @property
    def shown_path(self) -> str:
        return printable(self.path)

    @property
    def capture_time(self) -> datetime | None:
        return datetime.fromisoformat(self.captured_at) if self.captured_at else None

    @property
    def taken_time(self) -> datetime:
        return datetime.fromisoformat(self.taken_at)

    def describe(self, origin: str = "") -> str:
        """One line for lists: ``#12  2023-06-01 14:03  4032×3024  Apple iPhone 12  [folder]  /path/to/photo.jpg``;
        ``origin`` follows the source (a chat photo's "Sent by Maya in “Weekend away” on …")."""
        when = self.captured_at.replace("T", " ")[:16] if self.captured_at else "-"
        place = f"  {self.latitude:.4f},{self.longitude:.4f}" if self.latitude is not None else ""
        camera = f"  {self.camera}" if self.camera else ""
        source = f"[{self.source}]" + (f" {origin}" if origin else "")
        return f"#{self.id}  {when}  {self.width}×{self.height}{camera}{place}  {source}  {self.shown_path}"


COLUMNS = tuple(f.name for f in fields(PhotoRecord))
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM photos"


def _records(rows: Iterable[Sequence]) -> list[PhotoRecord]:
    return [PhotoRecord(row[0], from_db(row[1]), *row[2:]) for row in rows]


def photo_by_id(conn: apsw.Connection, photo_id: int) -> PhotoRecord | None:
    found = _records(conn.execute(f"{_SELECT} WHERE id = ?", (int(photo_id),)))
    return found[0] if found else None


def photo_by_path(conn: apsw.Connection, path: Path | str) -> PhotoRecord | None:
    found = _records(conn.execute(f"{_SELECT} WHERE path = ?", (to_db(path),)))
    return found[0] if found else None


def photos_by_ids(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, PhotoRecord]:
    ids = [int(i) for i in ids]
    if not ids:
        return {}
    rows = conn.execute(f"{_SELECT} WHERE id IN (SELECT value FROM json_each(?))", (f"[{','.join(map(str, ids))}]",))
    return {record.id: record for record in _records(rows)}


def photos_with_hashes(conn: apsw.Connection, hashes: Iterable[str]) -> dict[str, list[PhotoRecord]]:
    hashes = sorted(set(hashes))
    found: dict[str, list[PhotoRecord]] = {}
    for start in range(0, len(hashes), 500):
        part = hashes[start:start + 500]
        rows = conn.execute(f"{_SELECT} WHERE content_hash IN ({','.join('?' * len(part))})", part)
        for record in _records(rows):
            found.setdefault(record.content_hash, []).append(record)
    return found


def list_photos(conn: apsw.Connection, *, limit: int | None = None, offset: int = 0,
                where: PhotoFilter = ALL_PHOTOS) -> list[PhotoRecord]:
    """Newest first on the timeline (``taken_at``), limited to what ``where`` keeps."""
    clause, params = where.sql()
    order = " ORDER BY taken_at DESC, id DESC"
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
    return _records(conn.execute(_SELECT + clause + order + page, params))


def count_photos(conn: apsw.Connection, where: PhotoFilter = ALL_PHOTOS) -> int:
    clause, params = where.sql()
    return conn.execute("SELECT count(*) FROM photos" + clause, params).fetchone()[0]


def photo_ids(conn: apsw.Connection, where: PhotoFilter) -> list[int]:
    clause, params = where.sql()
    return [row[0] for row in conn.execute("SELECT id FROM photos" + clause, params)]


def photos_in_folder(conn: apsw.Connection, folder_id: int) -> dict[str, PhotoRecord]:
    return {r.path: r for r in _records(conn.execute(f"{_SELECT} WHERE folder_id = ?", (folder_id,)))}


#: The one rule of a photo's timeline time: its capture time, else the first chat message that sent
#: it, else its file's modification time (all naive local time, as the camera and the chat write it).
_TAKEN_AT = ("coalesce(captured_at, (SELECT min(m.ts) FROM chat_photos c JOIN messages m ON m.id = c.message_id "
             "WHERE c.photo_id = photos.id), strftime('%Y-%m-%dT%H:%M:%S', mtime_ns / 1000000000, 'unixepoch', "
             "'localtime'), substr(added_at, 1, 19))")  # added_at: a file time SQLite cannot write (past year 9999)


def refresh_taken_at(conn: apsw.Connection, ids: Sequence[int]) -> list[int]:
    """Recompute the photos' ``taken_at``; returns the ids whose value changed.

    Their vectors' ``taken_day`` must follow: ``photo_vectors.refresh_timeline`` does both."""
    changed = []
    for photo_id in ids:
        row = conn.execute(f"UPDATE photos SET taken_at = {_TAKEN_AT} WHERE id = ? AND taken_at IS NOT {_TAKEN_AT} "
                           "RETURNING id", (int(photo_id),)).fetchone()
        if row:
            changed.append(row[0])
    return changed


def insert_photo(conn: apsw.Connection, values: dict) -> int:
    """Insert a photo row (``values`` keyed by column, without ``id`` and ``taken_at``); returns its id."""
    columns = [c for c in COLUMNS if c not in ("id", "taken_at")]
    conn.execute(f"INSERT INTO photos({', '.join(columns)}, taken_at) VALUES ({', '.join('?' * len(columns))}, '')",
                 [_db_value(c, values.get(c)) for c in columns])
    photo_id = conn.last_insert_rowid()
    refresh_taken_at(conn, [photo_id])
    return photo_id


def _db_value(column: str, value):
    return to_db(value) if column == "path" and value is not None else value


def update_photo(conn: apsw.Connection, photo_id: int, values: dict) -> None:
    columns = [c for c in COLUMNS if c not in ("id", "taken_at") and c in values]
    conn.execute(f"UPDATE photos SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                 [_db_value(c, values[c]) for c in columns] + [int(photo_id)])


def move_photo(conn: apsw.Connection, photo_id: int, *, path: str, folder_id: int | None, mtime_ns: int) -> None:
    conn.execute("UPDATE photos SET path = ?, folder_id = ?, mtime_ns = ? WHERE id = ?",
                 (to_db(path), folder_id, mtime_ns, photo_id))


def delete_photos(conn: apsw.Connection, ids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM photos WHERE id = ?", [(int(i),) for i in ids])


def folders_with_photos(conn: apsw.Connection) -> list[tuple[int, str, int]]:
    """(folder id, path, photos in it) of every added folder, by path."""
    rows = conn.execute("SELECT f.id, f.path, count(p.id) FROM photo_folders f LEFT JOIN photos p ON p.folder_id = f.id "
                        "GROUP BY f.id ORDER BY f.path")
    return [(folder_id, from_db(path), count) for folder_id, path, count in rows]


def ensure_folder(conn: apsw.Connection, folder: Path) -> int:
    conn.execute("INSERT INTO photo_folders(path) VALUES (?) ON CONFLICT(path) DO NOTHING", (to_db(folder),))
    return conn.execute("SELECT id FROM photo_folders WHERE path = ?", (to_db(folder),)).fetchone()[0]


def mark_folder_scanned(conn: apsw.Connection, folder_id: int) -> None:
    conn.execute("UPDATE photo_folders SET scanned_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                 (folder_id,))
