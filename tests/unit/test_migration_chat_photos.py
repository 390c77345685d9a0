"""A library written before chat photos (migration 005) opens with every photo and vector kept."""

from __future__ import annotations

import numpy as np

from gallery_app.core import store
from gallery_app.core.photos.filters import PhotoFilter
from gallery_app.core.photos.library import list_photos
from gallery_app.core.store.migrations import MIGRATIONS, migrate
from gallery_app.core.store.vector_search import search
from gallery_app.core.store.vectors import ensure_vector_table, insert_vectors, list_vector_tables


def test_photos_and_their_vectors_survive_the_move_to_chat_photos(tmp_path):
    path = tmp_path / "old.db"
    conn = store.connect(path)
    migrate(conn, MIGRATIONS[:5])  # the schema as the previous version wrote it
    conn.execute("INSERT INTO photos(path, source, content_hash, file_size, mtime_ns, width, height, captured_at) "
                 "VALUES ('/p/a.jpg', 'folder', 'h1', 10, 1716040920000000000, 4, 3, '2023-06-01T14:03:00'), "
                 "('/p/b.jpg', 'upload', 'h2', 10, 1716040920000000000, 4, 3, NULL)")
    old = ensure_vector_table(conn, "photos", "clip-test", 4, metadata={"source": "text"})
    insert_vectors(conn, old, [1, 2], np.eye(4, dtype=np.float32)[:2], model_key="clip-test",
                   metadata={"source": ["folder", "upload"]})
    conn.close()

    conn = store.open_store(path)
    a, b = sorted(list_photos(conn), key=lambda p: p.id)
    assert a.taken_at == "2023-06-01T14:03:00"
    assert b.taken_at[:4] == "2024"  # no capture time: the file's (18 May 2024, local time)
    (table,) = [t for t in list_vector_tables(conn) if t.kind == "photos"]
    assert dict(table.metadata) == {"source": "text", "taken_day": "integer"}
    hits = search(conn, table, np.array([1, 0, 0, 0], np.float32), model_key="clip-test", k=5,
                  where={"taken_day": [(">=", 20230601), ("<=", 20230630)]})
    assert [h.rowid for h in hits] == [1] and hits[0].similarity > 0.999
    assert [h.rowid for h in search(conn, table, np.array([0, 1, 0, 0], np.float32), model_key="clip-test", k=5,
                                    where={"source": "upload"}, method="vec0")] == [2]
    assert list_photos(conn, where=PhotoFilter(chat_id=1)) == []
    conn.execute("INSERT INTO photos(path, source, content_hash, file_size, mtime_ns, width, height, taken_at) "
                 "VALUES ('/c/x.jpg', 'chat', 'h3', 1, 1, 1, 1, '2024-01-01T00:00:00')")  # 'chat' is a source now


def test_a_file_time_sqlite_cannot_write_still_migrates(tmp_path):
    path = tmp_path / "old.db"
    conn = store.connect(path)
    migrate(conn, MIGRATIONS[:5])
    conn.execute("INSERT INTO photos(path, source, content_hash, file_size, mtime_ns, width, height, added_at) "
                 "VALUES ('/p/far.jpg', 'folder', 'h', 1, 300000000000000000000, 1, 1, '2024-05-18T10:00:00Z')")
    conn.close()
    conn = store.open_store(path)
    (photo,) = list_photos(conn)
    assert photo.taken_at == "2024-05-18T10:00:00"  # past year 9999: when it was added
