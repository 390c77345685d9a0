"""bench/quantised_search.py: the int8 and sign-bit first passes bench/knn.py measures against the exact path."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gallery_app.core.store.fastsearch import PackedIndex
from gallery_app.core.store.vectors import VectorTable

BENCH = Path(__file__).resolve().parents[2] / "bench"
_spec = importlib.util.spec_from_file_location("quantised_search", BENCH / "quantised_search.py")
quantised_search = sys.modules["quantised_search"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quantised_search)

MODEL = "test-model-a"


def rows(n: int, dims: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)


def packed(data: np.ndarray) -> PackedIndex:
    return PackedIndex(VectorTable("vec_t", "t", MODEL, data.shape[1]), np.arange(1, len(data) + 1), data, {})


def true_ids(data: np.ndarray, query: np.ndarray, k: int) -> set[int]:
    cosine = (data @ query) / np.linalg.norm(data, axis=1)
    return set((np.argsort(-cosine, kind="stable")[:k] + 1).tolist())


@pytest.mark.parametrize("method", ["int8", "binary"])
def test_quantised_paths_keep_recall_with_calibrated_shortlists(method):
    data = rows(6000, 64, seed=1)
    index = quantised_search.QuantisedIndex(packed(data))
    assert index.calibrate().recall[method] >= 0.99
    recalls = [len(true_ids(data, query, 10) & set(index.search(query, 10, method)[0].tolist())) / 10
               for query in rows(20, 64, seed=200)]
    assert np.mean(recalls) >= 0.99
    assert index.memory_bytes()[method] < index.index.memory_bytes() / 3


def test_int8_with_default_shortlist_keeps_recall_on_random_data():
    data = rows(6000, 64, seed=2)
    index = quantised_search.QuantisedIndex(packed(data))
    hits = [len(true_ids(data, q, 10) & set(index.search(q, 10, "int8")[0].tolist())) for q in rows(20, 64, seed=3)]
    assert np.mean(hits) / 10 >= 0.99


def test_rescored_distances_are_the_exact_ones():
    data = rows(3000, 32, seed=4)
    query = rows(1, 32, seed=5)[0]
    index = quantised_search.QuantisedIndex(packed(data))
    exact_ids, exact_distances = index.index.search(query, 10)
    ids, distances = index.search(query, 10, "int8", shortlist=3000)
    assert ids.tolist() == exact_ids.tolist()
    np.testing.assert_allclose(distances, exact_distances)


def test_knn_bench_runs_and_marks_the_exact_path_as_auto(tmp_path):
    # This checkout's gallery_app, not whichever one the interpreter has installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(BENCH / "knn.py"), "--sizes", "2000", "--dims", "32",
                           "--data", "random", "--queries", "5"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "* packed f32" in done.stdout and "int8+rescore" in done.stdout and "binary+rescore" in done.stdout
