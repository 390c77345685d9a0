"""Named, ordered schema migrations, recorded in the database file itself.

A migration is a plain function taking a connection. Each runs inside its own
transaction together with the row that records it, so a crash never leaves a
half-applied migration, and running ``migrate`` again applies nothing twice.
New migrations are appended to ``MIGRATIONS``; existing ones are never edited or reordered.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import apsw

from gallery_app.core.errors import StoreError
from gallery_app.core.store.transactions import atomic
from gallery_app.core.store.vectors import VERSION_KEY_PREFIX

Migration = Callable[[apsw.Connection], None]


def m001_vector_registry(conn: apsw.Connection) -> None:
    # Which model made each vector table: vectors of two models are mutually meaningless
    # even at equal dimensions, so every insert and search is checked against this row.
    conn.execute(
        """
        CREATE TABLE vector_tables (
            table_name   TEXT PRIMARY KEY,
            kind         TEXT NOT NULL,
            model_key    TEXT NOT NULL,
            dims         INTEGER NOT NULL CHECK (dims > 0),
            metric       TEXT NOT NULL,
            metadata     TEXT NOT NULL DEFAULT '{}',
            created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            UNIQUE (kind, model_key)
        )
        """
    )


def m002_settings(conn: apsw.Connection) -> None:
    # App state that belongs with the data (not with the machine), e.g. "demo data imported".
    conn.execute("CREATE TABLE app_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def m003_chats(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE chats (
            id           INTEGER PRIMARY KEY,
            title        TEXT NOT NULL,
            source_path  TEXT,
            date_order   TEXT,
            created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
        );
        CREATE TABLE messages (
            id           INTEGER PRIMARY KEY,
            chat_id      INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
            ts           TEXT NOT NULL,
            sender       TEXT,
            text         TEXT NOT NULL,
            kind         TEXT NOT NULL CHECK (kind IN ('text', 'system', 'media', 'deleted')),
            attachment   TEXT,
            edited       INTEGER NOT NULL DEFAULT 0,
            source_line  INTEGER,
            -- (timestamp, sender, text, n-th repeat): the same message in a later, longer export
            message_key  TEXT NOT NULL,
            UNIQUE (chat_id, message_key)
        );
        CREATE INDEX messages_by_chat_time ON messages(chat_id, ts, id);
        CREATE INDEX messages_by_key ON messages(message_key);
        CREATE TABLE chunks (
            id                INTEGER PRIMARY KEY,
            chat_id           INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
            day               TEXT NOT NULL,
            first_message_id  INTEGER NOT NULL,
            last_message_id   INTEGER NOT NULL,
            message_ids       TEXT NOT NULL,
            senders           TEXT NOT NULL,
            text              TEXT NOT NULL,
            tokens            INTEGER NOT NULL
        );
        CREATE INDEX chunks_by_chat_day ON chunks(chat_id, day);
        -- Keyword search over the same passages; kept in step with `chunks` by chat/repository.py.
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TABLE chat_imports (
            id                INTEGER PRIMARY KEY,
            chat_id           INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
            source_path       TEXT,
            imported_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            messages_in_file  INTEGER NOT NULL,
            messages_added    INTEGER NOT NULL,
            skipped_lines     INTEGER NOT NULL,
            attachments       INTEGER NOT NULL
        );
        """
    )


def m004_chunk_windows(conn: apsw.Connection) -> None:
    # The windows searched inside each passage: a few consecutive messages, overlapping. Their vectors
    # live in vec_windows_<model>; a passage ranks by its best window.
    conn.execute(
        """
        CREATE TABLE chunk_windows (
            id           INTEGER PRIMARY KEY,
            chunk_id     INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            message_ids  TEXT NOT NULL,
            text         TEXT NOT NULL
        );
        CREATE INDEX chunk_windows_by_chunk ON chunk_windows(chunk_id);
        """
    )


def m005_photos(conn: apsw.Connection) -> None:
    # One row per photo file. Vectors live in vec_photos_<model space>, keyed by photos.id, so a
    # renamed or moved file (same content_hash) keeps its vector by keeping its row.
    conn.execute(
        """
        CREATE TABLE photo_folders (
            id           INTEGER PRIMARY KEY,
            path         TEXT NOT NULL UNIQUE,
            added_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            scanned_at   TEXT
        );
        CREATE TABLE photos (
            id            INTEGER PRIMARY KEY,
            path          TEXT NOT NULL UNIQUE,
            folder_id     INTEGER REFERENCES photo_folders(id) ON DELETE CASCADE,
            source        TEXT NOT NULL CHECK (source IN ('folder', 'upload', 'camera', 'bundled')),
            content_hash  TEXT NOT NULL,
            file_size     INTEGER NOT NULL,
            mtime_ns      INTEGER NOT NULL,
            width         INTEGER NOT NULL,
            height        INTEGER NOT NULL,
            format        TEXT,
            captured_at   TEXT,
            latitude      REAL,
            longitude     REAL,
            camera        TEXT,
            added_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
        );
        CREATE INDEX photos_by_hash ON photos(content_hash);
        CREATE INDEX photos_by_folder ON photos(folder_id);
        CREATE INDEX photos_by_capture ON photos(captured_at);
        """
    )


