"""Every notes table, read and written here only: folders (``notes_folders``), the files seen in them
(``note_files``, indexed or skipped with the reason), their chunks (``note_chunks``, kept in step with
their keyword index ``note_chunks_fts``) and the chunks' vectors (``vec_notes_<model>``, a table per
text embedder).

Reading never creates a table: a text embedder without a vector table yet has embedded no chunk.
Paths are stored as ``file_names.to_db`` values: a folder's absolute, a file's relative to its folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import apsw
import numpy as np

from gallery_app.core.file_names import from_db, to_db
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.notes.chunking import NoteChunk, embedded_text
from gallery_app.core.store import (
    VectorTable, atomic, delete_vectors, ensure_vector_table, existing_vector_table, insert_vectors, list_vector_tables,
)
from gallery_app.core.store.vector_search import similarities

NOTE_KIND = "notes"
NOTE_METADATA = {"folder_id": "integer", "file_id": "integer"}
#: Host parameters per statement, well under SQLite's limit.
_BATCH = 900


@dataclass(frozen=True)
class NotesFolder:
    id: int
    path: Path
    added_at: str
    scanned_at: str | None


@dataclass(frozen=True)
class StoredFile:
    id: int
    folder_id: int
    relative_path: str
    size: int
    mtime_ns: int
    content_hash: str | None
    kind: str | None
    documents: int
    pages: int | None
    state: str
    skip_reason: str | None
    #: What was left out of an indexed file while it was read (``NoteDocument.problems``).
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileValues:
    """What a file row records about the file at one moment (its stat before it was read)."""

    relative_path: str
    size: int
    mtime_ns: int
    content_hash: str | None
    kind: str | None = None
    documents: int = 0
    pages: int | None = None
    problems: tuple[str, ...] = ()


class ChunkToEmbed(NamedTuple):
    """A stored chunk as it is embedded; equal to another only if nothing about it changed."""

    id: int
    folder_id: int
    file_id: int
    context: str
    text: str

    @property
    def embedded(self) -> str:
        return embedded_text(self.context, self.text)


@dataclass(frozen=True)
class StoredNoteChunk:
    id: int
    folder_id: int
    file_id: int
    #: The file on disk (folder path / relative path).
    path: Path
    relative_path: str
    kind: str | None
    part: int | None
    ordinal: int
    title: str
    heading_path: tuple[str, ...]
    page: int | None
    context: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class ChunkScores:
    """Every embedded chunk of the folders asked, scored against the query."""

    chunk_ids: np.ndarray
    scores: np.ndarray


def _placeholders(values: Sequence) -> str:
    return ",".join("?" * len(values))


def _batches(values: Sequence, size: int = _BATCH) -> Iterable[list]:
    for start in range(0, len(values), size):
        yield list(values[start:start + size])


# --- folders -----------------------------------------------------------------------------------
_FOLDER_COLUMNS = "id, path, added_at, scanned_at"


def _folder(row) -> NotesFolder:
    folder_id, path, added_at, scanned_at = row
    return NotesFolder(folder_id, Path(from_db(path)), added_at, scanned_at)


def list_folders(conn: apsw.Connection) -> list[NotesFolder]:
    return [_folder(row) for row in conn.execute(f"SELECT {_FOLDER_COLUMNS} FROM notes_folders ORDER BY id")]


def folder_by_path(conn: apsw.Connection, path: Path) -> NotesFolder | None:
    row = conn.execute(f"SELECT {_FOLDER_COLUMNS} FROM notes_folders WHERE path = ?", (to_db(path),)).fetchone()
    return _folder(row) if row else None


def folder_by_id(conn: apsw.Connection, folder_id: int) -> NotesFolder | None:
    row = conn.execute(f"SELECT {_FOLDER_COLUMNS} FROM notes_folders WHERE id = ?", (folder_id,)).fetchone()
    return _folder(row) if row else None


def ensure_folder(conn: apsw.Connection, path: Path) -> int:
    with atomic(conn):
        conn.execute("INSERT INTO notes_folders(path) VALUES (?) ON CONFLICT(path) DO NOTHING", (to_db(path),))
        return conn.execute("SELECT id FROM notes_folders WHERE path = ?", (to_db(path),)).fetchone()[0]


def mark_folder_scanned(conn: apsw.Connection, folder_id: int) -> None:
    with atomic(conn):
            conn.execute("UPDATE notes_folders SET scanned_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                     (folder_id,))


def remove_folder(conn: apsw.Connection, folder_id: int) -> None:
    """The folder, its files, chunks, keyword rows and every model's vectors of them, in one transaction."""
    with atomic(conn):
        files = [row[0] for row in conn.execute("SELECT id FROM note_files WHERE folder_id = ?", (folder_id,))]
        delete_files(conn, files)
        conn.execute("DELETE FROM notes_folders WHERE id = ?", (folder_id,))


