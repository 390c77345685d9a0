"""Fast vector search: packed in-memory copies of the vec0 tables, searched with NumPy.

loading.py  reads a vec0 table (rowids, float32 vectors, metadata, change counter) in one snapshot
quantize.py int8 and binary copies and their first-pass scores
packed.py   PackedIndex: exact / int8 / binary search, filters, calibration of the automatic choice
cache.py    one index per (database file, table) per process: fresh, thread-safe, released
"""

from gallery_app.core.store.fastsearch.packed import METHODS, Calibration, PackedIndex

__all__ = ["METHODS", "Calibration", "PackedIndex"]
