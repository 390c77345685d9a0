"""The chat pane's work off the GUI thread: importing exports, listing chats, asking, reading a chat.

Each function runs inside a ``ui.workers.Worker`` (first argument: the ``WorkerContext``), opens its
own database connection there and loads models there (never on the GUI thread). Asking and importing
are generators: what they yield reaches the pane, in order, through ``signals.yielded``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gallery_app.core.chat import embedder_switch
from gallery_app.core.chat.events import AskEvent, MatchesFound, Status, StatusKind
from gallery_app.core.chat.evidence import PassageLine, match_lines
from gallery_app.core.chat.importer import ImportSummary, import_chat
from gallery_app.core.chat.prompting import Conversation
from gallery_app.core.chat.repository import ChatInfo, StoredMessage, chat_messages, get_chat, list_chats
from gallery_app.core.chat.session import EVERY_SOURCE, ChatSession
from gallery_app.core.errors import AppError, Cancelled, ModelError
from gallery_app.core.models import loading, sources
from gallery_app.core.models.catalog import ALL_SPECS
from gallery_app.core.models.specs import Role
from gallery_app.core.photos.chat_photos import photos_of_messages
from gallery_app.core.photos.library import PhotoRecord
from gallery_app.ui.workers import WorkerContext

log = logging.getLogger(__name__)


# --- what the workers yield besides the core's events (core.chat.events) ----------------------------
@dataclass(frozen=True)
class LlmMissing:
    """No language model: the passages are still shown, and this says how to get one."""

    error: AppError


@dataclass(frozen=True)
class PassageLines:
    """Right after MatchesFound: per passage (``Match.key``), the lines its card shows, the best-matching ones
    marked."""

    lines: dict[tuple[str, int], list[PassageLine]]


@dataclass(frozen=True)
class Imported:
    path: Path
    summary: ImportSummary


@dataclass(frozen=True)
class ImportFailed:
    path: Path
    error: AppError


@dataclass(frozen=True)
class ChatContents:
    chat: ChatInfo | None
    messages: list[StoredMessage]
    #: Message id → the gallery photo it sent, drawn in place of its "<attached: NAME>".
    photos: dict[int, PhotoRecord] = field(default_factory=dict)


# --- jobs -------------------------------------------------------------------------------------------
def load_chats(context: WorkerContext, services) -> list[ChatInfo]:
    with services.connect() as conn:
        return list_chats(conn)


def load_chat(context: WorkerContext, services, chat_id: int) -> ChatContents:
    with services.connect() as conn:
        messages = chat_messages(conn, chat_id)
        photos = photos_of_messages(conn, [message.id for message in messages if message.attachment])
        return ChatContents(get_chat(conn, chat_id), messages, photos)


def import_files(context: WorkerContext, services,
                 paths: Sequence[Path]) -> Iterator[Status | Imported | ImportFailed]:
    """Imports each file in turn; a file that is not a chat is reported and the others still go in.

    The photos of an export join the gallery, embedded when the CLIP model is here and recorded without
    vectors otherwise (the summary says so): a missing photo model never stops a chat import. The status
    bar names each step ("Adding photos…", then "Embedding messages…") with its own progress."""
    if not services.loaded(Role.TEXT_EMBEDDER):
        yield Status(StatusKind.LOADING_EMBEDDER)
    embedder = services.text_embedder()  # ModelNotAvailable ends the job with its message and hint
    vision = _clip_vision_if_here(services)
    stage = _StageSteps(context, photos_added=lambda: services.data_changed.emit("photos"))
    with services.connect() as conn:
        for path in paths:
            if context.cancelled:
                raise Cancelled("The import was cancelled.")
            yield Status(StatusKind.READING_FILE, path.name)
            stage.reset()
            try:
                summary = import_chat(conn, Path(path), embedder, progress=stage.progress,
                                      cancel=lambda: context.cancelled, vision=vision)
            except Cancelled:
                raise
            except AppError as error:
                yield ImportFailed(Path(path), error)
                continue
            except Exception as exc:  # a bug, or a file no check foresaw: logged, reported, not fatal
                log.exception("importing %s failed", path)
                yield ImportFailed(Path(path), AppError(f"{path.name} could not be imported ({type(exc).__name__}: {exc})."))
                continue
            finally:
                stage.finish()  # also after a cancel or a failure: the photos added so far are in the gallery
            yield Imported(Path(path), summary)


def _clip_vision_if_here(services):
    """The CLIP vision model, or None when it is missing or unusable (the photos then wait for it)."""
    try:
        return services.clip_vision()
    except ModelError as missing:
        log.info("chat photos are imported without vectors: %s", missing)
        return None


class _StageSteps:
    """Turns the importer's stages into the job's steps and progress: "photos" (the export's photos into the
    gallery), then "embedded" (the passages' vectors). The photo grid hears of new photos as soon as they are
    in, not after the passages (which take longer)."""

    def __init__(self, context: WorkerContext, photos_added: Callable[[], None]):
        self.context = context
        self.photos_added = photos_added
        self.reset()

    def reset(self) -> None:
        """A new file: its steps start afresh."""
        self.step: StatusKind | None = None
        self.photos_pending = False  # photos were (maybe) added and the grid was not told yet

    def progress(self, stage: str, done: int, total: int) -> None:
        if stage == "photos":
            if self.step is StatusKind.EMBEDDING_MESSAGES:
                return  # the photos were done: the importer's last report repeats it
            self.photos_pending = True
            self._enter(StatusKind.ADDING_PHOTOS)
            self.context.progress(done, total)
            if done >= total:
                self.finish()
                # Embedding comes next, and reports its first progress only after two batches (with the
                # estimate): the label moves on now rather than show finished photos meanwhile.
                self._enter(StatusKind.EMBEDDING_MESSAGES)
        elif stage == "embedded":
            self._enter(StatusKind.EMBEDDING_MESSAGES)
            self.context.progress(done, total)

    def finish(self) -> None:
        if self.photos_pending:
            self.photos_pending = False
            self.photos_added()

    def _enter(self, step: StatusKind) -> None:
        if step is not self.step:
            self.step = step
            self.context.step(Status(step).text)


def switch_embedder(context: WorkerContext, services, setting: str) -> str:
    """Embeds every chat with the text embedder ``setting`` ("" for the default) and switches to it once
    complete (``core.chat.embedder_switch``); returns its name. Search keeps the embedder used meanwhile.

    A catalog model not on this computer yet is downloaded first, as the Models dialog would (resumable and
    verified): choosing it in Settings is enough."""
    spec = ALL_SPECS.get(setting)
    if spec is not None and spec.downloadable and sources.locate(spec) is None:
        context.step(f"Downloading {spec.name}…")
        sources.fetch(spec, progress=context.progress, cancel=lambda: context.cancelled)
        context.step(Status(StatusKind.EMBEDDING_MESSAGES).text)
    embedder = loading.open_text_embedder(setting or Role.TEXT_EMBEDDER.value, threads=services.settings.threads)
    try:
        def progress(stage: str, done: int, total: int) -> None:
            if stage == "embedded":
                context.progress(done, total)

        with services.connect() as conn:
            embedder_switch.switch_embedder(conn, embedder, setting, progress=progress,
                                            cancel=lambda: context.cancelled)
        return embedder.spec.name
    finally:
        embedder.release()


def ask(context: WorkerContext, services, question: str, conversation: Conversation,
        chats: Sequence[int] | None, *, notes: Sequence[int] | None = None,
        sources: frozenset[str] = EVERY_SOURCE) -> Iterator[AskEvent | LlmMissing | PassageLines]:
    """Yields Status notes, then the session's events (see ``ChatSession.ask``), with PassageLines right
    after MatchesFound. ``chats``, ``notes`` (folder ids) and ``sources``: what is searched (``ChatSession``).

    The conversation object belongs to the pane; one question runs at a time, so the session adds
    this turn to it when the answer is complete, and the next question is a follow-up of this one.
    """
    if not services.loaded(Role.TEXT_EMBEDDER):
        yield Status(StatusKind.LOADING_EMBEDDER)
    embedder = services.text_embedder()
    llm, missing = None, None
    try:
        llm = services.chat_llm()  # cheap: the session reads the weights once the passages are out
    except ModelError as error:
        missing = error
    second_reading = services.second_reading()
    if context.cancelled:
        raise Cancelled()
    with services.connect() as conn:
        session = ChatSession(conn, embedder, llm, services.settings.ask_options,
                              chats=list(chats) if chats else None, conversation=conversation,
                              notes=list(notes) if notes else None, sources=sources, second_reading=second_reading)
        if missing is not None:
            yield LlmMissing(missing)
        else:
            yield Status(StatusKind.SEARCHING)
        for event in session.ask(question, cancel=lambda: context.cancelled):
            yield event
            if isinstance(event, MatchesFound) and event.retrieval.matches:
                yield PassageLines({m.key: match_lines(conn, m) for m in event.retrieval.matches})
