"""File → Settings…: data folder, model per role, CPU threads, LLM context, answer length, passages, the
second reading, answer instructions.

The numbers stay within ``settings.LIMITS``, and the answer length within what the context leaves
after the prompt's room, so no choice here can make a question unanswerable. Answer instructions are
checked as they are typed (``core.chat.instructions``): while they cannot make a prompt, the dialog says
why and OK is off.

Each model choice says whether that model is on this computer (``status.candidate_statuses``, checked
on a worker: a first check hashes the files). OK writes the settings with ``Settings.save()`` (QSettings). Models are released when a model
choice, the thread count or the context size changed, so the next use loads them with the new
values; the data folder takes effect at the next start (the open database stays where it is).
"""

from __future__ import annotations

import os
from dataclasses import replace

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit,
    QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from gallery_app.core import paths
from gallery_app.core.models.catalog import CANDIDATES
from gallery_app.core.models.specs import Role
from gallery_app.core.models.status import ModelStatus, candidate_statuses, presence
from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.instructions import instructions_problem
from gallery_app.core.chat.prompting import MIN_PROMPT_TOKENS
from gallery_app.core.units import describe_size
from gallery_app.ui.plain_text import tooltip
from gallery_app.ui.settings import LIMITS, Settings, answer_tokens_limit
from gallery_app.ui.workers import Worker, WorkerContext

AUTOMATIC = "Automatic"

#: Settings whose change makes loaded models stale.
MODEL_FIELDS = ("text_embedder", "chat_llm", "clip_text", "clip_vision", "cpu_threads", "llm_context")

ROLE_LABELS = {
    Role.TEXT_EMBEDDER: "Message search model",
    Role.CHAT_LLM: "Answer model",
    Role.CLIP_TEXT: "Photo search (text) model",
    Role.CLIP_VISION: "Photo search (images) model",
}


def field_for(role: Role) -> str:
    return role.value.replace("-", "_")


def model_choice_text(status: ModelStatus) -> str:
    """"SmolLM2-135M-Instruct — 98 MB — on this computer": a model choice with its size and whether it is here."""
    size = f" — {describe_size(status.spec.size)}" if status.spec.size else ""
    return f"{status.spec.name}{size} — {presence(status)}"


class _InstructionsEdit(QPlainTextEdit):
    """Six lines tall to begin with (Qt's usual hint is twelve, which made the dialog taller than a laptop's
    screen allows); taller when the dialog is."""

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        margins = self.contentsMargins()
        return QSize(hint.width(), self.fontMetrics().lineSpacing() * 6 + margins.top() + margins.bottom()
                     + 2 * int(self.document().documentMargin()))


def _check_candidates(_context: WorkerContext) -> dict[Role, list[ModelStatus]]:
    return {role: candidate_statuses(role) for role in Role if CANDIDATES.get(role)}


