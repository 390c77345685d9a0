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
from gallery_app.core.store import atomic


def switch_embedder(conn: apsw.Connection, embedder: TextEmbedder, setting: str, *,
                    progress: ImportProgress | None = None, cancel: Callable[[], bool] | None = None,
                    on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embeds every window ``embedder`` lacks, then makes ``setting`` the text embedder used; returns how many
    windows it embedded. ``Cancelled`` (from ``cancel``) leaves the embedder used as it was."""
    embedded = 0
    while True:
        try:
            embedded += reindex(conn, embedder, progress=progress, cancel=cancel, on_estimate=on_estimate)
        except Cancelled:
            spec = getattr(embedder, "spec", None)
            raise Cancelled(
                f"The switch to {spec.name if spec else embedder.model_key} was stopped with "
                f"{missing_window_vectors(conn, embedder):,} passages still to embed; search keeps using the "
                "text embedder it had.", hint="Run it again to continue: what was embedded is kept.") from None
        with atomic(conn):
            if missing_window_vectors(conn, embedder) == 0:
                choices.choose(Role.TEXT_EMBEDDER, setting)
                return embedded
