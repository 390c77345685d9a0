"""int8 and sign-bit first passes over a packed index, each re-scoring its shortlist exactly (bench/knn.py).

The app searches the packed float32 copy exactly (``gallery_app.core.store.fastsearch``): on the
2-core machines measured, NumPy's float32 matrix-vector product runs near memory bandwidth, the
int8 path is bound by its upcast, and sign bits need shortlists of 10-35 % of a real-like table,
so neither was faster at the same recall. They are kept here to be measured again elsewhere.

* int8: one scale per row (largest absolute component / 127); 4× fewer bytes than float32.
  NumPy has no BLAS for integers, so rows are scored in cache-sized blocks: upcast to a reused
  float32 buffer, then one BLAS matrix-vector product per block.
* binary: the sign bit of each component, packed; 32× fewer bytes. Stored transposed as 64-bit
  words (``words × n``) so the Hamming distance is a handful of whole-array XOR + popcount passes
  instead of a slow reduction over 8 words per row.

Both only rank candidates; ``PackedIndex.nearest_among`` re-scores the shortlist exactly in float32,
so the order within it is exact and the float32 matrix stays resident for that. ``calibrate()``
measures the shortlist each needs for recall@10 ≥ ``TARGET_RECALL``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from gallery_app.core.store.fastsearch import PackedIndex

QUANTISED_METHODS = ("int8", "binary")
#: Rows per block when scoring int8 codes: 4096 × 512 float32 is 8 MB, measured best on 2 cores.
INT8_BLOCK_ROWS = 4096
#: Shortlist per requested result before ``calibrate()`` measured one.
DEFAULT_SHORTLIST_PER_K = 10.0
#: Recall@k the calibrated shortlists must reach on sampled queries (before the safety margin).
TARGET_RECALL = 0.995
SHORTLIST_MARGIN = 1.5
MIN_SHORTLIST_PER_K = 4.0
CALIBRATION_QUERIES = 32
CALIBRATION_K = 10
CALIBRATION_NOISE = 1.5

_buffers = threading.local()


def int8_codes(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int8 (n, d), scale float32 (n,)) with ``vectors ≈ codes * scale[:, None]``."""
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.empty(0, np.float32)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    codes = np.rint(vectors / safe[:, None]).astype(np.int8)
    return codes, scale


