"""The chat pane: imported chats and notes folders on the left, the conversation on the right.

Public API (what the main window calls): ``import_files(paths)``, ``ask(question)``, ``stop()``,
``new_conversation()``, ``refresh_chats()``, ``show_chat_photo(sent)`` (a photo's *Open in chat*), ``notes``
(the notes folders: ``notes.choose_folder()``, ``notes.add_folder(path)``, ``notes.rescan_all()``),
``open_note(match)`` and the ``busy_changed(bool)`` signal. Everything slow runs in workers started through
``Services.run``; their events arrive here in order, on the GUI thread.
"""

from __future__ import annotations

from pathlib import Path

import shiboken6
from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QLabel, QListView, QPushButton, QSplitter, \
    QStackedWidget, QVBoxLayout, QWidget

from gallery_app.core.chat.events import Answer, AnswerPiece, AskEvent, MatchesFound, Status
from gallery_app.core.chat.export_file import is_chat_export
from gallery_app.core.chat.prompting import Conversation
from gallery_app.core.chat.session import CHATS, EVERY_SOURCE, NOTES
from gallery_app.core.errors import AppError
from gallery_app.core.photos.chat_photos import ChatPhoto
from gallery_app.ui.chat import jobs
from gallery_app.ui.chat.chat_list import ChatIdRole, ChatListDelegate, ChatListModel
from gallery_app.ui.chat.conversation import STYLE, AnswerTurn, ConversationView, PassagesTurn, QuestionBox, \
    TextTurn
from gallery_app.ui.chat.note_viewer import NoteViewer, open_note
from gallery_app.ui.chat.notes_section import NotesSection
from gallery_app.ui.chat.viewer import PHOTO_NOTE, ChatViewer
from gallery_app.ui.plain_text import plain_label
from gallery_app.ui.workers import Worker

EMPTY_NO_CHATS = ("Drop a WhatsApp export (_chat.txt or .zip) here, or File → Import chat…\n\n"
                  "Drop a folder of notes and documents here, or File → Add notes folder…, to ask them too.")
EMPTY_WITH_CHATS = ("Ask anything about your chats and notes — for example “Who ended up paying for the "
                    "hotel?”\n\n"
                    "Drop another WhatsApp export (_chat.txt or .zip), or a folder of notes, here to add it.")


#: What the chat viewer's header says of its highlighted message, opened from a passage or a decline.
PASSAGE_NOTE = "The highlighted message is the one of the passage that answers best."
CLOSEST_NOTE = "The highlighted message is the closest to your question."

#: A cancel keeps each finished step of an import (messages, photos, embedded batches).
IMPORT_CANCELLED = "Import cancelled: what it had finished is kept; importing the same file again continues."


