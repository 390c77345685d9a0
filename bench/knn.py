"""Top-10 search latency and recall: sqlite-vec ``vec0`` against the packed in-memory search paths.

What it measures
    For each (data, n vectors, dims) it builds a real, file-backed ``vec0`` table through the store's
    API, loads it into a ``PackedIndex`` the way the app does (``fastsearch.loading.read_table``),
    makes its quantised copies and calibrates their shortlists (``bench/quantised_search.py``), then
    answers the same queries with every method:

    vec0            the store of record: ``vectors.knn`` (sqlite-vec 0.1.x, brute force, no SIMD)
    numpy f32       the plain baseline: unit rows @ query, argpartition, sort of the k
    packed f32      ``PackedIndex`` exact (cached row norms, so raw rows need no normalising): the app's path
    int8+rescore    int8 codes (one scale per row) rank a shortlist, re-scored exactly in float32
    binary+rescore  sign bits + Hamming distance rank a shortlist, re-scored exactly in float32

    Recall@10 is against the exact float32 answer. Shortlists are the ones calibrated (on stored
    rows used as queries) for recall ≥ 0.995 — random data needs far longer binary shortlists
    than real embeddings. "memory MB" is what the method scans: the vec0 database file, the
    float32 matrix, or the quantised codes (int8/binary also keep the float32 matrix resident for
    re-scoring). "*" marks what ``vector_search.search(method="auto")`` searches: packed f32.

Data
    random      Gaussian rows scaled to length 1, random unit queries (no cluster structure: the
                hardest case for quantised first passes).
    real-like   the demo chats' messages embedded by the installed text embedder (the offline e5-small
                or MiniLM package model), repeated with Gaussian noise (norm ≈ 0.5) and renormalised to
                reach n; queries are the demo questions embedded as queries, with a little noise.
                For 512 dims the 384-d vectors are mapped by a fixed orthonormal 384 → 512 embedding
                (dot products unchanged) before the noise is added.

Timing
    Methods are interleaved per query (rotating which goes first) so they share the machine's
    background load; compare ratios within a row group, not milliseconds across runs. At 1M rows
    vec0 takes about a second per query, so it answers only every 10th query (say 10 instead of 100).

Run: ``python bench/knn.py`` (about 10 minutes, ~8 GB RAM at 1M × 512) or ``--quick`` (100k × 512
only, under a minute); ``--sizes``/``--dims``/``--data`` pick a subset.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import gallery_app  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gallery_app.core.store import VectorTable, ensure_vector_table, insert_vectors, knn, open_store
from gallery_app.core.store.fastsearch import PackedIndex
from gallery_app.core.store.fastsearch.loading import read_table
from quantised_search import QuantisedIndex  # bench/ is on sys.path: this script's own folder

SEED = 20_240_611
K = 10
BATCH = 10_000
WARMUP = 5
REAL_NOISE = 0.5      # norm of the noise added to each repeated real vector
QUERY_NOISE = 0.2     # norm of the noise added to each repeated real query
ROOT = Path(__file__).resolve().parent.parent
METHODS = ("vec0", "numpy f32", "packed f32", "int8+rescore", "binary+rescore")
QUANTISED_METHOD = {"int8+rescore": "int8", "binary+rescore": "binary"}
AUTO = "packed f32"


@dataclass
class Row:
    data: str
    n: int
    dims: int
    method: str
    ms: np.ndarray
    recall: float
    memory: int
    shortlist: int | None
    chosen: bool = False


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


_REAL: tuple[np.ndarray, np.ndarray, str] | None = None


def real_vectors() -> tuple[np.ndarray, np.ndarray, str]:
    """(message vectors, question vectors, model key) from the demo data and the installed embedder."""
    global _REAL
    if _REAL is None:
        import json

        from gallery_app.core.chat.whatsapp import parse_chat_text
        from gallery_app.core.models.loading import open_text_embedder

        texts = []
        for path in sorted((ROOT / "resources/demo/chats").glob("*/*.txt")):
            chat = parse_chat_text(path.read_text(encoding="utf-8"))
            texts += [m.text for m in chat.messages if m.text.strip()]
        questions = []
        for name in ("questions.jsonl", "questions_multilingual.jsonl"):
            for line in (ROOT / "resources/demo" / name).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    questions.append(json.loads(line)["question"])
        embedder = open_text_embedder()
        passages = np.asarray(embedder.embed_passages(texts), np.float32)
        queries = np.stack([np.asarray(embedder.embed_query(q), np.float32) for q in questions])
        _REAL = (passages, queries, embedder.model_key)
    return _REAL


def widen(vectors: np.ndarray, dims: int) -> np.ndarray:
    """A fixed isometric map to ``dims`` dimensions (orthonormal columns), or the rows unchanged."""
    if vectors.shape[1] == dims:
        return vectors
    basis, _ = np.linalg.qr(np.random.default_rng(SEED).standard_normal((dims, vectors.shape[1])))
    return (vectors @ basis.T.astype(np.float32)).astype(np.float32)


def make_data(kind: str, n: int, dims: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([SEED, n, dims, kind == "real-like"])
    if kind == "random":
        return (unit(rng.standard_normal((n, dims), dtype=np.float32)),
                unit(rng.standard_normal((n_queries, dims), dtype=np.float32)))
    passages, questions, _ = real_vectors()
    base, asked = widen(passages, dims), widen(questions, dims)
    data = np.empty((n, dims), np.float32)
    for start in range(0, n, 100_000):  # in blocks: 1M × 512 temporaries would double the peak memory
        stop = min(n, start + 100_000)
        noise = rng.standard_normal((stop - start, dims), dtype=np.float32) * (REAL_NOISE / np.sqrt(dims))
        data[start:stop] = unit(base[rng.integers(len(base), size=stop - start)] + noise)
    picks = asked[np.arange(n_queries) % len(asked)]
    queries = unit(picks + rng.standard_normal(picks.shape, dtype=np.float32) * (QUERY_NOISE / np.sqrt(dims)))
    return data, queries


def build_vec0(conn, data: np.ndarray, model_key: str) -> VectorTable:
    table = ensure_vector_table(conn, "bench", model_key, data.shape[1])
    for first in range(0, len(data), BATCH):
        batch = data[first:first + BATCH]
        insert_vectors(conn, table, range(first + 1, first + 1 + len(batch)), batch, model_key=model_key)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return table


def exact_ids(data: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = data @ query
    top = np.argpartition(-scores, K - 1)[:K]
    return top[np.argsort(-scores[top])] + 1


def resident_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run(kind: str, n: int, dims: int, n_queries: int, vec0_every: int) -> tuple[list[Row], str]:
    data, queries = make_data(kind, n, dims, WARMUP + n_queries)
    with tempfile.TemporaryDirectory(prefix="knn_bench_") as tmp:
        path = Path(tmp) / "bench.sqlite"
        conn = open_store(path)
        try:
            start = time.perf_counter()
            table = build_vec0(conn, data, f"bench-{kind}-{dims}")
            build_s = time.perf_counter() - start
            start = time.perf_counter()
            index = PackedIndex.from_rows(table, read_table(conn, table))
            load_s = time.perf_counter() - start
            start = time.perf_counter()
            quantised = QuantisedIndex(index)
            quantised.calibrate()
            calibrate_s = time.perf_counter() - start
            runners: dict[str, Callable[[np.ndarray], Sequence[int]]] = {
                "vec0": lambda q: [h.rowid for h in knn(conn, table, q, model_key=table.model_key, k=K)],
                "numpy f32": lambda q: exact_ids(data, q),
                "packed f32": lambda q: index.search(q, K)[0],
            }
            for name, method in QUANTISED_METHOD.items():
                runners[name] = lambda q, method=method: quantised.search(q, K, method)[0]
            times: dict[str, list[float]] = {m: [] for m in METHODS}
            recalls: dict[str, list[float]] = {m: [] for m in METHODS}
            for i, query in enumerate(queries):
                truth = set(exact_ids(data, query).tolist())
                order = METHODS[i % len(METHODS):] + METHODS[:i % len(METHODS)]
                for method in order:
                    if method == "vec0" and i % vec0_every:
                        continue
                    t0 = time.perf_counter_ns()
                    ids = runners[method](query)
                    elapsed = (time.perf_counter_ns() - t0) / 1e6
                    if i >= WARMUP:
                        times[method].append(elapsed)
                        recalls[method].append(len(truth & {int(x) for x in ids}) / K)
            memory = quantised.memory_bytes()
            sizes = {"vec0": path.stat().st_size, "numpy f32": data.nbytes, "packed f32": index.memory_bytes(),
                     "int8+rescore": memory["int8"], "binary+rescore": memory["binary"]}
            rows = []
            for method in METHODS:
                quantised_method = QUANTISED_METHOD.get(method)
                shortlist = quantised.shortlist_size(quantised_method, K) if quantised_method else None
                rows.append(Row(kind, n, dims, method, np.array(times[method]), float(np.mean(recalls[method])),
                                sizes[method], shortlist, method == AUTO))
            note = (f"  [{kind} {n:,} x {dims}: vec0 build {build_s:.1f} s, load into memory {load_s:.2f} s, "
                    f"quantise + calibrate {calibrate_s:.2f} s, vec0 on {len(times['vec0'])} of {n_queries} queries, "
                    f"process RSS {resident_mb():,.0f} MB]")
        finally:
            conn.close()
    return rows, note


HEADER = (f"{'data':>9}  {'n':>9}  {'dims':>4}  {'method':<16}  {'p50 ms':>8}  {'p95 ms':>8}  "
          f"{'recall@10':>9}  {'memory MB':>9}  {'vs vec0':>8}  {'shortlist':>9}")


def format_rows(rows: list[Row]) -> list[str]:
    vec0_p50 = float(np.median(next(r for r in rows if r.method == "vec0").ms))
    lines = []
    for r in rows:
        p50, p95 = np.percentile(r.ms, [50, 95])
        name = ("* " if r.chosen else "  ") + r.method
        lines.append(f"{r.data:>9}  {r.n:>9,}  {r.dims:>4}  {name:<16}  {p50:>8.2f}  {p95:>8.2f}  "
                     f"{r.recall:>9.4f}  {r.memory / 1e6:>9.1f}  {vec0_p50 / p50:>7.1f}x  "
                     f"{'' if r.shortlist is None else r.shortlist:>9}")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 512])
    parser.add_argument("--data", nargs="+", choices=("random", "real-like"), default=["random", "real-like"])
    parser.add_argument("--queries", type=int, default=200, help="timed queries per table (100 at 1M rows)")
    parser.add_argument("--quick", action="store_true", help="only 100k x 512, random and real-like, < 1 minute")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.dims, args.queries = [100_000], [512], 60
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"numpy {np.__version__} | cpus usable {affinity} | k={K} | methods interleaved per query | seed {SEED}")
    if "real-like" in args.data:
        print(f"real-like data from model {real_vectors()[2]} ({len(real_vectors()[0])} messages, "
              f"{len(real_vectors()[1])} questions)")
    print(HEADER)
    print("-" * len(HEADER))
    summary, worst_chosen_recall = [], 1.0
    for n in args.sizes:
        for dims in args.dims:
            for kind in args.data:
                big = n >= 1_000_000
                rows, note = run(kind, n, dims, min(args.queries, 100) if big else args.queries, 10 if big else 1)
                for line in format_rows(rows):
                    print(line)
                print(note, flush=True)
                chosen = next(r for r in rows if r.chosen)
                vec0 = next(r for r in rows if r.method == "vec0")
                worst_chosen_recall = min(worst_chosen_recall, chosen.recall)
                summary.append(f"{kind} {n // 1000}k x {dims}: {chosen.method} p50 {np.median(chosen.ms):.2f} ms, "
                               f"recall@10 {chosen.recall:.3f}, {np.median(vec0.ms) / np.median(chosen.ms):.1f}x "
                               "faster than sqlite-vec")
    print("chosen (auto): " + "; ".join(summary))
    return 0 if worst_chosen_recall >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
