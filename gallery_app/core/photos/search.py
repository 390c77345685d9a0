"""Finding photos by meaning: by words, by a photo in the gallery, by a photo file, by a camera frame.

Every query becomes one vector in CLIP's shared text/image space and is matched against the stored
photo vectors; results carry the cosine similarity. "Similar to this photo" uses the stored vector
(no decoding) and never returns the photo itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import apsw
import numpy as np
from PIL import Image

from gallery_app.core.errors import AppError, ModelNotAvailable
from gallery_app.core.models.runtimes.clip import ClipTextEncoder, ClipVisionEncoder
from gallery_app.core.photos.additions import add_capture, add_upload
from gallery_app.core.photos.decode import decode_image
from gallery_app.core.photos.duplicates import DuplicateGroup, duplicate_groups
from gallery_app.core.file_names import printable
from gallery_app.core.photos.filters import ALL_PHOTOS, PhotoFilter
from gallery_app.core.photos.library import PhotoRecord, photo_by_id, photo_by_path, photo_ids, photos_by_ids
from gallery_app.core.photos.photo_vectors import existing_photo_vector_table, stored_vectors
from gallery_app.core.photos.pixels import PixelBuffer, to_rgb_array
from gallery_app.core.photos.preparing import DECODE_SIDE, model_input, read_photo_file
from gallery_app.core.store.vector_search import search as vector_search
from gallery_app.core.store.vectors import MAX_K, VectorTable

DEFAULT_RESULTS = 48
#: Above this cosine similarity two photos are near-duplicates (the same shot resized, re-encoded,
#: lightly edited); bursts of one scene sit just below it. Copies that need no model: duplicates.py.
DUPLICATE_THRESHOLD = 0.95


@dataclass(frozen=True)
class PhotoHit:
    photo: PhotoRecord
    similarity: float


@dataclass
class PhotoResults:
    query: str
    hits: list[PhotoHit]
    seconds: float
    added: PhotoRecord | None = None  # the upload or capture kept in the gallery, when asked to
    already_there: bool = False

    def describe(self) -> str:
        text = f"{len(self.hits)} results in {self.seconds * 1000:.0f} ms"
        if self.added is not None:
            text += (" (this photo was already in your gallery)" if self.already_there
                     else f"; added {self.added.name} to your gallery")
        return text


class PhotoSearch:
    def __init__(self, conn: apsw.Connection, *, vision: ClipVisionEncoder | None = None,
                 text: ClipTextEncoder | None = None):
        self.conn = conn
        self.vision = vision
        self.text = text

    # --- queries --------------------------------------------------------------------------------

    def by_text(self, query: str, k: int = DEFAULT_RESULTS, *, where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        query = query.strip()
        if not query:
            raise AppError("Type a few words describing the photo you are looking for.")
        started = time.perf_counter()
        vector = self._text_model().embed_text(query)
        return self._results(f"“{query}”", vector, k, started, where=where)

    def similar_to(self, photo: int | str | Path, k: int = DEFAULT_RESULTS, *,
                   where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        started = time.perf_counter()
        record = self.find_photo(photo)
        vector = stored_vectors(self.conn, self._vision_model(), [record.id]).get(record.id)
        if vector is None:
            raise AppError(f"{record.name} has not been indexed by the photo model yet.",
                           hint="Run the photo indexing again once the CLIP model is available.")
        return self._results(f"similar to {record.name}", vector, k, started, exclude=record.id, where=where)

    def by_image_file(self, path: Path | str, k: int = DEFAULT_RESULTS, *, add: bool = False,
                      where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        started = time.perf_counter()
        path = Path(path).expanduser()
        if add:
            record, new = add_upload(self.conn, self._vision_model(), path)
            results = self._stored_vector_results(record, k, started, where)
            results.added, results.already_there = record, not new
            return results
        data, _ = read_photo_file(path)
        vector = self._embed_image(decode_image(path, max_side=DECODE_SIDE, data=data).rgb)
        return self._results(f"like {printable(path.name)}", vector, k, started, where=where)

    def by_pixels(self, frame: PixelBuffer, k: int = DEFAULT_RESULTS, *, add: bool = False,
                  where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        """Search by a camera frame (or any pixel buffer that states its channel order)."""
        started = time.perf_counter()
        image = Image.fromarray(to_rgb_array(frame), "RGB")
        if add:
            record, new = add_capture(self.conn, self._vision_model(), image)
            results = self._stored_vector_results(record, k, started, where)
            results.added, results.already_there = record, not new
            return results
        return self._results("camera frame", self._embed_image(image), k, started, where=where)

    def duplicates(self, threshold: float = DUPLICATE_THRESHOLD, *,
                   cancel: Callable[[], bool] = lambda: False) -> list[DuplicateGroup]:
        """Groups of copies, biggest first: identical files and resized or re-encoded copies always (no model
        needed); with a CLIP model also photos whose vectors are above ``threshold`` (joined transitively)."""
        return duplicate_groups(self.conn, self._clip_pairs(threshold), cancel=cancel)

    def _clip_pairs(self, threshold: float) -> list[tuple[int, int, float]]:
        if self.vision is None and self.text is None:
            return []
        table = self._table()
        if table is None:
            return []
        rows = list(self.conn.execute(f"SELECT rowid, embedding FROM {table.name}"))
        if len(rows) < 2:
            return []
        ids = [int(r[0]) for r in rows]
        matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        return [(ids[i], ids[j], s) for i, j, s in _pairs_above(matrix, threshold)]

    def find_photo(self, photo: int | str | Path) -> PhotoRecord:
        """A gallery photo by id (``12`` or ``"#12"``) or by path."""
        text = str(photo).strip()
        if text.lstrip("#").isdigit() and not Path(text).exists():
            record = photo_by_id(self.conn, int(text.lstrip("#")))
        else:
            record = photo_by_path(self.conn, Path(text).expanduser().resolve())
        if record is None:
            raise AppError(f"There is no photo {printable(text)} in the gallery.",
                           hint="See the photos with: gallery-app-cli photos list")
        return record

    # --- the one search path ----------------------------------------------------------------------

    def _table(self) -> VectorTable | None:
        return existing_photo_vector_table(self.conn, self._vision_or_text())

    def _results(self, query: str, vector: np.ndarray, k: int, started: float, *,
                 exclude: int | None = None, where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        table = self._table()
        if table is None:
            return PhotoResults(query, [], time.perf_counter() - started)
        model_key = self._vision_or_text().model_key
        wanted = min(MAX_K, k + (exclude is not None))
        # The folder's or chat's photos as a set of ids, the days as a filter on the vectors' taken_day.
        collection = photo_ids(self.conn, replace(where, since=None, until=None)) if where.limits_collection else None
        filters = where.vector_where(collection)
        neighbours = [n for n in vector_search(self.conn, table, vector, model_key=model_key, k=wanted, where=filters)
                      if n.rowid != exclude][:k]
        records = photos_by_ids(self.conn, [n.rowid for n in neighbours])
        hits = [PhotoHit(records[n.rowid], n.similarity) for n in neighbours if n.rowid in records]
        return PhotoResults(query, hits, time.perf_counter() - started)

    def _stored_vector_results(self, record: PhotoRecord, k: int, started: float,
                               where: PhotoFilter = ALL_PHOTOS) -> PhotoResults:
        vector = stored_vectors(self.conn, self._vision_model(), [record.id])[record.id]
        return self._results(f"like {record.name}", vector, k, started, where=where)

    def _embed_image(self, upright_rgb: Image.Image) -> np.ndarray:
        return self._vision_model().embed_pixels(model_input(upright_rgb)[None])[0]

    def _vision_or_text(self):
        model = self.vision or self.text
        if model is None:
            raise ModelNotAvailable("Photo search needs the CLIP model, which is not on this computer yet.",
                                    hint="Get it with: gallery-app-cli models fetch clip-vision")
        return model

    def _vision_model(self) -> ClipVisionEncoder:
        if self.vision is None:
            raise ModelNotAvailable("Searching by a photo needs the CLIP vision model, which is not on this "
                                    "computer yet.", hint="Get it with: gallery-app-cli models fetch clip-vision")
        return self.vision

    def _text_model(self) -> ClipTextEncoder:
        if self.text is None:
            raise ModelNotAvailable("Searching photos by words needs the CLIP text model, which is not on this "
                                    "computer yet.", hint="Get it with: gallery-app-cli models fetch clip-text")
        return self.text


def _pairs_above(matrix: np.ndarray, threshold: float, block: int = 2048) -> list[tuple[int, int, float]]:
    """(i, j, similarity) with i < j for every pair above ``threshold``, in blocks to bound memory."""
    pairs = []
    for start in range(0, len(matrix), block):
        scores = matrix[start:start + block] @ matrix.T
        rows, cols = np.nonzero(scores > threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i = start + r
            if i < c:
                pairs.append((i, c, float(scores[r, c])))
    return pairs

