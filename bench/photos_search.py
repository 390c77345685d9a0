"""Photo search latency at 1,000 and 100,000 photos, and bundled-vector import/export time.

For each size a fresh store gets that many photos through the bundled-vectors path (`import_bundle`:
one transaction of rows + vectors; the photo files are tiny stand-ins, since only their sizes are
checked), then:

* text search: ``PhotoSearch.by_text`` end to end (CLIP tokenizer + the random-weight ViT-B/32 text
  tower + vector search + photo rows), with the text tower's share printed separately;
* tap search: ``PhotoSearch.similar_to`` (stored vector → neighbours without itself → photo rows);
* export: ``export_bundle`` of the whole gallery.

Vectors are random unit vectors around a few hundred centres (photo libraries cluster), 512 dims.
Run: ``make random-clip && python bench/photos_search.py`` (``--sizes 1000`` for a quick look).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERIES = ["snowy mountains", "a cat asleep on a sofa", "birthday cake with candles", "the beach at sunset",
           "a red car", "my dog in the park", "people at a wedding", "a plate of pasta", "city at night",
           "a screenshot of a receipt"]


def clustered_vectors(n: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 300), dims)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, dims)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def write_bundle(folder: Path, bundle: Path, n: int, dims: int, space: str) -> None:
    from gallery_app.core.photos.bundle import FORMAT_VERSION

    folder.mkdir(parents=True)
    records = []
    for i in range(n):
        name = f"{i // 1000:03d}/IMG_{i:06d}.jpg"
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(b"x")
        records.append({"path": name, "content_hash": f"{i:064x}", "file_size": 1, "width": 4032, "height": 3024,
                        "format": "JPEG", "captured_at": None, "latitude": None, "longitude": None, "camera": None})
    header = {"format": FORMAT_VERSION, "model_space": space, "dims": dims, "count": n}
    np.savez(bundle, vectors=clustered_vectors(n, dims, n), header=np.array(json.dumps(header)),
             photos=np.array(json.dumps(records)))


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path, default=REPO / ".cache" / "random-clip")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--queries", type=int, default=30, help="timed queries per kind and size")
    args = parser.parse_args()
    if not (args.models / "clip-vit-b-32-text" / "text_model.onnx").is_file():
        print(f"No CLIP model in {args.models}; run: make random-clip", file=sys.stderr)
        return 2
    os.environ["GALLERY_APP_MODELS_DIR"] = str(args.models)
    from gallery_app.core.models.loading import open_clip_text, open_clip_vision
    from gallery_app.core.photos.bundle import export_bundle, import_bundle
    from gallery_app.core.photos.search import PhotoSearch
    from gallery_app.core.store import open_store

    vision, text = open_clip_vision(), open_clip_text()
    text.embed_text("warm up")
    print(f"python {platform.python_version()} | cpus {os.cpu_count()} | {args.queries} queries per row, k=48, "
          f"512 dims | model {args.models} (random weights: speed only)")
    print(f"{'photos':>8} {'import s':>9} {'export s':>9} {'text p50':>9} {'text p95':>9} {'of it model':>12} "
          f"{'tap p50':>8} {'tap p95':>8}   (ms unless noted)")
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-photo-search-") as tmp:
            tmp = Path(tmp)
            os.environ["GALLERY_APP_DATA_DIR"] = str(tmp / "data")
            write_bundle(tmp / "photos", tmp / "in.npz", n, vision.dims, vision.model_key)
            conn = open_store()
            started = time.perf_counter()
            result = import_bundle(conn, vision, tmp / "in.npz", tmp / "photos")
            imported = time.perf_counter() - started
            assert result.imported == n, result.describe()
            started = time.perf_counter()
            export_bundle(conn, vision, tmp / "photos", tmp / "out.npz")
            exported = time.perf_counter() - started

            search = PhotoSearch(conn, vision=vision, text=text)
            search.by_text("warm up")
            search.similar_to(1)
            rng = np.random.default_rng(n)
            text_times, model_times, tap_times = [], [], []
            for i in range(args.queries):
                query = QUERIES[i % len(QUERIES)]
                started = time.perf_counter()
                text.embed_text(query)
                model_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                search.by_text(query)
                text_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                results = search.similar_to(int(rng.integers(1, n + 1)))
                tap_times.append(time.perf_counter() - started)
                assert len(results.hits) == 48
            conn.close()
        t50, t95 = percentiles(text_times)
        m50, _ = percentiles(model_times)
        p50, p95 = percentiles(tap_times)
        print(f"{n:>8,} {imported:>9.2f} {exported:>9.2f} {t50:>9.1f} {t95:>9.1f} {m50:>12.1f} {p50:>8.1f} {p95:>8.1f}")
    vision.release()
    text.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
