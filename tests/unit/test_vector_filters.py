"""Filters on a vector search: a set of row ids, a range on one column, a set of values; same rows both ways."""

import numpy as np, pytest
from gallery_app.core import store
from gallery_app.core.store import ensure_vector_table, insert_vectors
from gallery_app.core.store.vector_search import search
def test_rowid_sets_ranges_and_value_sets_filter_the_packed_copy_as_sqlite_vec_does(tmp_path):
    conn = store.open_store(tmp_path/"x.db")
    t = ensure_vector_table(conn, "things", "m", 2, metadata={"day": "integer", "tag": "text"})
    rng = np.random.default_rng(1)
    v = rng.normal(size=(50,2)).astype(np.float32)
    insert_vectors(conn, t, list(range(1,51)), v, model_key="m", metadata={"day": list(range(20240501,20240551)), "tag": ["ab" if i%2 else "abc" for i in range(50)]})
    q = np.array([1,0],np.float32)
    for where in [{"rowid": ("in", [3,4,5,40])}, {"day": [(">=", 20240510), ("<=", 20240520)]},
                  {"rowid": ("in", range(10,30)), "day": [(">=", 20240515)], "tag": ("in", ["ab"])}, {"rowid": ("in", [])}]:
        a = [n.rowid for n in search(conn, t, q, model_key="m", k=50, where=where, method="exact")]
        b = [n.rowid for n in search(conn, t, q, model_key="m", k=50, where=where, method="vec0")]
        assert a == b, where
