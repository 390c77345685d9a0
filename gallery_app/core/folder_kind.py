"""Whether a folder is one of notes or one of photos: where a folder dropped on the window goes."""

from __future__ import annotations

import os
from pathlib import Path

from gallery_app.core.photos.preparing import PHOTO_SUFFIXES

#: Files looked at, at most: a decision for a drop must come in a moment even for a whole disk.
LOOKED_AT = 2_000


def mostly_notes(folder: Path, *, limit: int = LOOKED_AT) -> bool:
    """More notes and documents than photos among the folder's first ``limit`` files (hidden ones left out,
    as both indexers leave them out). A tie, and a folder of neither, count as photos: what a dropped
    folder always was before notes folders existed."""
    from gallery_app.core.notes.loaders import SUPPORTED_EXTENSIONS  # imports the PDF and Word readers

    notes = photos = seen = 0
    for _root, dirs, files in os.walk(folder):  # links not followed: no loop to guard against
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            suffix = os.path.splitext(name)[1].lower()
            photos += suffix in PHOTO_SUFFIXES
            notes += suffix in SUPPORTED_EXTENSIONS
            seen += 1
            if seen >= limit:
                return notes > photos
    return notes > photos