class ChatPane(QWidget):
    busy_changed = Signal(bool)
    #: A ChatViewer was opened (by clicking a passage, or *Open in chat* of a photo).
    viewer_opened = Signal(object)
    #: "Similar photos" in the large view of a photo opened from a chat (the photo id).
    similar_photos_requested = Signal(int)
    #: A NoteViewer was opened (by clicking a note passage or its citation).
    note_opened = Signal(object)

    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.conversation = Conversation()
        self._ask_worker: Worker | None = None
        self._answer_turn: AnswerTurn | None = None
        self._passages_turn: PassagesTurn | None = None
        self._jobs = 0
        self.viewers: list[ChatViewer] = []
        self.note_viewers: list[NoteViewer] = []
        self._chats_problem: str | None = None
        self.setAcceptDrops(True)
        self.setStyleSheet(STYLE)

        # left: the chats ------------------------------------------------------------------------
        self.chat_model = ChatListModel(self)
        self.chat_list = QListView()
        self.chat_list.setModel(self.chat_model)
        self.chat_list.setItemDelegate(ChatListDelegate(self.chat_list))
        self.chat_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.chat_list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.chat_list.setUniformItemSizes(True)
        self.chat_list.selectionModel().selectionChanged.connect(self._selection_changed)
        self.chat_list.doubleClicked.connect(self._open_chat)
        chats_title = QLabel("<b>Chats</b>")
        self.scope_label = plain_label()  # also says why the chats could not be read
        self.scope_label.setWordWrap(True)
        self.scope_label.setObjectName("quiet")
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(8, 8, 4, 8)
        left_layout.addWidget(chats_title)
        left_layout.addWidget(self.chat_list, 1)
        self.notes = NotesSection(services)
        self.notes.selection_changed.connect(self._selection_changed)
        self.notes.folders_loaded.connect(self._update_empty)
        self.notes.folder_indexed.connect(self._notes_indexed)
        self.notes.indexing_stopped.connect(lambda text: self._add_turn(TextTurn("note", text, title="Notes folder")))
        left_layout.addWidget(self.notes)
        left_layout.addWidget(self.scope_label)
        left.setMinimumWidth(220)

        # right: the conversation ----------------------------------------------------------------
        #: The models in use or missing; the window may write into it (kept short, one line).
        self.header = plain_label()
        self.header.setWordWrap(True)
        self.header.setObjectName("quiet")
        self.header.hide()
        self.view = ConversationView()
        self.empty = plain_label(EMPTY_NO_CHATS)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setObjectName("quiet")
        self.empty.setMargin(24)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self.view)
        self.input = QuestionBox()
        self.input.submitted.connect(self._send_clicked)
        self.input.textChanged.connect(self._update_buttons)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.send_button.setToolTip("Ask (Enter)")
        self.send_button.clicked.connect(self._send_clicked)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc)")
        self.stop_button.setShortcut(Qt.Key.Key_Escape)
        self.stop_button.clicked.connect(self.stop)
        self.new_button = QPushButton("New conversation")
        self.new_button.setToolTip("Forget the questions so far: the next question is not a follow-up")
        self.new_button.clicked.connect(self.new_conversation)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        input_row = QHBoxLayout()
        input_row.addWidget(self.input, 1)
        input_row.addLayout(buttons)
        bottom_row = QHBoxLayout()
        bottom_row.addWidget(self.new_button)
        bottom_row.addStretch(1)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 8, 8, 8)
        right_layout.addWidget(self.header)
        right_layout.addWidget(self.stack, 1)
        right_layout.addLayout(input_row)
        right_layout.addLayout(bottom_row)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([320, 780])
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.setFocusProxy(self.input)

        services.data_changed.connect(self._data_changed)
        self._selection_changed()
        self._update_buttons()
        self.refresh_chats()
        self.notes.refresh()  # after the chats, as before notes existed: what a damaged store meets first

    # --- public API -----------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._jobs > 0

    @property
    def asking(self) -> bool:
        return self._ask_worker is not None

    def refresh_chats(self) -> None:
        """Reads the list of chats again (in a worker); keeps the selection by chat id."""
        worker = Worker(jobs.load_chats, self.services)
        worker.signals.result.connect(self._chats_loaded)
        worker.signals.error.connect(self._chats_unreadable)
        self.services.run(worker)

    def import_files(self, paths: list[Path]) -> Worker | None:
        """Imports WhatsApp exports in a worker (progress in the status bar and in the conversation)."""
        paths = [Path(p) for p in paths]
        if not paths:
            return None
        names = paths[0].name if len(paths) == 1 else f"{len(paths)} files"
        if len(paths) == 1 and paths[0].name == "_chat.txt" and paths[0].parent.name:
            names = f"{paths[0].parent.name}/{paths[0].name}"
        turn = self._add_turn(TextTurn("note", f"Importing {names}…"))
        worker = Worker(jobs.import_files, self.services, paths).writing("the chat import")
        worker.signals.progress.connect(turn.show_progress)
        worker.signals.step.connect(lambda text: turn.set_status(text) if shiboken6.isValid(turn) else None)
        worker.signals.yielded.connect(lambda event: self._import_event(turn, event))
        worker.signals.error.connect(lambda error: self._import_failed(turn, error))
        worker.signals.cancelled.connect(lambda: self._import_finished(turn, IMPORT_CANCELLED))
        worker.signals.result.connect(lambda _result: self._import_finished(turn, None))
        self._track(worker)
        self.services.run(worker, f"Importing {names}")
        if worker.waiting_note():  # the job's first status replaces it once its turn comes
            turn.set_status(worker.waiting_note())
        return worker

    def ask(self, question: str) -> Worker | None:
        """Asks a question (a follow-up of the conversation so far); passages first, then the answer."""
        question = question.strip()
        if not question or self.asking:
            return None
        self._add_turn(TextTurn("question", question))
        self._passages_turn = None
        self._answer_turn = self._add_turn(AnswerTurn())
        self._answer_turn.passage_clicked.connect(self._passage_clicked)
        self._answer_turn.message_clicked.connect(self._message_clicked)
        self._answer_turn.note_clicked.connect(self.open_note)
        self._answer_turn.set_status("Thinking…")
        chats, notes, sources = self.sources()
        worker = Worker(jobs.ask, self.services, question, self.conversation, chats, notes=notes, sources=sources)
        worker.signals.yielded.connect(self._ask_event)
        worker.signals.error.connect(self._ask_failed)
        worker.signals.cancelled.connect(self._ask_cancelled)
        worker.signals.finished.connect(self._ask_finished)
        self._ask_worker = worker
        self._track(worker)
        self._update_buttons()
        return self.services.run(worker)

    def stop(self) -> None:
        """Stops the answer being written (between two tokens)."""
        if self._ask_worker is not None:
            self._ask_worker.cancel()
            if self._answer_turn is not None:
                self._answer_turn.set_status("Stopping…")

    def new_conversation(self) -> None:
        """Clears the conversation; the next question is asked afresh, not as a follow-up."""
        self.stop()
        # A stopping worker keeps the old conversation object: its turn goes nowhere.
        self.conversation = Conversation()
        self._answer_turn = None
        self.view.clear()
        self._update_empty()
        self.input.setFocus()

    def selected_chat_ids(self) -> list[int]:
        rows = sorted(index.row() for index in self.chat_list.selectionModel().selectedRows())
        return [self.chat_model.index(row).data(ChatIdRole) for row in rows]

    def sources(self) -> tuple[list[int] | None, list[int] | None, frozenset[str]]:
        """(chats, notes folders, sources) a question searches: what is selected, of either list; with
        nothing selected, every chat and every notes folder."""
        chats, folders = self.selected_chat_ids(), self.notes.selected_folder_ids()
        if not chats and not folders:
            return None, None, EVERY_SOURCE
        sources = frozenset(source for source, chosen in ((CHATS, chats), (NOTES, folders)) if chosen)
        return chats or None, folders or None, sources

    def open_viewer(self, chat_id: int, highlight: list[int], title: str = "", note: str | None = None) -> ChatViewer:
        viewer = ChatViewer(self.services, chat_id, highlight, title=title, note=note, parent=self)
        viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        viewer.open_in_chat.connect(self.show_chat_photo)
        viewer.similar_requested.connect(self.similar_photos_requested)
        viewer.destroyed.connect(lambda _obj=None, v=viewer: self.viewers.remove(v) if v in self.viewers else None)
        self.viewers.append(viewer)
        viewer.show()
        self.viewer_opened.emit(viewer)
        return viewer

    def show_chat_photo(self, sent: ChatPhoto) -> ChatViewer:
        """The chat viewer at the message that sent a photo: the one already open on that chat, else a new one."""
        for viewer in self.viewers:
            if viewer.chat_id == sent.chat_id and viewer.isVisible():
                if viewer.is_loaded and viewer.model.row_of_message(sent.message_id) < 0:
                    viewer.close()  # read before a longer export added this message: open the chat afresh
                    break
                viewer.show_message(sent.message_id, PHOTO_NOTE)
                self.viewer_opened.emit(viewer)
                return viewer
        return self.open_viewer(sent.chat_id, [sent.message_id], sent.chat_title, note=PHOTO_NOTE)

    # --- jobs bookkeeping -----------------------------------------------------------------------
    def _track(self, worker: Worker) -> None:
        self._jobs += 1
        if self._jobs == 1:
            self.busy_changed.emit(True)
        worker.signals.finished.connect(self._job_finished)

    def _job_finished(self) -> None:
        self._jobs -= 1
        self._update_buttons()
        if self._jobs == 0:
            self.busy_changed.emit(False)

    def _add_turn(self, turn, before=None):
        self.view.add(turn, before=before)
        self._update_empty()
        if isinstance(turn, PassagesTurn):
            turn.passage_clicked.connect(self._passage_clicked)
        return turn

    def _update_empty(self) -> None:
        has_sources = self.chat_model.rowCount() or self.notes.model.rowCount()
        self.empty.setText(EMPTY_WITH_CHATS if has_sources else EMPTY_NO_CHATS)
        self.stack.setCurrentWidget(self.view if self.view.turns else self.empty)

    def _update_buttons(self) -> None:
        self.send_button.setEnabled(not self.asking and bool(self.input.toPlainText().strip()))
        self.stop_button.setEnabled(self.asking)

    # --- chats ----------------------------------------------------------------------------------
    def _data_changed(self, what: str) -> None:
        if what == "chats":
            self.refresh_chats()

    def _chats_unreadable(self, error: AppError) -> None:
        self._chats_problem = f"The chats could not be read: {error}"
        self.scope_label.setText(self._chats_problem)

    def _chats_loaded(self, chats) -> None:
        self._chats_problem = None
        selected = set(self.selected_chat_ids())
        self.chat_model.set_chats(chats)
        selection = self.chat_list.selectionModel()
        for chat_id in selected:
            row = self.chat_model.row_of(chat_id)
            if row >= 0:
                selection.select(self.chat_model.index(row), QItemSelectionModel.SelectionFlag.Select)
        self._selection_changed()
        self._update_empty()

    def _selection_changed(self, *_args) -> None:
        if self._chats_problem is not None:  # said until the chats are read (the notes list may change meanwhile)
            self.scope_label.setText(self._chats_problem)
            return
        count = len(self.chat_list.selectionModel().selectedRows())
        folders = len(self.notes.selected_folder_ids())
        total, notes_total = self.chat_model.rowCount(), self.notes.model.rowCount()
        if not total and not notes_total:
            self.scope_label.setText("No chats yet.")
        elif count == 0 and folders == 0:
            every = "all chats and notes folders" if notes_total else "all chats"
            self.scope_label.setText(f"Questions search {every}. Select chats{' or folders' if notes_total else ''} "
                                     "to ask about only those; double-click a chat to read it.")
        else:
            chosen = [f"{n} selected {word if n == 1 else word + 's'}"
                      for n, word in ((count, "chat"), (folders, "notes folder")) if n]
            self.scope_label.setText(f"Questions search only the {' and the '.join(chosen)}.")

    def _open_chat(self, index) -> None:
        self.open_viewer(index.data(ChatIdRole), [], index.data())

    # --- importing ------------------------------------------------------------------------------
    def _import_event(self, turn: TextTurn, event: Status | jobs.Imported | jobs.ImportFailed) -> None:
        if isinstance(event, Status):
            if shiboken6.isValid(turn):  # New conversation clears the progress turn; the import goes on
                turn.set_status(event.text)
        elif isinstance(event, jobs.Imported):
            text = event.summary.describe()
            self._add_turn(TextTurn("note", text, title="Import finished"))
            self.services.message.emit(text)
            self.services.data_changed.emit("chats")
        elif isinstance(event, jobs.ImportFailed):
            text = f"{event.path.name} could not be imported. {event.error}"
            self._add_turn(TextTurn("error", text, title="Import failed"))
            self.services.message.emit(text)

    def _import_failed(self, turn: TextTurn, error: AppError) -> None:
        self._add_turn(TextTurn("error", f"The import could not start. {error}", title="Import failed"))
        self._import_finished(turn, None)

    def _import_finished(self, turn: TextTurn, note: str | None) -> None:
        """The progress turn gives way to the per-file results (or says why there are none)."""
        if not shiboken6.isValid(turn):  # cleared by New conversation meanwhile
            if note is not None:
                self.services.message.emit(note)
        elif note is None:
            self.view.remove(turn)
            self._update_empty()
        else:
            turn.hide_progress()
            turn.set_status(note)

    # --- asking ---------------------------------------------------------------------------------
    def _send_clicked(self) -> None:
        if self.asking:
            return
        question = self.input.toPlainText()
        if question.strip() and self.ask(question):
            self.input.clear()

    def _ask_event(self, event: AskEvent | jobs.LlmMissing | jobs.PassageLines) -> None:
        turn = self._answer_turn
        if turn is None:
            return
        if isinstance(event, Status):
            turn.set_status(event.text)
            if event.kind.loads_a_model:
                self.services.message.emit(event.text)
        elif isinstance(event, jobs.LlmMissing):
            turn.set_status("")
            turn.set_text(f"Answers need a language model, and none is available. {event.error}\n"
                          "The passages below are what your chats say about it.")
        elif isinstance(event, MatchesFound):
            passages = PassagesTurn(event.retrieval, event.search_query, event.question)
            self._passages_turn = self._add_turn(passages, before=turn)  # above the answer bubble, which stays last
            turn.set_status("Writing the answer…" if event.retrieval.matches else "")
        elif isinstance(event, jobs.PassageLines):
            if self._passages_turn is not None:
                self._passages_turn.set_lines(event.lines)
        elif isinstance(event, Answer):
            if event.text:
                # Also when the grounding check replaced what the model wrote, or nothing was streamed.
                turn.show_answer(event)
            elif not turn.streamed_text():
                turn.set_text("No answer was written.")
            turn.set_status("")
        elif isinstance(event, AnswerPiece):
            if not turn.streamed_text():
                self.services.message.emit("")  # the model is loaded: its status bar note is over
            turn.append(event.text)

    def _ask_failed(self, error: AppError) -> None:
        if self._answer_turn is not None:
            self._answer_turn.set_status("")
            self._answer_turn.setObjectName("error")
            self._answer_turn.style().unpolish(self._answer_turn)
            self._answer_turn.style().polish(self._answer_turn)
            self._answer_turn.set_text(str(error))
        self.services.message.emit(str(error))

    def _ask_cancelled(self) -> None:
        turn = self._answer_turn
        if turn is not None:
            turn.set_status("Stopped.")
            if not turn.streamed_text():
                turn.set_text("(stopped before the answer began)")

    def _ask_finished(self) -> None:
        self._ask_worker = None
        self._answer_turn = None
        self._passages_turn = None
        self._update_buttons()
        self.input.setFocus()

    def _passage_clicked(self, match) -> None:
        """The chat at the passage, its answering messages highlighted as on the passage's card (a note: see
        ``open_note``)."""
        if match.is_note:
            self.open_note(match)
            return
        highlight = self._card_highlight(match) or list(match.focus_message_ids or match.message_ids)
        self.open_viewer(match.chat_id, highlight, match.chat_title, note=PASSAGE_NOTE if len(highlight) == 1 else None)

    def _card_highlight(self, match) -> list[int]:
        """What the card of ``match`` highlights (the newest card of that passage; a citation is of the last
        question asked with it)."""
        cards = [card for turn in reversed(self.view.turns) if isinstance(turn, PassagesTurn) for card in turn.cards]
        card = next((c for c in cards if c.match is match), None) or \
            next((c for c in cards if c.match.key == match.key), None)
        return card.highlighted_ids() if card is not None else []

    def _message_clicked(self, chat_id: int, message_id: int) -> None:
        self.open_viewer(chat_id, [message_id], note=CLOSEST_NOTE)

    # --- notes ----------------------------------------------------------------------------------
    def open_note(self, match) -> NoteViewer | None:
        """A note passage: a text note in the app's viewer at the passage (returned), a PDF or Word file in the
        system's viewer (None)."""
        viewer = open_note(self.services, match, self)
        if viewer is not None:
            viewer.destroyed.connect(lambda _obj=None, v=viewer: self.note_viewers.remove(v)
                                     if v in self.note_viewers else None)
            self.note_viewers.append(viewer)
            self.note_opened.emit(viewer)
        return viewer

    def _notes_indexed(self, summary) -> None:
        if summary is not None:
            self._add_turn(TextTurn("note", summary.describe(), title="Notes folder indexed"))

    # --- drag and drop --------------------------------------------------------------------------
    # A folder dropped here is a notes folder, whatever it holds (the window sorts folders dropped elsewhere);
    # anything else than exports and folders goes on to the window, which explains it.
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if urls and all(url.isLocalFile() and (is_chat_export(Path(url.toLocalFile())) or
                                               Path(url.toLocalFile()).is_dir()) for url in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.drop_paths(paths)

    def drop_paths(self, paths: list[Path]) -> None:
        """What a drop on the pane does: exports are imported, folders added as notes folders."""
        folders = [path for path in paths if path.is_dir()]
        exports = [path for path in paths if path not in folders]
        if exports:
            self.import_files(exports)
        for folder in folders:
            self.notes.add_folder(folder)
