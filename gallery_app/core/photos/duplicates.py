"""Groups of copies of one photo, found three ways and joined: identical files (the stored content hash),
the same picture resized or re-encoded (the perceptual hash; no model needed), and, when a CLIP model is
here, photos whose vectors are nearly the same (``PhotoSearch.duplicates`` passes those pairs in).

A pair found by any of them joins its two photos' groups, so a group can hold an original, its
byte-identical backup and a smaller copy sent in a chat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import apsw

from gallery_app.core.photos.library import PhotoRecord, photos_by_ids
from gallery_app.core.photos.perceptual_hash import MAX_DISTANCE, close_pairs, fill_missing, stored_hashes

#: How a pair was found, strongest first; a group says which of them it holds.
IDENTICAL, RESIZED, LOOKS_ALIKE = "identical", "resized", "looks alike"


@dataclass
class DuplicateGroup:
    photos: list[PhotoRecord]
    #: The lowest CLIP similarity among the pairs CLIP found; None when CLIP found none of them (or was not asked).
    lowest_similarity: float | None = None
    #: (photo id, photo id, similarity) of the pairs CLIP found.
    pairs: list[tuple[int, int, float]] = field(default_factory=list)
    #: Which ways found the group's pairs: IDENTICAL, RESIZED, LOOKS_ALIKE.
    found_as: frozenset[str] = frozenset()

    def describe(self) -> str:
        """"3 photos: identical files, resized or re-encoded copies" — what a person reads as the group's title."""
        words = []
        if IDENTICAL in self.found_as:
            words.append("identical files")
        if RESIZED in self.found_as:
            words.append("resized or re-encoded copies")
        if LOOKS_ALIKE in self.found_as and self.lowest_similarity is not None:
            words.append(f"look alike (similarity ≥ {self.lowest_similarity:.3f})")
        return f"{len(self.photos)} photos: " + ", ".join(words)


def identical_pairs(conn: apsw.Connection) -> list[tuple[int, int]]:
    """(first id, other id) for every photo whose content hash an earlier photo has too."""
    pairs = []
    rows = conn.execute("SELECT group_concat(id) FROM (SELECT id, content_hash FROM photos ORDER BY id) "
                        "GROUP BY content_hash HAVING count(*) > 1")
    for (ids,) in rows:
        first, *others = [int(i) for i in ids.split(",")]
        pairs.extend((first, other) for other in others)
    return pairs


def resized_pairs(conn: apsw.Connection, max_distance: int = MAX_DISTANCE) -> list[tuple[int, int]]:
    """(id, id) of photos whose perceptual hashes are at most ``max_distance`` bits apart."""
    ids, hashes = stored_hashes(conn)
    return [(int(ids[i]), int(ids[j])) for i, j, _bits in close_pairs(hashes, max_distance)]


def duplicate_groups(conn: apsw.Connection, clip_pairs: Iterable[tuple[int, int, float]] = (), *,
                     max_distance: int = MAX_DISTANCE, cancel: Callable[[], bool] = lambda: False,
                     ) -> list[DuplicateGroup]:
    """Every group of two or more copies, biggest first; ``clip_pairs`` are (id, id, similarity) from CLIP.

    Photos indexed before the perceptual hash existed get theirs now (stored, so only once)."""
    clip_pairs = list(clip_pairs)
    fill_missing(conn, cancel=cancel)
    found: dict[tuple[int, int], str] = {}
    for kind, pairs in ((LOOKS_ALIKE, [(a, b) for a, b, _ in clip_pairs]), (RESIZED, resized_pairs(conn, max_distance)),
                        (IDENTICAL, identical_pairs(conn))):
        for a, b in pairs:
            found[(min(a, b), max(a, b))] = kind  # the strongest way wins: identical files are also alike
    members = _connected(found)
    records = photos_by_ids(conn, sorted({photo for group in members for photo in group}))
    groups = []
    for group in members:
        inside = set(group)
        clip = [(a, b, s) for a, b, s in clip_pairs if a in inside]
        kinds = frozenset(kind for (a, _b), kind in found.items() if a in inside)
        photos = [records[photo] for photo in group if photo in records]
        if len(photos) > 1:
            groups.append(DuplicateGroup(photos, min((s for *_, s in clip), default=None), clip, kinds))
    return sorted(groups, key=lambda g: (-len(g.photos), g.photos[0].id))


def _connected(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected groups of photo ids that ``pairs`` join, each sorted."""
    parent: dict[int, int] = {}

    def root(item: int) -> int:
        parent.setdefault(item, item)
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for a, b in pairs:
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for item in list(parent):
        groups.setdefault(root(item), []).append(item)
    return [sorted(group) for group in groups.values()]
