"""Precomputed vectors for a gallery that ships with the app: export, and import in one batch.

A bundle is one ``.npz`` (NumPy's zip of arrays, read without pickle): the vectors, the photo rows
they belong to (paths relative to the gallery's folder, content hash, size, dimensions, EXIF
fields) and the model space they were made in. Importing checks the model and that each file is
there with the recorded size, then writes rows and vectors in one transaction, so a first start
can search the bundled photos without running the vision model over them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core.errors import AppError, VectorModelMismatch
from gallery_app.core.models.runtimes.vector_model import VectorModel
from gallery_app.core.photos import library
from gallery_app.core.file_names import from_db
from gallery_app.core.photos.library import PhotoSource
from gallery_app.core.photos.photo_vectors import existing_photo_vector_table, store_photo_vectors
from gallery_app.core.store import atomic

FORMAT_VERSION = 1
_ROW_FIELDS = ("content_hash", "file_size", "width", "height", "format", "captured_at", "latitude", "longitude",
               "camera")


@dataclass
class BundleImport:
    imported: int = 0
    already_there: int = 0
    missing: list[str] = field(default_factory=list)  # files named by the bundle that are absent or different

    def describe(self) -> str:
        text = f"{self.imported} bundled photos ready to search"
        if self.already_there:
            text += f", {self.already_there} already in the gallery"
        if self.missing:
            text += f"; {len(self.missing)} listed photos are missing or changed (e.g. {self.missing[0]})"
        return text + "."


def export_bundle(conn: apsw.Connection, model: VectorModel, base_folder: Path, target: Path) -> int:
    """Write the vectors of every photo under ``base_folder`` to ``target`` (.npz); returns how many."""
    table = existing_photo_vector_table(conn, model)
    if table is None:
        raise AppError("There are no photo vectors to export yet; index the photos first.")
    base_folder = Path(base_folder).resolve()
    rows = conn.execute(
        f"SELECT p.path, v.embedding, {', '.join('p.' + f for f in _ROW_FIELDS)} "
        f"FROM photos p JOIN {table.name} v ON v.rowid = p.id ORDER BY p.path"
    ).fetchall()
    rows = [(from_db(r[0]), *r[1:]) for r in rows]
    rows = [r for r in rows if Path(r[0]).is_relative_to(base_folder)]
    if not rows:
        raise AppError(f"No indexed photos are under {base_folder}.")
    records = [dict(zip(_ROW_FIELDS, r[2:]), path=Path(r[0]).relative_to(base_folder).as_posix()) for r in rows]
    vectors = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    header = {"format": FORMAT_VERSION, "model_space": model.model_key, "dims": model.dims, "count": len(rows)}
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".part")
    with open(temporary, "wb") as out:
        np.savez(out, vectors=vectors, header=np.array(json.dumps(header)), photos=np.array(json.dumps(records)))
    temporary.replace(target)
    return len(rows)


def import_bundle(conn: apsw.Connection, model: VectorModel, bundle: Path, base_folder: Path) -> BundleImport:
    """Add the bundle's photos (found under ``base_folder``) with their vectors, all in one transaction."""
    try:
        with np.load(bundle, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            records = json.loads(str(data["photos"]))
            vectors = np.asarray(data["vectors"], dtype=np.float32)
    except (OSError, KeyError, ValueError) as exc:
        raise AppError(f"{Path(bundle).name} is not a photo vector bundle ({exc}).") from exc
    if header.get("format") != FORMAT_VERSION or len(records) != len(vectors):
        raise AppError(f"{Path(bundle).name} was written by another version of the app.")
    if header.get("model_space") != model.model_key or header.get("dims") != model.dims:
        raise VectorModelMismatch(
            f"The bundled photo vectors were made by {header.get('model_space')}, but the photo model in use is "
            f"{model.model_key}.", hint="The photos will be indexed with the current model instead.")
    result = BundleImport()
    base_folder = Path(base_folder).resolve()
    new_rows, new_vectors = [], []
    known = library.photos_with_hashes(conn, [r["content_hash"] for r in records])
    for record, vector in zip(records, vectors):
        path = base_folder / record["path"]
        try:
            stat = path.stat()
        except OSError:
            result.missing.append(record["path"])
            continue
        if stat.st_size != record["file_size"]:
            result.missing.append(record["path"])
        elif any(p.path == str(path) for p in known.get(record["content_hash"], [])):
            result.already_there += 1
        else:
            new_rows.append({**record, "path": str(path), "mtime_ns": stat.st_mtime_ns,
                             "source": PhotoSource.BUNDLED.value, "folder_id": None})
            new_vectors.append(vector)
    if new_rows:
        with atomic(conn):
            ids = [library.insert_photo(conn, row) for row in new_rows]
            records = library.photos_by_ids(conn, ids)
            store_photo_vectors(conn, model, [records[i] for i in ids], np.stack(new_vectors))
    result.imported = len(new_rows)
    return result