# --- files -------------------------------------------------------------------------------------
_FILE_COLUMNS = ("id, folder_id, relative_path, size, mtime_ns, content_hash, kind, documents, pages, state, "
                 "skip_reason, problems")


def _file(row) -> StoredFile:
    return StoredFile(row[0], row[1], from_db(row[2]), *row[3:-1], tuple(json.loads(row[-1])) if row[-1] else ())


def files_in_folder(conn: apsw.Connection, folder_id: int) -> dict[str, StoredFile]:
    """The folder's file rows by relative path (as ``str``)."""
    rows = conn.execute(f"SELECT {_FILE_COLUMNS} FROM note_files WHERE folder_id = ?", (folder_id,))
    return {stored.relative_path: stored for stored in map(_file, rows)}


@dataclass(frozen=True)
class KindTotals:
    """The indexed files of one kind: how many, their documents (a ``.jsonl`` line each), PDF pages, chunks."""

    files: int = 0
    documents: int = 0
    pages: int = 0
    chunks: int = 0


def kind_totals(conn: apsw.Connection, folder_id: int | None = None) -> dict[str, KindTotals]:
    """Per kind, the indexed files (of one folder, or all)."""
    where = " AND f.folder_id = ?" if folder_id is not None else ""
    rows = conn.execute(
        "SELECT f.kind, count(*), sum(f.documents), coalesce(sum(f.pages), 0), "
        "sum((SELECT count(*) FROM note_chunks c WHERE c.file_id = f.id)) "
        f"FROM note_files f WHERE f.state = 'indexed'{where} GROUP BY f.kind ORDER BY f.kind",
        (folder_id,) if folder_id is not None else ())
    return {kind: KindTotals(files, documents, pages, chunks) for kind, files, documents, pages, chunks in rows}


def skipped_files(conn: apsw.Connection, folder_id: int | None = None) -> list[StoredFile]:
    where = " AND folder_id = ?" if folder_id is not None else ""
    rows = conn.execute(f"SELECT {_FILE_COLUMNS} FROM note_files WHERE state = 'skipped'{where} "
                        "ORDER BY folder_id, relative_path", (folder_id,) if folder_id is not None else ())
    return [_file(row) for row in rows]


def files_with_problems(conn: apsw.Connection, folder_id: int | None = None) -> list[StoredFile]:
    """Indexed files of which something was left out while they were read."""
    where = " AND folder_id = ?" if folder_id is not None else ""
    rows = conn.execute(f"SELECT {_FILE_COLUMNS} FROM note_files WHERE problems IS NOT NULL{where} "
                        "ORDER BY folder_id, relative_path", (folder_id,) if folder_id is not None else ())
    return [_file(row) for row in rows]


def _upsert_file(conn: apsw.Connection, folder_id: int, values: FileValues, state: str,
                 skip_reason: str | None) -> int:
    conn.execute(
        "INSERT INTO note_files(folder_id, relative_path, size, mtime_ns, content_hash, kind, documents, pages, "
        "state, skip_reason, problems) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(folder_id, relative_path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
        "content_hash = excluded.content_hash, kind = excluded.kind, documents = excluded.documents, "
        "pages = excluded.pages, state = excluded.state, skip_reason = excluded.skip_reason, "
        "problems = excluded.problems, indexed_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')",
        (folder_id, to_db(values.relative_path), values.size, values.mtime_ns, values.content_hash, values.kind,
         values.documents, values.pages, state, skip_reason,
         json.dumps(list(values.problems), ensure_ascii=False) if values.problems else None))
    return conn.execute("SELECT id FROM note_files WHERE folder_id = ? AND relative_path = ?",
                        (folder_id, to_db(values.relative_path))).fetchone()[0]


def save_indexed_file(conn: apsw.Connection, folder_id: int, values: FileValues, chunks: Sequence[NoteChunk],
                      embedder: TextEmbedder, vectors: np.ndarray) -> int:
    """A file with its chunks, keyword rows and vectors in place of what its path held, in one transaction."""
    with atomic(conn):
        table = ensure_note_table(conn, embedder)
        file_id = _upsert_file(conn, folder_id, values, "indexed", None)
        _delete_chunks(conn, [file_id])
        ids = []
        for chunk in chunks:
            conn.execute(
                "INSERT INTO note_chunks(file_id, part, ordinal, title, heading_path, page, context, text, "
                "start_offset, end_offset, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (file_id, chunk.part, chunk.ordinal, chunk.title, json.dumps(list(chunk.heading_path), ensure_ascii=False),
                 chunk.page, chunk.context, chunk.text, chunk.start, chunk.end, chunk.tokens))
            chunk_id = conn.last_insert_rowid()
            conn.execute("INSERT INTO note_chunks_fts(rowid, context, text) VALUES (?, ?, ?)",
                         (chunk_id, chunk.context, chunk.text))
            ids.append(chunk_id)
        if ids:
            insert_vectors(conn, table, ids, vectors, model_key=embedder.model_key,
                           metadata={"folder_id": [folder_id] * len(ids), "file_id": [file_id] * len(ids)})
    return file_id


