"""A packed, in-memory copy of one vector table, searched with NumPy.

All vectors sit in one contiguous float32 array next to their rowids and metadata columns, with
the per-row factor of the metric cached (1/|x| for cosine, |x|² for L2), so a query costs one
BLAS matrix-vector product and a partial selection of the top k. Quantised copies (int8, binary)
are made on first use and only rank a shortlist that is then re-scored exactly in float32.

An index is immutable once published: writes make a new one (``with_insert`` / ``with_delete``),
so threads can search it without locks.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gallery_app.core.store.fastsearch import quantize
from gallery_app.core.store.fastsearch.loading import TableRows, metadata_array
from gallery_app.core.store.vectors import VectorTable

METHODS = ("exact", "int8", "binary")
#: A filter keeping at most this share of the rows gathers them and scores only those.
SELECTIVE_SHARE = 0.3
#: Recall@k the calibrated shortlists must reach on sampled queries (before the safety margin).
TARGET_RECALL = 0.995
SHORTLIST_MARGIN = 1.5
MIN_SHORTLIST_PER_K = 4.0
CALIBRATION_QUERIES = 32
CALIBRATION_K = 10
CALIBRATION_NOISE = 1.5
#: A quantised method is chosen over exact only when calibration timed it at least this much faster.
QUANTISED_SPEED_MARGIN = 0.8
#: Binary first passes are only worth it when the shortlist is a small share of the table.
BINARY_MAX_SHORTLIST_SHARE = 0.02

_OPS = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


@dataclass(frozen=True)
class Calibration:
    """What auto measured on this table: shortlist size per requested result, recall, the fastest method."""
    rows: int
    shortlist_per_k: dict[str, float]
    recall: dict[str, float]
    median_ms: dict[str, float]
    method: str


@dataclass
class _Quantised:
    lock: threading.Lock = field(default_factory=threading.Lock)
    int8: tuple[np.ndarray, np.ndarray] | None = None     # codes, per-row score factor
    bits: np.ndarray | None = None


class PackedIndex:
    def __init__(self, table: VectorTable, rowids: np.ndarray, vectors: np.ndarray,
                 metadata: dict[str, np.ndarray], version: int = 0, *, _norms: np.ndarray | None = None,
                 _quantised: _Quantised | None = None, calibration: Calibration | None = None):
        self.table = table
        self.rowids = np.ascontiguousarray(rowids, dtype=np.int64)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.metadata = metadata
        self.version = version
        norms = np.linalg.norm(self.vectors, axis=1) if _norms is None else _norms
        self.norms = norms.astype(np.float32)
        with np.errstate(divide="ignore"):
            self.row_factor = np.where(self.norms > 0, 1.0 / self.norms, 0.0).astype(np.float32)
        self.sq_norms = self.norms * self.norms
        self._q = _quantised or _Quantised()
        self.calibration = calibration
        self.calibration_lock = threading.Lock()

    @classmethod
    def from_rows(cls, table: VectorTable, rows: TableRows, calibration: Calibration | None = None) -> PackedIndex:
        return cls(table, rows.rowids, rows.vectors, rows.metadata, rows.version, calibration=calibration)

    def __len__(self) -> int:
        return len(self.rowids)

    # -- quantised copies, made on first use ------------------------------------------------------------
    def _int8_factor(self, scale: np.ndarray, norms_factor: np.ndarray) -> np.ndarray:
        return (scale * norms_factor).astype(np.float32) if self.table.metric == "cosine" else scale

    def int8(self) -> tuple[np.ndarray, np.ndarray]:
        with self._q.lock:
            if self._q.int8 is None:
                codes, scale = quantize.int8_codes(self.vectors)
                self._q.int8 = (codes, self._int8_factor(scale, self.row_factor))
            return self._q.int8

    def bits(self) -> np.ndarray:
        with self._q.lock:
            if self._q.bits is None:
                self._q.bits = quantize.sign_bits(self.vectors) if len(self) else np.zeros((1, 0), np.uint64)
            return self._q.bits

    def drop_quantised(self, keep: str | None = None) -> None:
        """Free the quantised copies other than ``keep`` (they are made again if asked for)."""
        with self._q.lock:
            if keep != "int8":
                self._q.int8 = None
            if keep != "binary":
                self._q.bits = None

    def memory_bytes(self) -> dict[str, int]:
        """Resident bytes per representation (quantised ones only once made)."""
        meta = sum(a.nbytes for a in self.metadata.values())
        out = {"float32": self.vectors.nbytes + self.rowids.nbytes + 3 * self.norms.nbytes + meta}
        if self._q.int8 is not None:
            out["int8"] = self._q.int8[0].nbytes + self._q.int8[1].nbytes
        if self._q.bits is not None:
            out["binary"] = self._q.bits.nbytes
        return out

    # -- writes make a new index -----------------------------------------------------------------------
    def with_delete(self, rowids: Sequence[int], version: int) -> PackedIndex:
        keep = ~np.isin(self.rowids, np.asarray(list(rowids), dtype=np.int64))
        q = _Quantised()
        if self._q.int8 is not None:
            q.int8 = (self._q.int8[0][keep], self._q.int8[1][keep])
        if self._q.bits is not None:
            q.bits = np.ascontiguousarray(self._q.bits[:, keep])
        return PackedIndex(self.table, self.rowids[keep], self.vectors[keep],
                           {c: a[keep] for c, a in self.metadata.items()}, version,
                           _norms=self.norms[keep], _quantised=q, calibration=self.calibration)

    def with_insert(self, rowids: Sequence[int], vectors: np.ndarray, metadata: dict[str, list[Any]],
                    version: int) -> PackedIndex:
        base = self.with_delete(rowids, version)  # an insert of an existing rowid replaces it
        new_ids = np.asarray(list(rowids), dtype=np.int64)
        new_vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(new_ids), self.table.dims)
        new_norms = np.linalg.norm(new_vectors, axis=1).astype(np.float32)
        merged_meta = {}
        for column, column_type in self.table.metadata.items():
            added = metadata_array(list(metadata[column]), column_type)
            merged_meta[column] = np.concatenate([base.metadata[column], added]) if len(base) else added
        q = _Quantised()
        if base._q.int8 is not None:
            codes, scale = quantize.int8_codes(new_vectors)
            with np.errstate(divide="ignore"):
                factor = np.where(new_norms > 0, 1.0 / new_norms, 0.0).astype(np.float32)
            q.int8 = (np.concatenate([base._q.int8[0], codes]),
                      np.concatenate([base._q.int8[1], self._int8_factor(scale, factor)]))
        if base._q.bits is not None:
            q.bits = np.ascontiguousarray(np.concatenate([base._q.bits, quantize.sign_bits(new_vectors)], axis=1))
        return PackedIndex(self.table, np.concatenate([base.rowids, new_ids]),
                           np.concatenate([base.vectors, new_vectors]), merged_meta, version,
                           _norms=np.concatenate([base.norms, new_norms]), _quantised=q,
                           calibration=self.calibration)

    # -- search ----------------------------------------------------------------------------------------
    def selection(self, filters: Sequence[tuple[str, str, Any]]) -> np.ndarray | None:
        """Positions of the rows passing every filter (None: no filter)."""
        if not filters:
            return None
        mask = np.ones(len(self), dtype=bool)
        for column, operator, value in filters:
            column_values = self.metadata[column]
            if column_values.dtype.kind == "U" and not isinstance(value, str):
                value = str(value)
            elif column_values.dtype.kind in "if" and isinstance(value, bool):
                value = int(value)
            mask &= _OPS[operator](column_values, value)
        return np.flatnonzero(mask)

    def _exact_key(self, positions: np.ndarray | None, dots: np.ndarray) -> np.ndarray:
        """Higher is nearer: cosine similarity × |q|, or 2x·q − |x|² for L2."""
        if self.table.metric == "cosine":
            factor = self.row_factor if positions is None else self.row_factor[positions]
            return dots * factor
        sq = self.sq_norms if positions is None else self.sq_norms[positions]
        return 2.0 * dots - sq

    def shortlist_size(self, method: str, k: int, rows: int) -> int:
        per_k = (self.calibration.shortlist_per_k.get(method) if self.calibration else None) or 10.0
        return int(min(rows, max(k, math.ceil(per_k * k))))

    def search(self, query: np.ndarray, k: int, filters: Sequence[tuple[str, str, Any]] = (),
               method: str = "exact", shortlist: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, distances) of the ``k`` nearest rows, nearest first, in the table's metric."""
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}")
        query = np.ascontiguousarray(query, dtype=np.float32)
        positions = self.selection(filters)
        rows = len(self) if positions is None else len(positions)
        if rows == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        mask = None
        if positions is not None and rows > SELECTIVE_SHARE * len(self):
            # A broad filter: gathering most rows costs more than scoring all and masking.
            mask = np.zeros(len(self), dtype=bool)
            mask[positions] = True
            positions = None
        if method == "exact" or rows <= k:
            dots = (self.vectors if positions is None else self.vectors[positions]) @ query
            key = self._exact_key(positions, dots)
            if mask is not None:
                key[~mask] = -np.inf
            chosen = _top(key, min(k, rows))
        else:
            size = shortlist or self.shortlist_size(method, k, rows)
            approx = self._approx_key(method, query, positions)
            if mask is not None:
                approx[~mask] = -np.inf
            candidates = _top(approx, min(size, rows), ordered=False)
            where = candidates if positions is None else positions[candidates]
            dots_c = self.vectors[where] @ query
            key_c = self._exact_key(where, dots_c)
            order = _top(key_c, min(k, len(key_c)))
            return self._finish(where[order], dots_c[order], query)
        where = chosen if positions is None else positions[chosen]
        return self._finish(where, dots[chosen], query)

    def _approx_key(self, method: str, query: np.ndarray, positions: np.ndarray | None) -> np.ndarray:
        if method == "int8":
            codes, factor = self.int8()
            if positions is not None:
                codes, factor = codes[positions], factor[positions]
            dots = quantize.int8_dot(codes, query) * factor
            if self.table.metric == "cosine":
                return dots
            return 2.0 * dots - (self.sq_norms if positions is None else self.sq_norms[positions])
        planes = self.bits()
        if positions is not None:
            planes = planes[:, positions]
        return -quantize.hamming(planes, quantize.sign_bits(query[None, :])[:, 0]).astype(np.float32)

    def _finish(self, where: np.ndarray, dots: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dots = dots.astype(np.float64)
        if self.table.metric == "cosine":
            q_norm = float(np.linalg.norm(query))
            denominator = self.norms[where].astype(np.float64) * q_norm
            with np.errstate(divide="ignore", invalid="ignore"):
                cosine = np.where(denominator > 0, dots / denominator, 0.0)
            distances = 1.0 - cosine
        else:
            sq = self.sq_norms[where].astype(np.float64) - 2.0 * dots + float(query @ query)
            distances = np.sqrt(np.maximum(sq, 0.0))
        return self.rowids[where], distances

    # -- automatic choice --------------------------------------------------------------------------------
    def calibrate(self, *, queries: int | None = None, k: int = CALIBRATION_K, seed: int = 0) -> Calibration:
        """Measure the shortlist each quantised method needs for ``TARGET_RECALL``, time the methods
        that qualify, and keep the fastest (a quantised one only if clearly faster than exact).

        Queries are stored rows (each excluding itself) and, because a real query is farther from its
        neighbours than a stored row is, the same rows moved by noise of norm ``CALIBRATION_NOISE``
        (cosine ≈ 0.55 to the row; the demo questions are at ≈ 0.78 from their best passage).
        The larger need of the two wins.
        """
        n = len(self)
        if n < 2 * CALIBRATION_K:
            self.calibration = Calibration(n, {"exact": 1.0}, {"exact": 1.0}, {}, "exact")
            return self.calibration
        rng = np.random.default_rng(seed)
        if queries is None:  # fewer above 200k rows: each costs three full scans
            queries = CALIBRATION_QUERIES if n <= 200_000 else CALIBRATION_QUERIES // 2
        sample = rng.choice(n, size=min(queries // 2, n), replace=False)
        stored = self.vectors[sample] * self.row_factor[sample, None]
        spread = float(CALIBRATION_NOISE / np.sqrt(self.table.dims))
        noise = rng.standard_normal(stored.shape).astype(np.float32) * spread
        moved = (stored + noise).astype(np.float32)
        probes = [(q, int(p)) for q, p in zip(stored, sample)] + [(q, -1) for q in moved]
        k = min(k, n - 1)
        ranks: dict[str, list[np.ndarray]] = {"int8": [], "binary": []}
        for query, itself in probes:
            key = self._exact_key(None, self.vectors @ query)
            if itself >= 0:
                key[itself] = -np.inf
            truth = _top(key, k)
            for method in ranks:
                approx = self._approx_key(method, query, None)
                if itself >= 0:
                    approx[itself] = -np.inf
                # Worst-case position of each true neighbour in the method's order (ties count against it).
                ranks[method].append((approx[None, :] >= approx[truth][:, None]).sum(axis=1))
        per_k: dict[str, float] = {"exact": 1.0}
        recall: dict[str, float] = {"exact": 1.0}
        for method, found in ranks.items():
            every = np.concatenate(found)
            needed = float(np.quantile(every, TARGET_RECALL, method="higher"))
            per_k[method] = max(MIN_SHORTLIST_PER_K, needed * SHORTLIST_MARGIN / k)
            recall[method] = float(np.mean(every <= min(n, math.ceil(per_k[method] * k))))
        candidates = ["exact", "int8"]
        if per_k["binary"] * k <= BINARY_MAX_SHORTLIST_SHARE * n:
            candidates.append("binary")
        trial = self._calibrated_view()
        trial.calibration = Calibration(n, per_k, recall, {}, "exact")
        timings: dict[str, list[float]] = {m: [] for m in candidates}
        for i, (query, _) in enumerate(probes[:9]):
            for method in candidates[i % len(candidates):] + candidates[:i % len(candidates)]:
                start = time.perf_counter()
                trial.search(query, k, method=method)
                timings[method].append((time.perf_counter() - start) * 1e3)
        median_ms = {m: float(np.median(t[1:])) for m, t in timings.items()}
        fastest = min(candidates, key=lambda m: median_ms[m] / (1.0 if m == "exact" else QUANTISED_SPEED_MARGIN))
        self.calibration = Calibration(n, per_k, recall, median_ms, fastest)
        return self.calibration

    def _calibrated_view(self) -> PackedIndex:
        return PackedIndex(self.table, self.rowids, self.vectors, self.metadata, self.version,
                           _norms=self.norms, _quantised=self._q, calibration=self.calibration)


def _top(key: np.ndarray, k: int, *, ordered: bool = True) -> np.ndarray:
    """Positions of the ``k`` largest values (ordered best first, ties by position)."""
    if k >= len(key):
        part = np.arange(len(key))
    else:
        part = np.argpartition(-key, k - 1)[:k]
    if not ordered:
        return part
    part = np.sort(part)
    return part[np.argsort(-key[part], kind="stable")]
