"""KNN latency of the store's sqlite-vec tables, next to an exact NumPy baseline.

What it measures
    For each (n vectors, dims) configuration it builds a real, file-backed ``vec0`` table
    through the store's own API (``open_store`` → ``ensure_vector_table`` →
    ``insert_vectors`` in batches of 10k, one transaction each) and times ``knn()`` for
    random unit-length queries. That is the app's whole search path: argument checks,
    the SQL round trip through apsw, sqlite-vec's brute-force scan and building the
    ``Neighbor`` results. The baseline is what the app would do without a database: a
    float32 matrix-vector product over the same L2-normalised vectors, ``np.argpartition``
    for the top k, and a sort of those k.

    Both methods answer the same queries, and their top-k row ids are compared
    (recall@k of sqlite-vec against the exact NumPy answer; anything below 1.0 is a bug
    and makes the script exit with status 1), so the benchmark doubles as a
    correctness check.

Why ratios, not absolute times
    These machines are shared, noisy and have 2 cores, so absolute milliseconds drift from
    run to run and machine to machine. The two methods are therefore interleaved per
    query (alternating which goes first), so both see the same background load, and the
    headline number is the ratio of their medians: "how many times slower than a plain
    NumPy scan" stays comparable where "how many ms" does not. p95 is printed to show
    the tail, not to compare across runs.

Run: ``python bench/store_knn.py`` (about a minute on 2 cores) or ``--quick`` (seconds).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import apsw
import numpy as np

try:
    import gallery_app  # noqa: F401
except ImportError:
    # `python bench/store_knn.py` puts bench/ on sys.path, not the project root.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gallery_app.core.store import (
    MAX_K,
    VectorTable,
    connect,
    ensure_vector_table,
    insert_vectors,
    knn,
    open_store,
    sqlite_versions,
)

SEED = 20_240_601
BATCH = 10_000
MODEL_KEY_PREFIX = "bench-random"
DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_DIMS = (384, 512)
DEFAULT_QUERIES = 500
WARMUP_QUERIES = 20

T = TypeVar("T")


@dataclass(frozen=True)
class Result:
    n: int
    dims: int
    build_s: float
    vec0_ms: np.ndarray
    numpy_ms: np.ndarray
    recall: float


def unit_vectors(rng: np.random.Generator, count: int, dims: int) -> np.ndarray:
    """Gaussian rows scaled to length 1: uniformly spread directions, like normalised embeddings."""
    vectors = rng.standard_normal((count, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def build_table(conn: apsw.Connection, data: np.ndarray, model_key: str) -> tuple[VectorTable, float]:
    """Create the vec0 table and fill it in BATCH-sized transactions; returns the table and seconds taken."""
    start = time.perf_counter()
    table = ensure_vector_table(conn, "bench", model_key, data.shape[1])
    for first in range(0, len(data), BATCH):
        batch = data[first:first + BATCH]
        # Row ids are array index + 1, so NumPy positions map back to rowids trivially.
        insert_vectors(conn, table, range(first + 1, first + 1 + len(batch)), batch, model_key=model_key)
    # Fold the WAL into the main file so queries read the database as a reopened app would.
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return table, time.perf_counter() - start


def numpy_top_k(data: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Exact top-k row ids by cosine similarity (= dot product for unit vectors), best first."""
    scores = data @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])] + 1


def vec0_top_k(conn: apsw.Connection, table: VectorTable, query: np.ndarray, k: int) -> list[int]:
    return [neighbor.rowid for neighbor in knn(conn, table, query, model_key=table.model_key, k=k)]


def time_ms(fn: Callable[..., T], *args: object) -> tuple[float, T]:
    start = time.perf_counter_ns()
    out = fn(*args)
    return (time.perf_counter_ns() - start) / 1e6, out