def save_skipped_file(conn: apsw.Connection, folder_id: int, values: FileValues, reason: str) -> int:
    """A file that is not indexed, with the reason; whatever an earlier version of it had indexed goes."""
    with atomic(conn):
        file_id = _upsert_file(conn, folder_id, values, "skipped", reason)
        _delete_chunks(conn, [file_id])
    return file_id


def save_unread_files(conn: apsw.Connection, folder_id: int, files: Sequence[tuple[FileValues, str]]) -> None:
    """Files refused before they were read (a type no loader reads, too large), with their reasons, in one
    transaction: a notes folder may hold thousands of pictures."""
    with atomic(conn):
        for values, reason in files:
            save_skipped_file(conn, folder_id, values, reason)


def touch_file(conn: apsw.Connection, file_id: int, size: int, mtime_ns: int) -> None:
    """The same content with a new modification time (copied back, synced): only the stat moves."""
    with atomic(conn):
        conn.execute("UPDATE note_files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id))


def move_file(conn: apsw.Connection, file_id: int, relative_path: str, size: int, mtime_ns: int, *,
              replacing: int | None = None) -> None:
    """A renamed or moved file (same content): its row, chunks and vectors stay, only the path changes. Moved
    over another file (``replacing``, the row at the new path), that one's row goes in the same transaction."""
    with atomic(conn):
        if replacing is not None:
            delete_files(conn, [replacing])
        conn.execute("UPDATE note_files SET relative_path = ?, size = ?, mtime_ns = ? WHERE id = ?",
                     (to_db(relative_path), size, mtime_ns, file_id))


def delete_files(conn: apsw.Connection, file_ids: Sequence[int]) -> None:
    """Files gone from their folder: their rows, chunks, keyword rows and every model's vectors."""
    if not file_ids:
        return
    with atomic(conn):
        _delete_chunks(conn, file_ids)
        for batch in _batches(file_ids):
            conn.execute(f"DELETE FROM note_files WHERE id IN ({_placeholders(batch)})", batch)


def _delete_chunks(conn: apsw.Connection, file_ids: Sequence[int]) -> None:
    chunk_ids = [row[0] for batch in _batches(file_ids) for row in conn.execute(
        f"SELECT id FROM note_chunks WHERE file_id IN ({_placeholders(batch)})", batch)]
    if not chunk_ids:
        return
    for table in list_vector_tables(conn):
        if table.kind == NOTE_KIND:  # every model's vectors, not only the current embedder's
            delete_vectors(conn, table, chunk_ids)
    for batch in _batches(chunk_ids):
        # External-content FTS rows are removed by repeating the indexed values with the 'delete' command.
        conn.execute("INSERT INTO note_chunks_fts(note_chunks_fts, rowid, context, text) "
                     f"SELECT 'delete', id, context, text FROM note_chunks WHERE id IN ({_placeholders(batch)})", batch)
        conn.execute(f"DELETE FROM note_chunks WHERE id IN ({_placeholders(batch)})", batch)


# --- chunks ------------------------------------------------------------------------------------
_CHUNK_COLUMNS = ("c.id, f.folder_id, c.file_id, d.path, f.relative_path, f.kind, c.part, c.ordinal, c.title, "
                  "c.heading_path, c.page, c.context, c.text, c.start_offset, c.end_offset")
_CHUNK_JOIN = "note_chunks c JOIN note_files f ON f.id = c.file_id JOIN notes_folders d ON d.id = f.folder_id"


def _chunk(row) -> StoredNoteChunk:
    (chunk_id, folder_id, file_id, folder, relative, kind, part, ordinal, title, headings, page, context, text,
     start, end) = row
    relative = from_db(relative)
    return StoredNoteChunk(chunk_id, folder_id, file_id, Path(from_db(folder)) / relative, relative, kind, part,
                           ordinal, title, tuple(json.loads(headings)), page, context, text, start, end)


def chunks_by_id(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, StoredNoteChunk]:
    found: dict[int, StoredNoteChunk] = {}
    for batch in _batches([int(i) for i in ids]):
        rows = conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM {_CHUNK_JOIN} WHERE c.id IN ({_placeholders(batch)})",
                            batch)
        found.update((chunk.id, chunk) for chunk in map(_chunk, rows))
    return found


