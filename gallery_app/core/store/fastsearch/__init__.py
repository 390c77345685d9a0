"""Fast vector search: packed in-memory copies of the vec0 tables, searched with NumPy.

loading.py  reads a vec0 table (rowids, float32 vectors, metadata, change counter) in one snapshot
packed.py   PackedIndex: exact search, filters, immutable updates for writes
cache.py    one index per (database file, table) per process: fresh, thread-safe, released
"""

from gallery_app.core.store.fastsearch.packed import PackedIndex

__all__ = ["PackedIndex"]