def measure(conn: apsw.Connection, table: VectorTable, data: np.ndarray, queries: np.ndarray,
            k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Time both methods on every query, interleaved; returns vec0 ms, NumPy ms and mean recall@k."""
    vec0_ms, numpy_ms, recalls = [], [], []
    for i, query in enumerate(queries):
        # Alternate which method goes first so neither always gets the warmer cache.
        if i % 2 == 0:
            t_vec0, vec0_ids = time_ms(vec0_top_k, conn, table, query, k)
            t_numpy, numpy_ids = time_ms(numpy_top_k, data, query, k)
        else:
            t_numpy, numpy_ids = time_ms(numpy_top_k, data, query, k)
            t_vec0, vec0_ids = time_ms(vec0_top_k, conn, table, query, k)
        vec0_ms.append(t_vec0)
        numpy_ms.append(t_numpy)
        recalls.append(len(set(vec0_ids) & set(numpy_ids.tolist())) / k)
    return np.array(vec0_ms), np.array(numpy_ms), float(np.mean(recalls))


def run_config(n: int, dims: int, n_queries: int, k: int) -> Result:
    # Seeded per configuration, so --quick sees exactly the data of the full run's 10k x 384 row.
    rng = np.random.default_rng([SEED, n, dims])
    data = unit_vectors(rng, n, dims)
    queries = unit_vectors(rng, WARMUP_QUERIES + n_queries, dims)
    with tempfile.TemporaryDirectory(prefix="store_knn_") as tmp:
        conn = open_store(Path(tmp) / "bench.sqlite")
        try:
            table, build_s = build_table(conn, data, f"{MODEL_KEY_PREFIX}-{dims}")
            # Warm-up: page cache, apsw's statement cache, BLAS threads; results are discarded.
            measure(conn, table, data, queries[:WARMUP_QUERIES], k)
            vec0_ms, numpy_ms, recall = measure(conn, table, data, queries[WARMUP_QUERIES:], k)
        finally:
            conn.close()
    return Result(n, dims, build_s, vec0_ms, numpy_ms, recall)


COLUMNS = (("n", 8), ("dims", 5), ("build s", 8), ("vec0 p50 ms", 12), ("vec0 p95 ms", 12),
           ("numpy p50 ms", 13), ("numpy p95 ms", 13), ("ratio p50", 10), ("recall@10", 10))


def format_row(values: Sequence[str]) -> str:
    return "  ".join(value.rjust(width) for value, (_, width) in zip(values, COLUMNS))


def result_row(r: Result) -> str:
    vec0_p50, vec0_p95 = np.percentile(r.vec0_ms, [50, 95])
    numpy_p50, numpy_p95 = np.percentile(r.numpy_ms, [50, 95])
    return format_row([
        f"{r.n:,}", str(r.dims), f"{r.build_s:.2f}", f"{vec0_p50:.3f}", f"{vec0_p95:.3f}",
        f"{numpy_p50:.3f}", f"{numpy_p95:.3f}", f"{vec0_p50 / numpy_p50:.1f}x", f"{r.recall:.4f}",
    ])


def environment_line() -> str:
    conn = connect(":memory:")
    try:
        versions = sqlite_versions(conn)
    finally:
        conn.close()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"numpy {np.__version__} | sqlite {versions['sqlite']} | sqlite-vec {versions['sqlite_vec']} | "
            f"apsw {versions['apsw']} | python {platform.python_version()} | "
            f"cpus {os.cpu_count()} (usable {affinity})")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="vector counts")
    parser.add_argument("--dims", type=int, nargs="+", default=list(DEFAULT_DIMS), help="dimensions")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES,
                        help=f"timed queries per configuration, after {WARMUP_QUERIES} warm-up ones")
    parser.add_argument("--k", type=int, default=10, help="neighbours per query")
    parser.add_argument("--quick", action="store_true", help="smoke run: only 10k vectors x 384 dims")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.dims = [10_000], [384]
    if args.queries < 1 or min(args.sizes) < 1 or min(args.dims) < 1:
        parser.error("--queries, --sizes and --dims must be positive")
    if not 1 <= args.k <= min(min(args.sizes), MAX_K):
        parser.error(f"--k must be between 1 and min(smallest size, {MAX_K})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(environment_line())
    print(f"{args.queries} timed + {WARMUP_QUERIES} warm-up queries per row, k={args.k}, "
          f"methods interleaved per query, seed {SEED}")
    header = format_row([name if name != "recall@10" else f"recall@{args.k}" for name, _ in COLUMNS])
    print(header)
    print("-" * len(header))
    worst_recall = 1.0
    for n in args.sizes:
        for dims in args.dims:
            result = run_config(n, dims, args.queries, args.k)
            worst_recall = min(worst_recall, result.recall)
            print(result_row(result), flush=True)
    if worst_recall < 1.0:
        print(f"MISMATCH: sqlite-vec disagreed with exact NumPy search (worst recall {worst_recall:.4f}).",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
