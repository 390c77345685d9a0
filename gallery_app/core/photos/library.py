"""The photos table: one row per photo file, where it came from and what its EXIF says."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from enum import Enum
from pathlib import Path

import apsw

from gallery_app.core.file_names import from_db, printable, to_db


class PhotoSource(str, Enum):
    FOLDER = "folder"  # found in a folder the person added
    UPLOAD = "upload"  # a file searched by and added ("Upload photo…", dropped on the window)
    CAMERA = "camera"  # a webcam capture that was kept
    BUNDLED = "bundled"  # shipped with the app, vectors precomputed


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

    def describe(self) -> str:
        """One line for lists: ``#12  2023-06-01 14:03  4032×3024  Apple iPhone 12  /path/to/photo.jpg``."""
        when = self.captured_at.replace("T", " ")[:16] if self.captured_at else "-"
        place = f"  {self.latitude:.4f},{self.longitude:.4f}" if self.latitude is not None else ""
        camera = f"  {self.camera}" if self.camera else ""
        return f"#{self.id}  {when}  {self.width}×{self.height}{camera}{place}  [{self.source}]  {self.shown_path}"


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


def list_photos(conn: apsw.Connection, *, limit: int | None = None, offset: int = 0) -> list[PhotoRecord]:
    """Newest capture first; photos without a capture time after, by when they were added."""
    order = " ORDER BY captured_at IS NULL, captured_at DESC, id DESC"
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
    return _records(conn.execute(_SELECT + order + page))


def count_photos(conn: apsw.Connection) -> int:
    return conn.execute("SELECT count(*) FROM photos").fetchone()[0]


def photos_in_folder(conn: apsw.Connection, folder_id: int) -> dict[str, PhotoRecord]:
    return {r.path: r for r in _records(conn.execute(f"{_SELECT} WHERE folder_id = ?", (folder_id,)))}


def insert_photo(conn: apsw.Connection, values: dict) -> int:
    """Insert a photo row (``values`` keyed by column, without ``id``); returns its id."""
    columns = [c for c in COLUMNS if c != "id"]
    conn.execute(f"INSERT INTO photos({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                 [_db_value(c, values.get(c)) for c in columns])
    return conn.last_insert_rowid()


def _db_value(column: str, value):
    return to_db(value) if column == "path" and value is not None else value


def update_photo(conn: apsw.Connection, photo_id: int, values: dict) -> None:
    columns = [c for c in COLUMNS if c != "id" and c in values]
    conn.execute(f"UPDATE photos SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                 [_db_value(c, values[c]) for c in columns] + [int(photo_id)])


def move_photo(conn: apsw.Connection, photo_id: int, *, path: str, folder_id: int | None, mtime_ns: int) -> None:
    conn.execute("UPDATE photos SET path = ?, folder_id = ?, mtime_ns = ? WHERE id = ?",
                 (to_db(path), folder_id, mtime_ns, photo_id))


def delete_photos(conn: apsw.Connection, ids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM photos WHERE id = ?", [(int(i),) for i in ids])


def ensure_folder(conn: apsw.Connection, folder: Path) -> int:
    conn.execute("INSERT INTO photo_folders(path) VALUES (?) ON CONFLICT(path) DO NOTHING", (to_db(folder),))
    return conn.execute("SELECT id FROM photo_folders WHERE path = ?", (to_db(folder),)).fetchone()[0]


def mark_folder_scanned(conn: apsw.Connection, folder_id: int) -> None:
    conn.execute("UPDATE photo_folders SET scanned_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                 (folder_id,))
