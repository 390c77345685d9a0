"""A 64-bit difference hash (dHash) per photo: the same picture resized, re-encoded or recompressed keeps
(nearly) the same bits, so such copies are found without any model.

dHash compares each of 8×9 grey cells of the upright picture with its right neighbour. A small NumPy
function rather than the ``imagehash`` package: that one needs SciPy and PyWavelets (tens of MB in the
bundle) for its other hashes, and dHash is one resize and one comparison.

Stored as 16 hex digits in ``photos.perceptual_hash`` (migration 007): NULL = not computed yet (photos
indexed before 007, bundled ones), "" = no usable hash (a flat picture, or one that cannot be decoded).
The indexer computes it from the picture it decodes anyway; ``fill_missing`` computes the rest from the
cached thumbnail (else the file) the first time duplicates are looked for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw
import numpy as np
from PIL import Image

from gallery_app.core.file_names import from_db
from gallery_app.core.photos.decode import PhotoSkipped, decode_image
from gallery_app.core.photos.thumbnails import THUMBNAIL_SIZE, thumbnail_path
from gallery_app.core.store import atomic

#: Bits that may differ between two copies of one picture. Half-size JPEG copies of the fixture photos
#: differ by 0–8 of 64, a quarter-size one of a dim, low-contrast photo by up to 18 (missed); different
#: photos among the fixtures by 13 or more, about 32 on average (tests/unit/test_perceptual_hash.py).
MAX_DISTANCE = 10
#: Below this spread of the 72 grey cells (0–255) a picture is too plain to hash: every flat picture,
#: whatever its colour, would get the same all-zero hash and be called a copy of the others.
MIN_SPREAD = 3.0

_GRID = (9, 8)  # (width, height): 8 comparisons per row, 8 rows


def difference_hash(upright: Image.Image) -> str:
    """The picture's dHash as 16 hex digits, or "" when it is too plain to tell apart from other plain ones."""
    grey = upright.convert("L").resize(_GRID, Image.Resampling.BOX)  # BOX: each cell the mean of its area
    cells = np.asarray(grey, dtype=np.int16)
    if float(cells.std()) < MIN_SPREAD:
        return ""
    bits = (cells[:, 1:] > cells[:, :-1]).ravel()
    return np.packbits(bits).tobytes().hex()


def hash_of_file(path: Path | str, content_hash: str) -> str:
    """The dHash of a photo already in the gallery: from its cached thumbnail when there is one (small, and
    about the size the indexer hashed: 72 cells come out the same), else decoded from the file; "" when
    neither can be read."""
    try:
        with Image.open(thumbnail_path(content_hash)) as thumbnail:
            thumbnail.load()
            return difference_hash(thumbnail)
    except OSError:
        pass
    try:
        return difference_hash(decode_image(Path(path), max_side=THUMBNAIL_SIZE).rgb)
    except (PhotoSkipped, OSError):
        return ""


def fill_missing(conn: apsw.Connection, *, cancel: Callable[[], bool] = lambda: False,
                 batch: int = 200) -> int:
    """Compute and store the hash of every photo that has none yet; returns how many were computed.

    Decoding happens outside any transaction; each batch is written in one short one, so a cancel keeps
    what was done and the next call goes on from there."""
    done = 0
    while not cancel():
        rows = conn.execute("SELECT id, path, content_hash FROM photos WHERE perceptual_hash IS NULL "
                            "ORDER BY id LIMIT ?", (batch,)).fetchall()
        if not rows:
            break
        values = [(hash_of_file(from_db(path), digest), photo_id) for photo_id, path, digest in rows]
        with atomic(conn):
            conn.executemany("UPDATE photos SET perceptual_hash = ? WHERE id = ? AND perceptual_hash IS NULL", values)
        done += len(values)
    return done


def stored_hashes(conn: apsw.Connection) -> tuple[np.ndarray, np.ndarray]:
    """(photo ids, their hashes as uint64) of every photo with a usable hash."""
    rows = conn.execute("SELECT id, perceptual_hash FROM photos WHERE perceptual_hash <> '' ORDER BY id").fetchall()
    ids = np.array([row[0] for row in rows], dtype=np.int64)
    hashes = np.array([int(row[1], 16) for row in rows], dtype=np.uint64)
    return ids, hashes


_BITS_IN_BYTE = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)


def _bit_counts_by_table(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64, by a table of bytes (NumPy before 2.0 has no bit count)."""
    shape = values.shape
    return _BITS_IN_BYTE[np.ascontiguousarray(values).view(np.uint8)].reshape(*shape, 8).sum(-1)


_bit_counts = getattr(np, "bitwise_count", _bit_counts_by_table)


def close_pairs(hashes: np.ndarray, max_distance: int = MAX_DISTANCE,
                block: int = 512) -> list[tuple[int, int, int]]:
    """(i, j, differing bits) with i < j for every pair of ``hashes`` at most ``max_distance`` bits apart.

    All pairs, in blocks of rows so memory stays bounded (10,000 photos: about 0.3 s here)."""
    pairs = []
    for start in range(0, len(hashes), block):
        rows = hashes[start:start + block]
        distances = _bit_counts(rows[:, None] ^ hashes[None, :])
        for r, c in zip(*np.nonzero(distances <= max_distance)):
            i = start + int(r)
            if i < int(c):
                pairs.append((i, int(c), int(distances[r, c])))
    return pairs
