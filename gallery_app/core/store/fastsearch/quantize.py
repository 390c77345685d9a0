"""Compact copies of a float32 matrix and their first-pass scores.

* int8: one scale per row (largest absolute component / 127); 4× fewer bytes than float32.
  NumPy has no BLAS for integers, so rows are scored in cache-sized blocks: upcast to a reused
  float32 buffer, then one BLAS matrix-vector product per block.
* binary: the sign bit of each component, packed; 32× fewer bytes. Stored transposed as 64-bit
  words (``words × n``) so the Hamming distance is a handful of whole-array XOR + popcount passes
  instead of a slow reduction over 8 words per row.

Both only rank candidates; the caller re-scores a shortlist exactly in float32.
"""

from __future__ import annotations

import threading

import numpy as np

#: Rows per block when scoring int8 codes: 4096 × 512 float32 is 8 MB, measured best on 2 cores.
INT8_BLOCK_ROWS = 4096
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