def int8_dot(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``codes @ query`` in float32 (without the per-row scale), block by block."""
    n, dims = codes.shape
    query = np.ascontiguousarray(query, dtype=np.float32)
    out = np.empty(n, np.float32)
    buffer = getattr(_buffers, "block", None)
    if buffer is None or buffer.shape[1] != dims:
        buffer = _buffers.block = np.empty((INT8_BLOCK_ROWS, dims), np.float32)
    for start in range(0, n, INT8_BLOCK_ROWS):
        stop = min(n, start + INT8_BLOCK_ROWS)
        block = buffer[:stop - start]
        np.copyto(block, codes[start:stop], casting="unsafe")
        np.dot(block, query, out=out[start:stop])
    return out


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Packed sign bits, transposed: uint64 ``(ceil(d / 64), n)``; padding bits are 0 for every row."""
    vectors = np.atleast_2d(vectors)
    packed = np.packbits(vectors > 0, axis=1)
    words = -(-packed.shape[1] // 8)
    padded = np.zeros((len(vectors), words * 8), np.uint8)
    padded[:, :packed.shape[1]] = packed
    return np.ascontiguousarray(padded.view(np.uint64).T)


def hamming(planes: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Hamming distance of every row's sign bits to the query's (``query_bits``: ``sign_bits(q)[:, 0]``)."""
    distance = np.bitwise_count(planes[0] ^ query_bits[0]).astype(np.uint16)
    for word in range(1, len(planes)):
        distance += np.bitwise_count(planes[word] ^ query_bits[word])
    return distance


@dataclass(frozen=True)
class Calibration:
    """Per method: the shortlist per requested result it needs, and the recall that reached on the probes."""
    shortlist_per_k: dict[str, float]
    recall: dict[str, float]


class QuantisedIndex:
    """The int8 codes and sign bits of a cosine ``PackedIndex``, searched beside it."""

    def __init__(self, index: PackedIndex):
        if index.table.metric != "cosine":
            raise ValueError(f"{index.table.name} is not a cosine table")
        self.index = index
        codes, scale = int8_codes(index.vectors)
        self.codes = codes
        self.code_factor = (scale * index.row_factor).astype(np.float32)
        self.bits = sign_bits(index.vectors) if len(index) else np.zeros((1, 0), np.uint64)
        self.calibration: Calibration | None = None

    def memory_bytes(self) -> dict[str, int]:
        return {"int8": self.codes.nbytes + self.code_factor.nbytes, "binary": self.bits.nbytes}

    def approx_key(self, method: str, query: np.ndarray) -> np.ndarray:
        """Higher is nearer by the compact copy: cosine × |q| from int8 codes, or minus the Hamming distance."""
        if method == "int8":
            return int8_dot(self.codes, query) * self.code_factor
        if method == "binary":
            return -hamming(self.bits, sign_bits(query[None, :])[:, 0]).astype(np.float32)
        raise ValueError(f"unknown method {method!r}")

    def shortlist_size(self, method: str, k: int) -> int:
        per_k = self.calibration.shortlist_per_k[method] if self.calibration else DEFAULT_SHORTLIST_PER_K
        return int(min(len(self.index), max(k, math.ceil(per_k * k))))

    def search(self, query: np.ndarray, k: int, method: str,
               shortlist: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosine distances) of the ``k`` nearest rows: ``method`` ranks a shortlist, float32 re-scores it."""
        query = np.ascontiguousarray(query, dtype=np.float32)
        n = len(self.index)
        if n <= k:
            return self.index.search(query, k)
        size = min(n, shortlist or self.shortlist_size(method, k))
        approx = self.approx_key(method, query)
        candidates = np.arange(n) if size >= n else np.argpartition(-approx, size - 1)[:size]
        return self.index.nearest_among(candidates, query, k)

    def calibrate(self, *, queries: int | None = None, k: int = CALIBRATION_K, seed: int = 0) -> Calibration:
        """Measure the shortlist each method needs for ``TARGET_RECALL`` (× ``SHORTLIST_MARGIN``).

        Queries are stored rows (each excluding itself) and, because a real query is farther from its
        neighbours than a stored row is, the same rows moved by noise of norm ``CALIBRATION_NOISE``
        (cosine ≈ 0.55 to the row; the demo questions are at ≈ 0.78 from their best passage).
        The larger need of the two wins. On real-like data this is optimistic for binary: its
        calibrated shortlists reached only 0.98 on the real questions.
        """
        index = self.index
        n = len(index)
        if n < 2 * CALIBRATION_K:
            self.calibration = Calibration({m: n / k for m in QUANTISED_METHODS}, {m: 1.0 for m in QUANTISED_METHODS})
            return self.calibration
        rng = np.random.default_rng(seed)
        if queries is None:  # fewer above 200k rows: each costs three full scans
            queries = CALIBRATION_QUERIES if n <= 200_000 else CALIBRATION_QUERIES // 2
        sample = rng.choice(n, size=min(queries // 2, n), replace=False)
        stored = index.vectors[sample] * index.row_factor[sample, None]
        spread = float(CALIBRATION_NOISE / np.sqrt(index.table.dims))
        noise = rng.standard_normal(stored.shape).astype(np.float32) * spread
        moved = (stored + noise).astype(np.float32)
        probes = [(q, int(p)) for q, p in zip(stored, sample)] + [(q, -1) for q in moved]
        k = min(k, n - 1)
        ranks: dict[str, list[np.ndarray]] = {m: [] for m in QUANTISED_METHODS}
        for query, itself in probes:
            key = (index.vectors @ query) * index.row_factor
            if itself >= 0:
                key[itself] = -np.inf
            truth = np.argpartition(-key, k - 1)[:k]
            for method in ranks:
                approx = self.approx_key(method, query)
                if itself >= 0:
                    approx[itself] = -np.inf
                # Worst-case position of each true neighbour in the method's order (ties count against it).
                ranks[method].append((approx[None, :] >= approx[truth][:, None]).sum(axis=1))
        per_k: dict[str, float] = {}
        recall: dict[str, float] = {}
        for method, found in ranks.items():
            every = np.concatenate(found)
            needed = float(np.quantile(every, TARGET_RECALL, method="higher"))
            per_k[method] = max(MIN_SHORTLIST_PER_K, needed * SHORTLIST_MARGIN / k)
            recall[method] = float(np.mean(every <= min(n, math.ceil(per_k[method] * k))))
        self.calibration = Calibration(per_k, recall)
        return self.calibration
