"""Importing a WhatsApp export: parse → messages → passages → windows → embeddings, in resumable steps.

Two kinds of step write, both through ``repository``. First one transaction stores the new messages
with their passages and windows, after finding under the same write lock which chat they belong to
(so the same export imported twice at once is one chat). Then the windows are embedded a batch at a
time, each batch committed with its vectors: a cancelled or killed import keeps what it finished,
and importing the file again (or ``reindex``) embeds only the windows still missing. Search meanwhile
works on the windows that have vectors and counts the others as not indexed yet; each write
transaction is short, so other writers wait seconds, not the hours a large chat takes to embed.
The same export imported twice adds nothing; a longer export of a chat already here adds only its
new messages, and only the days that gained messages are cut into passages again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path

import apsw
import numpy as np

from gallery_app.core.chat.chunking import (SEARCHED_CHARS_PER_MESSAGE, Chunk, ChunkingConfig, ChunkInput, chunk_messages,
                                           is_oversized)
from gallery_app.core.chat.conversations import conversation_of, conversation_starts
from gallery_app.core.chat.export_file import ChatExport, ChatFileError, read_export
from gallery_app.core.chat.messages import Message, MessageKind, ParsedChat
from gallery_app.core.chat.repository import (
    add_chat, add_messages, chat_participants, chat_title, ensure_window_table, find_same_chat, messages_before_day,
    messages_on_days, record_import, replace_chunks, store_window_vectors, windows_without_vectors,
)
from gallery_app.core.chat.whatsapp import is_placeholder, parse_chat_text
from gallery_app.core.errors import Cancelled
from gallery_app.core.eta import describe_duration
from gallery_app.core.models.runtimes.clip import ClipVisionEncoder
from gallery_app.core.models.runtimes.embedders import TextEmbedder
from gallery_app.core.photos.chat_photos import ChatPhotoSummary, import_chat_photos, photo_captions
from gallery_app.core.store import atomic
from gallery_app.core.store.connection import data_version, refuse_if_damaged

#: (stage, done, total); stages: "parsed", "photos" (the chat's photos into the gallery), "embedded", "stored".
ImportProgress = Callable[[str, int, int], None]
EMBED_BATCH = 32


#: Batches embedded (and timed) before the time the rest will take is estimated.
ESTIMATE_AFTER_BATCHES = 2


@dataclass(frozen=True)
class ImportEstimate:
    """How long embedding a chat's passages will take, from the measured speed of its first batches."""

    passages: int
    seconds: float
    model_name: str

    def describe(self) -> str:
        return f"About {self.passages:,} passages to embed — {describe_duration(self.seconds)} with {self.model_name}."


