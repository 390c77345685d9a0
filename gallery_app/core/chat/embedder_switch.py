"""Moving every chat to another text embedder without a moment of broken search.

Each embedder has its own vector table, so the new one is filled beside the old: search (which uses
the embedder chosen, ``models.choices``) keeps the old table until the new one holds a vector for
every window. Then, under the write lock, so that no import can add a window between the check and
the switch, the new embedder becomes the one chosen. An import that ran meanwhile added windows to
the old table only; they are embedded before the switch. Cancelled or killed, the old embedder stays
in use and the next run embeds only what is still missing (the batches are committed one by one).
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from gallery_app.core.chat.importer import ImportEstimate, ImportProgress, reindex
from gallery_app.core.chat.repository import missing_window_vectors
from gallery_app.core.errors import Cancelled
from gallery_app.core.models import choices
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.models.specs import Role
from gallery_app.core.notes.indexer import embed_missing
from gallery_app.core.notes.repository import missing_chunk_vectors
from gallery_app.core.store import atomic


def switch_embedder(conn: apsw.Connection, embedder: TextEmbedder, setting: str, *,
                    progress: ImportProgress | None = None, cancel: Callable[[], bool] | None = None,
                    on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embeds every window and note chunk ``embedder`` lacks, then makes ``setting`` the text embedder used;
    returns how many windows and chunks it embedded. ``Cancelled`` (from ``cancel``) leaves the embedder used as it was."""
    embedded = 0
    while True:
        # One bar over both: the chats' windows first, then the notes' chunks.
        windows, chunks = missing_window_vectors(conn, embedder), missing_chunk_vectors(conn, embedder)

        def chats_progress(stage: str, done: int, total: int) -> None:
            if progress:
                progress(stage, done, total + chunks if stage == "embedded" else total)

        def notes_progress(_stage: str, done: int, total: int) -> None:
            if progress:
                progress("embedded", windows + done, windows + total)

        try:
            embedded += reindex(conn, embedder, progress=chats_progress, cancel=cancel, on_estimate=on_estimate)
            embedded += embed_missing(conn, embedder, progress=notes_progress, cancel=cancel)
        except Cancelled:
            spec = getattr(embedder, "spec", None)
            notes = missing_chunk_vectors(conn, embedder)
            raise Cancelled(
                f"The switch to {spec.name if spec else embedder.model_key} was stopped with "
                f"{missing_window_vectors(conn, embedder):,} passages"
                + (f" and {notes:,} note chunks" if notes else "") + " still to embed; search keeps using the "
                "text embedder it had.", hint="Run it again to continue: what was embedded is kept.") from None
        with atomic(conn):
            if missing_window_vectors(conn, embedder) == 0 and missing_chunk_vectors(conn, embedder) == 0:
                choices.choose(Role.TEXT_EMBEDDER, setting)
                return embedded