class SettingsDialog(QDialog):
    def __init__(self, services, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self.setWindowTitle("Settings")
        self.original: Settings = replace(services.settings)
        #: The job that moves every chat to another text embedder, when OK chose one.
        self.switching = None

        self.data_folder = QLineEdit(self.original.data_folder)
        self.data_folder.setPlaceholderText(str(paths.data_dir(create=False)))
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._choose_folder)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.data_folder, 1)
        folder_row.addWidget(browse)
        folder_note = QLabel("A new data folder takes effect after you restart the app.")
        folder_note.setWordWrap(True)
        if paths.data_dir_from_environment() is not None:
            folder_note.setText(folder_note.text() + f" ({paths.DATA_DIR_ENV} is set and takes precedence.)")

        form = QFormLayout()
        form.addRow("Data folder", folder_row)
        form.addRow("", folder_note)

        self.model_combos: dict[Role, QComboBox] = {}
        for role in Role:
            combo = QComboBox()
            combo.addItem(AUTOMATIC, "")
            for spec in CANDIDATES.get(role, ()):
                size = f" — {describe_size(spec.size)}" if spec.size else ""
                combo.addItem(f"{spec.name}{size}", spec.key)
            current = self.original.model_setting(role) or ""
            index = combo.findData(current)
            if index < 0 and current:  # a file or folder set elsewhere (CLI, hand-edited): keep it selectable
                combo.addItem(current, current)
                index = combo.count() - 1
            combo.setCurrentIndex(max(0, index))
            combo.setToolTip(f"Automatic: the first {role.value} model on this computer, else the download.")
            self.model_combos[role] = combo
            form.addRow(ROLE_LABELS.get(role, role.value), combo)

        self.cpu_threads = self._spin(0, os.cpu_count() or 64, self.original.cpu_threads, special=AUTOMATIC)
        self.llm_context = self._spin(*LIMITS["llm_context"], self.original.llm_context, step=512, suffix=" tokens")
        self.answer_tokens = self._spin(*LIMITS["answer_tokens"], self.original.answer_tokens, step=16,
                                        suffix=" tokens")
        self.passages = self._spin(*LIMITS["passages"], self.original.passages)
        # The context holds the prompt and the answer: the answer can never take the prompt's room.
        self.llm_context.valueChanged.connect(self._limit_answer)
        self._limit_answer(self.llm_context.value())
        answer_note = QLabel(f"The context keeps {MIN_PROMPT_TOKENS} tokens for the question and the messages; "
                             "the answer gets at most the rest.")
        answer_note.setWordWrap(True)
        form.addRow("CPU threads", self.cpu_threads)
        form.addRow("LLM context size", self.llm_context)
        form.addRow("Answer length", self.answer_tokens)
        form.addRow("", answer_note)
        form.addRow("Passages per question", self.passages)
        self.read_again = QCheckBox("Read the best passages a second time (Gemma 3 270M, offline)")
        self.read_again.setChecked(self.original.read_again)
        self.read_again.setToolTip("Finds the passage that answers more often; about 4–5 s more per question on 2 cores "
                                   "and about 500 MB of memory while the window is open.")
        form.addRow("Second reading", self.read_again)

        self.instructions = _InstructionsEdit()
        self.instructions.setPlainText(self.original.instructions)
        self.instructions.setTabChangesFocus(True)  # Tab moves on, as in every other field here
        self.instructions.setAccessibleName("Answer instructions")
        self.reset_instructions = QPushButton("Reset to default")
        self.reset_instructions.clicked.connect(lambda: self.instructions.setPlainText(AskOptions.instructions))
        slots_note = QLabel("Keep {context} (the messages found) and {question} on different lines; "
                            "{{ or }} writes a brace.")
        slots_note.setTextFormat(Qt.TextFormat.PlainText)
        slots_note.setWordWrap(True)
        # What is wrong quotes the person's own text back (a {slot} they typed): never read as markup.
        self.instructions_problem = QLabel()
        self.instructions_problem.setTextFormat(Qt.TextFormat.PlainText)
        self.instructions_problem.setWordWrap(True)
        self.instructions_problem.setStyleSheet("color: #b00020;")  # the Models dialog's error colour
        # Each wrapped label is a row's field of its own: QFormLayout gives those the height they wrap to,
        # not labels nested in a row's layout (they overlapped the editor).
        form.addRow("Answer instructions", self.instructions)
        form.addRow("", self.instructions_problem)
        form.addRow(self.reset_instructions, slots_note)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self.restore_defaults)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.instructions.textChanged.connect(self._check_instructions)
        self._check_instructions()

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)
        #: The check of which models are here, until it has marked the choices.
        self.presence_check: Worker | None = Worker(_check_candidates)
        self.presence_check.signals.result.connect(self._show_presence)
        services.run(self.presence_check)

    def _show_presence(self, statuses: dict[Role, list[ModelStatus]]) -> None:
        for role, role_statuses in statuses.items():
            combo = self.model_combos.get(role)
            for status in role_statuses if combo is not None else ():
                index = combo.findData(status.spec.key)
                if index >= 0:
                    combo.setItemText(index, model_choice_text(status))
                    combo.setItemData(index, tooltip(status.problem or ""), Qt.ItemDataRole.ToolTipRole)
        self.presence_check = None

    @staticmethod
    def _spin(low: int, high: int, value: int, *, step: int = 1, suffix: str = "", special: str | None = None) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setSingleStep(step)
        spin.setSuffix(suffix)
        if special:
            spin.setSpecialValueText(special)  # shown for the minimum (0 = automatic)
        spin.setValue(min(max(value, low), high))
        return spin

    def _check_instructions(self) -> str | None:
        """What is wrong with the instructions as typed (shown, and OK off), or None."""
        problem = instructions_problem(self.instructions.toPlainText())
        self.instructions_problem.setText(problem or "")
        self.instructions_problem.setVisible(problem is not None)
        self.ok_button.setEnabled(problem is None)
        return problem

    def _limit_answer(self, llm_context: int) -> None:
        self.answer_tokens.setMaximum(answer_tokens_limit(llm_context))

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Data folder", self.data_folder.text() or str(paths.data_dir()))
        if folder:
            self.data_folder.setText(folder)

    def restore_defaults(self) -> None:
        self._show(Settings())

    def _show(self, settings: Settings) -> None:
        self.data_folder.setText(settings.data_folder)
        for role, combo in self.model_combos.items():
            combo.setCurrentIndex(max(0, combo.findData(settings.model_setting(role) or "")))
        self.cpu_threads.setValue(settings.cpu_threads)
        self.llm_context.setValue(settings.llm_context)
        self.answer_tokens.setValue(settings.answer_tokens)
        self.passages.setValue(settings.passages)
        self.read_again.setChecked(settings.read_again)
        self.instructions.setPlainText(settings.instructions)

    def chosen(self) -> Settings:
        """The settings as the dialog shows them (nothing is saved until OK)."""
        values = {field_for(role): combo.currentData() or "" for role, combo in self.model_combos.items()}
        instructions = self.instructions.toPlainText().strip()
        return replace(self.original, data_folder=self.data_folder.text().strip(),
                       cpu_threads=self.cpu_threads.value(), llm_context=self.llm_context.value(),
                       answer_tokens=self.answer_tokens.value(), passages=self.passages.value(),
                       read_again=self.read_again.isChecked(),
                       answer_instructions="" if instructions == AskOptions.instructions else instructions, **values)

    def accept(self) -> None:
        if self._check_instructions() is not None:  # Enter, or a call, while OK is off
            self.instructions.setFocus()
            return
        new = self.chosen()
        # Another text embedder is switched to by a job that embeds every chat first: until it is done,
        # search keeps the embedder it has (a new one with an empty table would find nothing).
        embedder = new.text_embedder
        new.text_embedder = self.original.text_embedder
        models_changed = any(getattr(new, name) != getattr(self.original, name) for name in MODEL_FIELDS)
        new.save()
        # The services keep the same Settings object (panes hold it): update it in place.
        for name, value in vars(new).items():
            setattr(self.services.settings, name, value)
        if models_changed:
            self.services.release_models()
        if embedder != self.original.text_embedder:
            self.switching = self.services.switch_text_embedder(embedder)
        super().accept()