@dataclass
class ImportSummary:
    chat_id: int
    title: str
    new_chat: bool
    messages_in_file: int
    messages_added: int
    participants: list[str]
    first: datetime | None
    last: datetime | None
    skipped_lines: int
    attachments: int
    media_placeholders: int
    passages_added: int
    windows_added: int = 0
    #: How long embedding was expected to take (measured on its first batches), if there was much to embed.
    estimate: ImportEstimate | None = None
    #: The photos its messages sent, added to the gallery (None: none to add).
    photos: ChatPhotoSummary | None = None
    #: Of the messages added, WhatsApp's own notices (encryption, "X added Y"): not counted as messages
    #: where the chat list counts them.
    notices_added: int = 0
    notices_in_file: int = 0
    #: Lines that look like a header but whose date contradicts the file's date order (``ParsedChat.date_conflicts``).
    date_conflicts: list[tuple[int, str, str]] = field(default_factory=list)
    #: Messages longer than WhatsApp sends (a pasted file): searched by their first part only.
    oversized: int = 0

    def _added(self, new: str = "") -> str:
        """The people's messages added, as the chat list counts them, and WhatsApp's notices apart."""
        said, notices = self.messages_added - self.notices_added, self.notices_added
        messages = f"{said:,} {new}message{'' if said == 1 else 's'}"
        notes = f"{notices:,} WhatsApp notice{'' if notices == 1 else 's'}"
        return notes if notices and not said else f"{messages} and {notes}" if notices else messages

    def describe(self) -> str:
        span = f"{self.first:%d %b %Y} to {self.last:%d %b %Y}" if self.first and self.last else ""
        if self.messages_added == 0 and self.windows_added:
            head = (f"Finished importing “{self.title}”: all {self.messages_in_file - self.notices_in_file:,} messages were imported before, "
                    f"and its last {self.windows_added:,} passages are now searchable.")
        elif self.messages_added == 0:
            head = f"“{self.title}” is already up to date: all {self.messages_in_file - self.notices_in_file:,} messages were imported before."
        elif self.new_chat:
            head = f"Imported “{self.title}”: {self._added()}" + (f" from {span}." if span else ".")
        else:
            head = f"Added {self._added('new ')} to “{self.title}” (now up to {self.last:%d %b %Y})."
        details = [f"{len(self.participants)} people: {', '.join(self.participants)}"] if self.participants else []
        if self.attachments:
            details.append(f"{self.attachments} attachments")
        if self.media_placeholders:
            details.append(f"{self.media_placeholders} media not included in the export")
        if self.skipped_lines:
            details.append(f"{self.skipped_lines} lines before the first message could not be read")
        if self.oversized:
            details.append(f"{self.oversized} message{' is' if self.oversized == 1 else 's are'} longer than WhatsApp "
                           f"sends and searched by {'its' if self.oversized == 1 else 'their'} first "
                           f"{SEARCHED_CHARS_PER_MESSAGE:,} characters (the chat shows {'it' if self.oversized == 1 else 'them'} whole)")
        if self.date_conflicts:
            lines = ", ".join(str(line) for line, _text, _why in self.date_conflicts[:5])
            more = "…" if len(self.date_conflicts) > 5 else ""
            count = len(self.date_conflicts)
            details.append(f"{count} line{'' if count == 1 else 's'} with a date that contradicts the file's other "
                           f"dates kept as text of the message above (line {lines}{more})")
        text = head + (" " + "; ".join(details) + "." if details else "")
        photos = self.photos.describe() if self.photos else ""
        return text + (" " + photos if photos else "")


def message_keys(messages: list[Message]) -> list[str]:
    """A stable identity per message; a repeat of the same text in the same minute gets its own key."""
    seen: Counter[tuple] = Counter()
    keys = []
    for message in messages:
        identity = (message.timestamp.isoformat(), message.sender or "", message.text)
        seen[identity] += 1
        raw = json.dumps([*identity, seen[identity]], ensure_ascii=False)
        keys.append(hashlib.sha1(raw.encode("utf-8")).hexdigest())
    return keys


#: A quoted name in a system line: the group's name or subject, set or changed, in any language
#: ('created group "Zo stuur ik het maar 1x"', 'changed the subject to “More than Squash”').
_QUOTED_NAME = re.compile(r'["“„«‘\'].{1,200}?["”“»’\']')


def _chunkable(message_id: int, timestamp: datetime, sender: str | None, text: str,
               kind: MessageKind, conversation: int) -> ChunkInput | None:
    if kind is MessageKind.SYSTEM and _QUOTED_NAME.search(text):
        # "what is this group called?" is answered here
        return ChunkInput(message_id, timestamp, "", text, conversation)
    if kind is not MessageKind.TEXT or not sender or not text.strip() or is_placeholder(text):
        return None  # other system lines, media placeholders and deleted messages carry nothing to find
    return ChunkInput(message_id, timestamp, sender, text, conversation)


def _provisional_id(index: int) -> int:
    """The id a new message (the ``index``-th of an import's) goes by until it is stored; never a real id."""
    return -1 - index


@dataclass
class _Plan:
    """What one import will write: which chat, which messages are new, the passages of the days they touch."""

    chat_id: int | None
    known: frozenset[str]
    fresh: list[tuple[str, Message]]
    affected_days: set[date]
    chunks: list[Chunk]
    windows: list[list[tuple[list[int], str]]]