def chunks_of_file(conn: apsw.Connection, file_id: int) -> list[StoredNoteChunk]:
    rows = conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM {_CHUNK_JOIN} WHERE c.file_id = ? ORDER BY c.ordinal",
                        (file_id,))
    return [_chunk(row) for row in rows]


def chunks_matching(conn: apsw.Connection, fts_query: str, folder_ids: Sequence[int] | None, limit: int) -> list[int]:
    """Chunks (of ``folder_ids``, or all) matching the FTS5 query, best BM25 first: for keyword fusion."""
    folder_filter = f" AND f.folder_id IN ({_placeholders(folder_ids)})" if folder_ids else ""
    rows = conn.execute(
        "SELECT s.rowid FROM note_chunks_fts s JOIN note_chunks c ON c.id = s.rowid JOIN note_files f ON "
        f"f.id = c.file_id WHERE note_chunks_fts MATCH ?{folder_filter} ORDER BY bm25(note_chunks_fts) LIMIT ?",
        (fts_query, *(folder_ids or ()), limit))
    return [row[0] for row in rows]


# --- the chunks' vectors -----------------------------------------------------------------------
def ensure_note_table(conn: apsw.Connection, embedder: TextEmbedder) -> VectorTable:
    """The embedder's vector table, created on first use; refused (``VectorModelMismatch``) if it disagrees."""
    return ensure_vector_table(conn, NOTE_KIND, embedder.model_key, embedder.dims, metadata=NOTE_METADATA)


def _existing_note_table(conn: apsw.Connection, embedder: TextEmbedder) -> VectorTable | None:
    return existing_vector_table(conn, NOTE_KIND, embedder.model_key, embedder.dims, metadata=NOTE_METADATA)


_TO_EMBED = "SELECT c.id, f.folder_id, c.file_id, c.context, c.text FROM note_chunks c JOIN note_files f ON f.id = c.file_id"


def chunks_without_vectors(conn: apsw.Connection, embedder: TextEmbedder,
                           folder_id: int | None = None) -> list[ChunkToEmbed]:
    """The chunks (of ``folder_id``, or all) the embedder has not embedded yet (after a switch), oldest first."""
    table = _existing_note_table(conn, embedder)
    conditions = ([f"c.id NOT IN (SELECT rowid FROM {table.name})"] if table is not None else []) + (
        ["f.folder_id = ?"] if folder_id is not None else [])
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    rows = conn.execute(f"{_TO_EMBED}{where} ORDER BY c.id", (folder_id,) if folder_id is not None else ())
    return [ChunkToEmbed(*row) for row in rows]


def missing_chunk_vectors(conn: apsw.Connection, embedder: TextEmbedder) -> int:
    """How many note chunks the embedder has not embedded yet."""
    table = _existing_note_table(conn, embedder)
    missing = f" WHERE id NOT IN (SELECT rowid FROM {table.name})" if table is not None else ""
    return conn.execute(f"SELECT count(*) FROM note_chunks{missing}").fetchone()[0]


def store_chunk_vectors(conn: apsw.Connection, embedder: TextEmbedder, chunks: Sequence[ChunkToEmbed],
                        vectors: np.ndarray) -> int:
    """``vectors[i]`` as the embedder's vector of ``chunks[i]``, committed together; only chunks still as they
    were get theirs (a rescan may have replaced a file meanwhile). Returns how many were stored."""
    with atomic(conn):
        ids = [chunk.id for chunk in chunks]
        current = {ChunkToEmbed(*row) for batch in _batches(ids)
                   for row in conn.execute(f"{_TO_EMBED} WHERE c.id IN ({_placeholders(batch)})", batch)}
        keep = [i for i, chunk in enumerate(chunks) if chunk in current]
        if keep:
            insert_vectors(conn, ensure_note_table(conn, embedder), [chunks[i].id for i in keep], vectors[keep],
                           model_key=embedder.model_key,
                           metadata={"folder_id": [chunks[i].folder_id for i in keep],
                                     "file_id": [chunks[i].file_id for i in keep]})
    return len(keep)


def chunk_similarities(conn: apsw.Connection, embedder: TextEmbedder, query: np.ndarray,
                       folder_ids: Sequence[int] | None) -> ChunkScores | None:
    """Every embedded chunk of ``folder_ids`` (None: all) scored against the query; None if there is none."""
    table = _existing_note_table(conn, embedder)
    if table is None:
        return None
    where = {"folder_id": ("in", [int(f) for f in folder_ids])} if folder_ids is not None else None
    chunk_ids, scores, _metadata = similarities(conn, table, query, model_key=embedder.model_key, where=where)
    if len(chunk_ids) == 0:
        return None
    return ChunkScores(np.asarray(chunk_ids, np.int64), scores[:, 0])