#: The photo vector tables' metadata columns from 006 on (a snapshot: migrations never change).
_PHOTO_VECTOR_METADATA_006 = {"source": "text", "taken_day": "integer"}


def m006_chat_photos(conn: apsw.Connection) -> None:
    # Photos sent in chats: their copies are photos of source 'chat'; chat_photos links a message to the
    # photo it attached (a photo already in the gallery is linked, not copied). taken_at is the
    # timeline's time: the capture time, else the earliest chat message that sent it, else the file time.
    # SQLite cannot change a CHECK in place, so photos is rebuilt (nothing references it yet).
    conn.execute(
        """
        CREATE TABLE photos_006 (
            id            INTEGER PRIMARY KEY,
            path          TEXT NOT NULL UNIQUE,
            folder_id     INTEGER REFERENCES photo_folders(id) ON DELETE CASCADE,
            source        TEXT NOT NULL CHECK (source IN ('folder', 'upload', 'camera', 'bundled', 'chat')),
            content_hash  TEXT NOT NULL,
            file_size     INTEGER NOT NULL,
            mtime_ns      INTEGER NOT NULL,
            width         INTEGER NOT NULL,
            height        INTEGER NOT NULL,
            format        TEXT,
            captured_at   TEXT,
            latitude      REAL,
            longitude     REAL,
            camera        TEXT,
            added_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            taken_at      TEXT NOT NULL
        );
        INSERT INTO photos_006(id, path, folder_id, source, content_hash, file_size, mtime_ns, width, height, format,
                               captured_at, latitude, longitude, camera, added_at, taken_at)
            SELECT id, path, folder_id, source, content_hash, file_size, mtime_ns, width, height, format,
                   captured_at, latitude, longitude, camera, added_at,
                   coalesce(captured_at, strftime('%Y-%m-%dT%H:%M:%S', mtime_ns / 1000000000, 'unixepoch', 'localtime'),
                            substr(added_at, 1, 19))
            FROM photos;
        DROP TABLE photos;
        ALTER TABLE photos_006 RENAME TO photos;
        CREATE INDEX photos_by_hash ON photos(content_hash);
        CREATE INDEX photos_by_folder ON photos(folder_id);
        CREATE INDEX photos_by_capture ON photos(captured_at);
        CREATE INDEX photos_by_taken ON photos(taken_at, id);
        CREATE TABLE chat_photos (
            message_id  INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
            chat_id     INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
            photo_id    INTEGER NOT NULL REFERENCES photos(id) ON DELETE CASCADE,
            member      TEXT NOT NULL,
            caption     TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX chat_photos_by_chat ON chat_photos(chat_id, photo_id);
        CREATE INDEX chat_photos_by_photo ON chat_photos(photo_id);
        """
    )
    # Each photo vector table gains the day of taken_at (YYYYMMDD) for date-range filters: vec0 tables
    # cannot add a column, so each is rebuilt under the same name with its vectors.
    tables = conn.execute("SELECT table_name, model_key, dims, metric FROM vector_tables WHERE kind = 'photos'").fetchall()
    for name, model_key, dims, metric in tables:
        rows = conn.execute(
            f"SELECT v.rowid, v.embedding, v.source, CAST(replace(substr(p.taken_at, 1, 10), '-', '') AS INTEGER) "
            f"FROM {name} v JOIN photos p ON p.id = v.rowid").fetchall()
        conn.execute(f"DROP TABLE {name}")
        columns = ", ".join(f"{c} {t}" for c, t in _PHOTO_VECTOR_METADATA_006.items())
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING vec0(embedding float[{dims}] distance_metric={metric}, {columns})")
        conn.executemany(f"INSERT INTO {name}(rowid, embedding, source, taken_day) VALUES (?, ?, ?, ?)", rows)
        conn.execute("UPDATE vector_tables SET metadata = ? WHERE table_name = ?",
                     (json.dumps(_PHOTO_VECTOR_METADATA_006, sort_keys=True), name))
        # Searches in other processes hold a packed copy: a new change count makes them reload it.
        conn.execute("INSERT INTO app_state(key, value) VALUES (?, '1') "
                     "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                     (VERSION_KEY_PREFIX + name,))


def m007_perceptual_hash(conn: apsw.Connection) -> None:
    # Each photo's difference hash (photos/perceptual_hash.py), so resized and re-encoded copies are found
    # without a model. NULL until computed: photos already indexed get theirs when duplicates are first looked
    # for, new ones when they are indexed. Adding a nullable column leaves every row and vector in place.
    conn.execute("ALTER TABLE photos ADD COLUMN perceptual_hash TEXT")


def m008_notes(conn: apsw.Connection) -> None:
    # Notes folders (core/notes/): a row per file seen, indexed or skipped with its reason, so a rescan
    # compares size and mtime (then the content hash) without reading unchanged files, and a renamed file
    # (same hash, new path) keeps its row, chunks and vectors. Paths are core/file_names.to_db values:
    # the folder absolute, a file's relative to it. Chunk vectors live in vec_notes_<model>, keyed by
    # note_chunks.id; note_chunks_fts is their keyword index, kept in step by notes/repository.py.
    conn.execute(
        """
        CREATE TABLE notes_folders (
            id           INTEGER PRIMARY KEY,
            path         TEXT NOT NULL UNIQUE,
            added_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            scanned_at   TEXT
        );
        CREATE TABLE note_files (
            id             INTEGER PRIMARY KEY,
            folder_id      INTEGER NOT NULL REFERENCES notes_folders(id) ON DELETE CASCADE,
            relative_path  TEXT NOT NULL,
            size           INTEGER NOT NULL,
            mtime_ns       INTEGER NOT NULL,
            -- NULL when the file was never read (a type no loader reads, over the size cap)
            content_hash   TEXT,
            -- the loader's kind (markdown, text, jsonl, pdf, docx); NULL when no loader read it
            kind           TEXT,
            documents      INTEGER NOT NULL DEFAULT 0,
            pages          INTEGER,
            state          TEXT NOT NULL CHECK (state IN ('indexed', 'skipped')),
            skip_reason    TEXT,
            -- JSON list of what was left out of an indexed file ("line 12: not JSON"); NULL when nothing
            problems       TEXT,
            indexed_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
            UNIQUE (folder_id, relative_path),
            CHECK ((state = 'skipped') = (skip_reason IS NOT NULL))
        );
        CREATE INDEX note_files_by_hash ON note_files(folder_id, content_hash);
        CREATE TABLE note_chunks (
            id            INTEGER PRIMARY KEY,
            file_id       INTEGER NOT NULL REFERENCES note_files(id) ON DELETE CASCADE,
            part          INTEGER,
            ordinal       INTEGER NOT NULL,
            title         TEXT NOT NULL,
            heading_path  TEXT NOT NULL,
            page          INTEGER,
            -- embedded before text: "Title › Heading, page 3" (and a document's front matter)
            context       TEXT NOT NULL,
            -- the document's text[start_offset:end_offset] (core/notes/chunking.py)
            text          TEXT NOT NULL,
            start_offset  INTEGER NOT NULL,
            end_offset    INTEGER NOT NULL,
            tokens        INTEGER NOT NULL,
            UNIQUE (file_id, ordinal)
        );
        CREATE VIRTUAL TABLE note_chunks_fts USING fts5(
            context, text, content='note_chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
        );
        """
    )


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_vector_registry", m001_vector_registry),
    ("002_app_state", m002_settings),
    ("003_chats", m003_chats),
    ("004_chunk_windows", m004_chunk_windows),
    ("005_photos", m005_photos),
    ("006_chat_photos", m006_chat_photos),
    ("007_perceptual_hash", m007_perceptual_hash),
    ("008_notes", m008_notes),
]