def _plan(conn: apsw.Connection, keys: list[str], messages: list[Message], embedder: TextEmbedder,
          config: ChunkingConfig, match: tuple[int | None, frozenset[str]]) -> _Plan:
    chat_id, known = match
    fresh = [(key, message) for key, message in zip(keys, messages) if key not in known]
    affected_days = {message.timestamp.date() for _key, message in fresh}
    stored = messages_on_days(conn, chat_id, affected_days) if chat_id is not None else []
    # Stored messages came from an earlier export of this chat: its lines are this file's, near enough.
    starts = conversation_starts(messages)
    inputs = [item for m in stored if (item := _chunkable(m.id, m.timestamp, m.sender, m.text, m.kind,
                                                          conversation_of(m.line or 0, starts)))]
    inputs += [item for index, (_key, m) in enumerate(fresh)
               if (item := _chunkable(_provisional_id(index), m.timestamp, m.sender, m.text, m.kind,
                                      conversation_of(m.line, starts)))]
    inputs.sort(key=lambda item: (item.timestamp.date(), item.conversation, item.timestamp, item.id >= 0, abs(item.id)))
    # The stored message before the first day re-cut leads into its first passage, as in a whole import.
    earlier = messages_before_day(conn, chat_id, min(affected_days)) if chat_id is not None and affected_days else []
    before = next(([item] for m in earlier if (item := _chunkable(m.id, m.timestamp, m.sender, m.text, m.kind,
                                                                  conversation_of(m.line or 0, starts)))), [])
    chunks = chunk_messages(inputs, embedder.count_tokens, max_tokens=embedder.max_tokens, config=config,
                            before=before)
    return _Plan(chat_id, known, fresh, affected_days, chunks, [chunk.windows(config) for chunk in chunks])


def import_chat(conn: apsw.Connection, source: Path | ChatExport, embedder: TextEmbedder, *,
                progress: ImportProgress | None = None, cancel: Callable[[], bool] | None = None,
                config: ChunkingConfig = ChunkingConfig(), title: str | None = None,
                on_estimate: Callable[[ImportEstimate], None] | None = None,
                vision: ClipVisionEncoder | None = None) -> ImportSummary:
    """Import (or continue importing) one export; ``on_estimate`` hears how long embedding will take.

    The photos its messages sent go into the gallery (``chat_photos``), embedded by ``vision`` when given,
    recorded without vectors otherwise; that happens before the passages are embedded, which takes longer."""
    export = source if isinstance(source, ChatExport) else read_export(Path(source))
    parsed: ParsedChat = parse_chat_text(export.text)
    messages = parsed.messages
    if not messages:
        raise ChatFileError(f"No WhatsApp messages were found in {export.source.name}.",
                            hint="Choose the _chat.txt or the .zip WhatsApp made (More › Export chat).")
    if progress:
        progress("parsed", len(messages), len(messages))
    keys = message_keys(messages)
    refuse_if_damaged(conn)
    # Passages are cut before the write lock is taken (it takes seconds for a large chat); under the
    # lock the plan is only checked, and made again if another import changed this chat meanwhile.
    version = data_version(conn)
    plan = _plan(conn, keys, messages, embedder, config, find_same_chat(conn, keys))
    if cancel is not None and cancel():
        raise Cancelled("The import was cancelled; nothing was changed.")

    with atomic(conn):
        if data_version(conn) != version:
            match = find_same_chat(conn, keys)
            if match != (plan.chat_id, plan.known):
                plan = _plan(conn, keys, messages, embedder, config, match)
        chat_id = plan.chat_id
        new_chat = chat_id is None
        ensure_window_table(conn, embedder)  # an embedder whose table disagrees is refused before anything is written
        if new_chat:
            chat_id = add_chat(conn, title or export.title, export.source, parsed.date_order)
        real_ids = {_provisional_id(index): message_id
                    for index, message_id in enumerate(add_messages(conn, chat_id, plan.fresh))}
        replace_chunks(conn, chat_id, plan.affected_days, *_with_real_ids(plan, real_ids))
        record_import(conn, chat_id, export.source, messages_in_file=len(messages), messages_added=len(plan.fresh),
                      skipped_lines=len(parsed.skipped_lines), attachments=len(parsed.attachments))
    estimates: list[ImportEstimate] = []

    def estimated(estimate: ImportEstimate) -> None:
        estimates.append(estimate)
        if on_estimate:
            on_estimate(estimate)

    photos = import_chat_photos(conn, export, chat_id, photo_captions(messages, keys), vision,
                                progress=(lambda done, total: progress("photos", done, total)) if progress else None,
                                cancel=cancel)
    if photos.cancelled:
        raise Cancelled("The import was cancelled: the messages are saved, and the photos added so far are kept.",
                        hint="Import the same file again to finish.")
    # Also the windows an earlier, interrupted import of this chat left without vectors.
    embedded = _embed_missing(conn, embedder, chat_id, progress, cancel, estimated)
    if progress:
        progress("stored", len(plan.chunks), len(plan.chunks))
    stamps = [m.timestamp for m in messages if m.kind is not MessageKind.SYSTEM]
    return ImportSummary(
        chat_id=chat_id, title=chat_title(conn, chat_id), new_chat=new_chat, messages_in_file=len(messages),
        messages_added=len(plan.fresh), participants=chat_participants(conn, [chat_id]),
        first=min(stamps) if stamps else None, last=max(stamps) if stamps else None,
        skipped_lines=len(parsed.skipped_lines), attachments=len(parsed.attachments),
        media_placeholders=sum(m.kind is MessageKind.MEDIA for m in messages), passages_added=len(plan.chunks),
        notices_added=sum(m.kind is MessageKind.SYSTEM for _key, m in plan.fresh),
        notices_in_file=sum(m.kind is MessageKind.SYSTEM for m in messages),
        windows_added=embedded, estimate=estimates[0] if estimates else None, photos=photos if photos.found or photos.restored else None,
        date_conflicts=parsed.date_conflicts, oversized=sum(is_oversized(m.text) for _key, m in plan.fresh),
    )


