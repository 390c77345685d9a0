"""The model each role uses when the person chose one: one file that the window and the CLI both read.

A setting is a model key (``qwen2.5-1.5b-instruct-q4_k_m``), a ``.gguf`` file or an ONNX folder. The
window's Settings and Models dialog write it; ``gallery-app-cli --llm/--embedder`` overrides it for one
command without changing it. No choice: the role's default (``sources.choose_spec``).
"""

from __future__ import annotations

from pathlib import Path

from gallery_app.core import paths
from gallery_app.core.json_file import read_json, write_json
from gallery_app.core.models.specs import Role

CHOICES_FILE = "chosen-models.json"


def _choices_path() -> Path:
    return paths.models_dir() / CHOICES_FILE


def chosen(role: Role) -> str | None:
    value = read_json(_choices_path()).get(role.value)
    return value if isinstance(value, str) and value else None


def choose(role: Role, setting: str | None) -> None:
    """Remembers ``setting`` for ``role``; None or "" goes back to the default."""
    choices = read_json(_choices_path())
    if choices.get(role.value, "") == (setting or ""):
        return
    if setting:
        choices[role.value] = setting
    else:
        choices.pop(role.value, None)
    write_json(_choices_path(), choices)
