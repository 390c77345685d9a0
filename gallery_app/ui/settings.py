"""The person's preferences, kept with QSettings (the OS's usual place for them).

Which model each role uses is the exception: it lives in the models folder (``core.models.choices``),
where the CLI reads the same choice.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from PySide6.QtCore import QSettings

from gallery_app.core import paths
from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.instructions import instructions_problem
from gallery_app.core.chat.prompting import MIN_ANSWER_TOKENS, MIN_PROMPT_TOKENS
from gallery_app.core.models import choices
from gallery_app.core.models.specs import Role

#: What each number may be (the settings dialog's ranges; a hand-edited settings file is held to them too).
LIMITS = {
    "cpu_threads": (0, 256),
    "llm_context": (512, 32_768),
    "answer_tokens": (MIN_ANSWER_TOKENS, 2048),
    "passages": (1, 20),
}


def answer_tokens_limit(llm_context: int) -> int:
    """The longest answer a context of ``llm_context`` tokens leaves room for, besides the prompt."""
    return max(MIN_ANSWER_TOKENS, min(LIMITS["answer_tokens"][1], llm_context - MIN_PROMPT_TOKENS))


def _field(role: Role) -> str:
    return role.value.replace("-", "_")


#: The settings that say which model a role uses: kept in ``core.models.choices``, not in QSettings.
CHOSEN_MODEL_FIELDS = tuple(_field(role) for role in Role)


@dataclass
class Settings:
    data_folder: str = ""  # empty: the OS's user data folder (or GALLERY_APP_DATA_DIR)
    text_embedder: str = ""  # empty: the role's default (the first model present)
    chat_llm: str = ""
    clip_text: str = ""
    clip_vision: str = ""
    cpu_threads: int = 0  # 0: let each runtime decide
    llm_context: int = AskOptions.context_tokens
    answer_tokens: int = AskOptions.answer_tokens
    passages: int = AskOptions.passages
    #: Read the best passages again with the small offline model (core/chat/second_reading.py).
    read_again: bool = AskOptions.read_again
    #: The person's answer instructions; empty: the app's own, so a later version's better ones reach
    #: everyone who never changed them.
    answer_instructions: str = ""

    def model_setting(self, role: Role) -> str | None:
        return getattr(self, _field(role)) or None

    def set_model(self, role: Role, setting: str | None) -> None:
        setattr(self, _field(role), setting or "")

    @property
    def threads(self) -> int | None:
        return self.cpu_threads or None

    @property
    def instructions(self) -> str:
        return self.answer_instructions or AskOptions.instructions

    @property
    def ask_options(self) -> AskOptions:
        """How the window asks: the numbers and instructions chosen here, the core's defaults for everything else."""
        return AskOptions(passages=self.passages, answer_tokens=self.answer_tokens, context_tokens=self.llm_context,
                          instructions=self.instructions, read_again=self.read_again)

    @classmethod
    def load(cls, store: QSettings | None = None) -> Settings:
        store = store or QSettings()
        values = {}
        for f in fields(cls):
            default = f.default
            raw = store.value(f.name, default)
            try:
                if isinstance(default, bool):  # an INI file gives "true" / "false" back as text
                    values[f.name] = default if raw is None else str(raw).strip().lower() in ("true", "1")
                    continue
                values[f.name] = type(default)(raw) if raw is not None else default
            except (TypeError, ValueError):  # a hand-edited or older settings file
                values[f.name] = default
            if f.name in LIMITS:  # a number out of range would fail later (a context too small for any prompt)
                low, high = LIMITS[f.name]
                values[f.name] = min(max(values[f.name], low), high)
        values["answer_tokens"] = min(values["answer_tokens"], answer_tokens_limit(values["llm_context"]))
        instructions = values["answer_instructions"].strip()
        if instructions == AskOptions.instructions or (instructions and instructions_problem(instructions)):
            instructions = ""  # the app's own; or hand-edited into something no prompt can be made of
        values["answer_instructions"] = instructions
        for role in Role:  # the models come from the file the CLI reads too
            name = _field(role)
            if choices.chosen(role) is None and values[name]:  # chosen in the window before that file existed
                choices.choose(role, values[name])
            values[name] = choices.chosen(role) or ""
        return cls(**values)

    def save(self, store: QSettings | None = None) -> None:
        store = store or QSettings()
        for f in fields(self):
            if f.name in CHOSEN_MODEL_FIELDS:
                store.remove(f.name)
            else:
                store.setValue(f.name, getattr(self, f.name))
        store.sync()
        for role in Role:
            choices.choose(role, self.model_setting(role))

    def apply_data_folder(self) -> None:
        """Point the core at the chosen data folder (the environment variable still wins, for tests)."""
        if self.data_folder.strip():
            paths.use_data_dir(self.data_folder.strip())
