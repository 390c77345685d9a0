"""Which photos a view or a search keeps: all, one folder's, one chat's, and a range of days.

One filter serves the grid (as SQL on ``photos``) and the vector search (a set of photo ids for the
folder or chat, the day range as a filter on the vectors' ``taken_day``), so a search inside a chat or
a month finds exactly the photos the grid shows for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from gallery_app.core.errors import AppError


def day_number(day: date) -> int:
    """20240518 for 18 May 2024: the vectors' ``taken_day``, comparable as a number."""
    return day.year * 10000 + day.month * 100 + day.day


def day_number_of(iso_time: str) -> int:
    """The ``taken_day`` of an ISO time such as ``2024-05-18T16:02:00``."""
    return int(iso_time[:10].replace("-", ""))


@dataclass(frozen=True)
class PhotoFilter:
    chat_id: int | None = None
    folder_id: int | None = None
    since: date | None = None  # first day kept
    until: date | None = None  # last day kept

    def __post_init__(self):
        if self.chat_id is not None and self.folder_id is not None:
            raise AppError("Show the photos of one chat or of one folder, not both at once.")
        if self.since and self.until and self.since > self.until:
            raise AppError(f"The range starts on {self.since:%d %b %Y}, after it ends ({self.until:%d %b %Y}).",
                           hint="Choose a start date on or before the end date.")

    @property
    def is_everything(self) -> bool:
        return self == ALL_PHOTOS

    @property
    def limits_collection(self) -> bool:
        return self.chat_id is not None or self.folder_id is not None

    def sql(self) -> tuple[str, list[Any]]:
        """``" WHERE …"`` on ``photos`` (or ``""``) and its parameters."""
        clauses, params = [], []
        if self.chat_id is not None:
            clauses.append("id IN (SELECT photo_id FROM chat_photos WHERE chat_id = ?)")
            params.append(int(self.chat_id))
        if self.folder_id is not None:
            clauses.append("folder_id = ?")
            params.append(int(self.folder_id))
        if self.since is not None:
            clauses.append("taken_at >= ?")
            params.append(self.since.isoformat())
        if self.until is not None and self.until < date.max:
            clauses.append("taken_at < ?")  # before the next day: the whole last day is kept
            params.append(date.fromordinal(self.until.toordinal() + 1).isoformat())
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def vector_where(self, collection_ids: list[int] | None) -> dict[str, Any]:
        """The vector search's filters: ``collection_ids`` (the folder's or chat's photos) and the days."""
        where: dict[str, Any] = {}
        if collection_ids is not None:
            where["rowid"] = ("in", collection_ids)
        days = []
        if self.since is not None:
            days.append((">=", day_number(self.since)))
        if self.until is not None:
            days.append(("<=", day_number(self.until)))
        if days:
            where["taken_day"] = days
        return where


ALL_PHOTOS = PhotoFilter()