def _ensure_ledger(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            name        TEXT PRIMARY KEY,
            applied_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
        )
        """
    )


def applied_migrations(conn: apsw.Connection) -> list[str]:
    _ensure_ledger(conn)
    return [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(conn: apsw.Connection, migrations: list[tuple[str, Migration]] | None = None) -> list[str]:
    """Apply every migration not yet recorded in the file; return the names applied now."""
    migrations = MIGRATIONS if migrations is None else migrations
    names = [name for name, _ in migrations]
    if len(set(names)) != len(names):
        raise StoreError("Two database migrations share a name; this is a bug in the app.")
    done = set(applied_migrations(conn))
    unknown = done - set(names)
    if unknown:
        raise StoreError(
            "This database was written by a newer version of gallery_app "
            f"(it has the changes {', '.join(sorted(unknown))}).",
            hint="Update the app to open it.",
        )
    applied_now = []
    for name, function in migrations:
        if name in done:
            continue
        try:
            # The write lock comes first, so of two connections opening a new file at once, the
            # second waits and then sees the step recorded instead of running it again.
            with atomic(conn):
                if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone() is None:
                    function(conn)
                    conn.execute("INSERT INTO schema_migrations(name) VALUES (?)", (name,))
                    applied_now.append(name)
        except apsw.Error as exc:
            raise StoreError(f"Updating the database failed at step {name}: {exc}.") from exc
    return applied_now