def _with_real_ids(plan: _Plan, real_ids: dict[int, int]) -> tuple[list[Chunk], list[list[tuple[list[int], str]]]]:
    """The plan's passages and windows with the stored messages' ids in place of the provisional ones."""
    chunks = [replace(chunk, message_ids=[real_ids.get(i, i) for i in chunk.message_ids]) for chunk in plan.chunks]
    windows = [[([real_ids.get(i, i) for i in members], text) for members, text in chunk_windows]
               for chunk_windows in plan.windows]
    return chunks, windows


def _embed_missing(conn: apsw.Connection, embedder: TextEmbedder, chat_id: int | None,
                   progress: ImportProgress | None, cancel: Callable[[], bool] | None,
                   on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embed the windows (of ``chat_id``, or all) the embedder lacks, committing batch by batch."""
    rows = windows_without_vectors(conn, embedder, chat_id)
    # A batch is padded to its longest text, so texts of similar length are embedded together (about 40%
    # less model time with MiniLM on the demo chat). Lengths in the model's own tokens, not characters:
    # on the English real chat that pads 0.5% of the tokens instead of 6% (counting costs under 1%).
    # The batches run in a shuffled order, so progress so far predicts the time left (shortest first
    # would not).
    tokens = [embedder.count_tokens(window.text) for window in rows]
    order = sorted(range(len(rows)), key=tokens.__getitem__)
    batches = [order[start:start + EMBED_BATCH] for start in range(0, len(rows), EMBED_BATCH)]
    batches = [batches[number] for number in np.random.default_rng(0).permutation(len(batches))]
    # Model time grows with a batch's size times its longest text: the measure of work for the estimate.
    work = [len(batch) * max(tokens[i] for i in batch) for batch in batches]
    batches = [[rows[i] for i in batch] for batch in batches]
    started, done = time.perf_counter(), 0
    for number, batch in enumerate(batches):
        if cancel is not None and cancel():
            kept = f"{done:,} of {len(rows):,} passages were embedded and are kept" if done else "no passages were embedded yet"
            raise Cancelled(f"The import was cancelled: the messages are saved, {kept}.",
                            hint="Import the same file again to finish.")
        vectors = embedder.embed_passages([window.text for window in batch])
        store_window_vectors(conn, embedder, batch, vectors)
        done += len(batch)
        if number + 1 == ESTIMATE_AFTER_BATCHES < len(batches) and on_estimate is not None:
            rate = (time.perf_counter() - started) / sum(work[:number + 1])
            on_estimate(ImportEstimate(len(rows), rate * sum(work), _model_name(embedder)))
        if progress and number + 1 >= min(ESTIMATE_AFTER_BATCHES, len(batches)):
            progress("embedded", done, len(rows))  # from the estimate on, so it is told before the bar starts
    return done


def _model_name(embedder: TextEmbedder) -> str:
    spec = getattr(embedder, "spec", None)
    return spec.name if spec is not None else embedder.model_key


def reindex(conn: apsw.Connection, embedder: TextEmbedder, *, progress: ImportProgress | None = None,
            cancel: Callable[[], bool] | None = None, on_estimate: Callable[[ImportEstimate], None] | None = None) -> int:
    """Embed every window the embedder lacks, batch by batch; returns how many."""
    return _embed_missing(conn, embedder, None, progress, cancel, on_estimate)
