"""A packed, in-memory copy of one vector table, searched exactly with NumPy.

All vectors sit in one contiguous float32 array next to their rowids and metadata columns, with
the per-row factor of the metric cached (1/|x| for cosine, |x|² for L2), so a query costs one
BLAS matrix-vector product and a partial selection of the top k.

An index is immutable once published: writes make a new one (``with_insert`` / ``with_delete``),
so threads can search it without locks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gallery_app.core.store.fastsearch.loading import TableRows, metadata_array
from gallery_app.core.store.vectors import VectorTable

#: A filter keeping at most this share of the rows gathers them and scores only those.
SELECTIVE_SHARE = 0.3
#: Hubness compares every row with at most this many others (a fixed sample): linear in the rows.
HUBNESS_SAMPLE = 4096
#: Rows scored against the sample at once (bounds the memory of one block of similarities).
HUBNESS_BLOCK = 2048

_OPS = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


class PackedIndex:
    def __init__(self, table: VectorTable, rowids: np.ndarray, vectors: np.ndarray,
                 metadata: dict[str, np.ndarray], version: int = 0, *, _norms: np.ndarray | None = None):
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
        self._hubness: dict[int, np.ndarray] = {}
        self._groups: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    @classmethod
    def from_rows(cls, table: VectorTable, rows: TableRows) -> PackedIndex:
        return cls(table, rows.rowids, rows.vectors, rows.metadata, rows.version)

    def __len__(self) -> int:
        return len(self.rowids)

    def memory_bytes(self) -> int:
        """Resident bytes: vectors, rowids, the three per-row norm arrays and the metadata."""
        meta = sum(a.nbytes for a in self.metadata.values())
        return self.vectors.nbytes + self.rowids.nbytes + 3 * self.norms.nbytes + meta

    # -- writes make a new index -----------------------------------------------------------------------
    def with_delete(self, rowids: Sequence[int], version: int) -> PackedIndex:
        keep = ~np.isin(self.rowids, np.asarray(list(rowids), dtype=np.int64))
        return PackedIndex(self.table, self.rowids[keep], self.vectors[keep],
                           {c: a[keep] for c, a in self.metadata.items()}, version, _norms=self.norms[keep])

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
        return PackedIndex(self.table, np.concatenate([base.rowids, new_ids]),
                           np.concatenate([base.vectors, new_vectors]), merged_meta, version,
                           _norms=np.concatenate([base.norms, new_norms]))

    # -- hubness ----------------------------------------------------------------------------------------
    def hubness(self, k: int) -> np.ndarray:
        """Per row, its mean cosine similarity to its ``k`` nearest other rows (of a fixed sample).

        A row near to everything (a pasted advert, a run of "<image omitted>") is near to every query
        too: the "hubs" of nearest-neighbour search. CSLS (Conneau et al., 2018) scores a pair against
        this neighbourhood density. Computed once per index (an index never changes).
        """
        if k not in self._hubness:
            self._hubness[k] = self._compute_hubness(k)
        return self._hubness[k]

    def _compute_hubness(self, k: int) -> np.ndarray:
        rows = len(self)
        if rows < 2 or self.table.metric != "cosine":
            return np.zeros(rows, np.float32)
        unit = self.vectors * self.row_factor[:, None]
        sample = (np.arange(rows) if rows <= HUBNESS_SAMPLE
                  else np.sort(np.random.default_rng(0).choice(rows, HUBNESS_SAMPLE, replace=False)))
        reference = unit[sample]
        # Where each row sits in the sample (-1: not in it), so that a row is not its own neighbour.
        place_in_sample = np.full(rows, -1)
        place_in_sample[sample] = np.arange(len(sample))
        take = min(k, len(sample) - 1)
        result = np.empty(rows, np.float32)
        for start in range(0, rows, HUBNESS_BLOCK):
            block = unit[start:start + HUBNESS_BLOCK] @ reference.T
            own = place_in_sample[start:start + len(block)]
            sampled = np.flatnonzero(own >= 0)
            block[sampled, own[sampled]] = -np.inf
            nearest = np.partition(block, block.shape[1] - take, axis=1)[:, -take:]
            result[start:start + len(block)] = nearest.mean(axis=1)
        return result

    # -- groups ----------------------------------------------------------------------------------------
    def group_centroids(self, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows grouped by a metadata ``column``: per row the index of its group, per group the unit
        mean of its rows' unit vectors (the group's centroid), and per row its cosine with that centroid.
        Computed once per index and column (an index never changes)."""
        if column not in self._groups:
            unit = self.vectors * self.row_factor[:, None]
            keys, group = np.unique(self.metadata[column], return_inverse=True)
            group = group.reshape(-1)
            sums = np.zeros((len(keys), self.table.dims), np.float32)
            if len(unit):
                # Rows sorted by group and summed run by run: linear, where np.add.at is unbuffered and slow.
                order = np.argsort(group, kind="stable")
                starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
                sums = np.add.reduceat(unit[order], starts, axis=0)
            norms = np.linalg.norm(sums, axis=1)
            centroids = sums / np.maximum(norms, 1e-12)[:, None]
            alignment = np.einsum("ij,ij->i", unit, centroids[group]) if len(unit) else np.zeros(0, np.float32)
            self._groups[column] = (group.astype(np.int64), centroids, alignment.astype(np.float32))
        return self._groups[column]

    # -- search ----------------------------------------------------------------------------------------
    def selection(self, filters: Sequence[tuple[str, str, Any]]) -> np.ndarray | None:
        """Positions of the rows passing every filter (None: no filter)."""
        if not filters:
            return None
        mask = np.ones(len(self), dtype=bool)
        for column, operator, value in filters:
            column_values = self.rowids if column == "rowid" else self.metadata[column]
            if operator == "in":
                wanted = [str(v) for v in value] if column_values.dtype.kind == "U" else list(value)
                mask &= np.isin(column_values, np.asarray(wanted, dtype=object if not wanted else None))
                continue
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

    def search(self, query: np.ndarray, k: int,
               filters: Sequence[tuple[str, str, Any]] = ()) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, distances) of the ``k`` nearest rows, nearest first, in the table's metric."""
        query = np.ascontiguousarray(query, dtype=np.float32)
        positions = self.selection(filters)
        rows = len(self) if positions is None else len(positions)
        if rows == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        if positions is not None and rows <= SELECTIVE_SHARE * len(self):
            return self.nearest_among(positions, query, k)
        dots = self.vectors @ query
        key = self._exact_key(None, dots)
        if positions is not None:
            # A broad filter: gathering most rows costs more than scoring all and masking.
            mask = np.zeros(len(self), dtype=bool)
            mask[positions] = True
            key[~mask] = -np.inf
        chosen = _top(key, min(k, rows))
        return self._finish(chosen, dots[chosen], query)

    def nearest_among(self, positions: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, distances) of the ``k`` nearest of the rows at ``positions``, scored exactly."""
        dots = self.vectors[positions] @ query
        order = _top(self._exact_key(positions, dots), min(k, len(positions)))
        return self._finish(positions[order], dots[order], query)

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


def _top(key: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest values, best first (ties by position)."""
    if k >= len(key):
        part = np.arange(len(key))
    else:
        part = np.argpartition(-key, k - 1)[:k]
    part = np.sort(part)
    return part[np.argsort(-key[part], kind="stable")]
