"""Helpers shared by the chat tests: the demo chat, its questions, and a cheap counting "LLM"."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_bench(name: str):
    """``bench/NAME.py`` as a module (bench/ is scripts, not a package)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
DEMO_CHAT = REPO / "resources" / "demo" / "chats" / "weekend_away" / "_chat.txt"
DEMO_QUESTIONS = REPO / "resources" / "demo" / "questions.jsonl"


def demo_questions() -> dict[str, dict]:
    items = [json.loads(line) for line in DEMO_QUESTIONS.read_text("utf-8").splitlines() if line.strip()]
    return {item["question"]: item for item in items}


def senders(chat) -> list[str]:
    """Who wrote a parsed chat's messages, the first to write first (system lines have no sender)."""
    return list(dict.fromkeys(m.sender for m in chat.messages if m.sender is not None))


def message_id_at_line(conn, line: int) -> int:
    return conn.execute("SELECT id FROM messages WHERE source_line = ?", (line,)).fetchone()[0]


class HashEmbedder:
    """A stand-in text embedder: hashed bags of words, so passages sharing a question's words rank first."""

    model_key = "test-hash-words"
    dims = 64
    max_tokens = 256

    def _vector(self, text: str):
        import re
        import zlib

        import numpy as np

        vector = np.zeros(self.dims, np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vector[zlib.crc32(word.encode()) % self.dims] += 1.0
        vector[0] += 1e-3  # never all zeros
        return vector / np.linalg.norm(vector)

    def embed_passages(self, texts):
        import numpy as np

        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)

    def embed_query(self, text: str):
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2


class ScriptedLLM:
    """A stand-in chat LLM that "writes" the given pieces, whatever the prompt; words are its tokens."""

    chat_template = "scripted"
    loaded = True

    def __init__(self, pieces, n_ctx: int = 4096):
        self.pieces = list(pieces)
        self.n_ctx = n_ctx
        self.prompts: list[str] = []

    def tokenize(self, text: str) -> list[int]:
        self.prompts.append(text)
        return list(range(len(text.split())))

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def render_chat(self, messages):
        return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n", ["<|end|>"]

    def stream_completion(self, tokens, *, max_tokens, stop=(), cancel=None):
        yield from self.pieces
