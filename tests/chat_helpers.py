"""Helpers shared by the chat tests: the demo chat, its questions, and a cheap counting "LLM"."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_CHAT = REPO / "resources" / "demo" / "chats" / "weekend_away" / "_chat.txt"
DEMO_QUESTIONS = REPO / "resources" / "demo" / "questions.jsonl"


def demo_questions() -> dict[str, dict]:
    items = [json.loads(line) for line in DEMO_QUESTIONS.read_text("utf-8").splitlines() if line.strip()]
    return {item["question"]: item for item in items}


def message_id_at_line(conn, line: int) -> int:
    return conn.execute("SELECT id FROM messages WHERE source_line = ?", (line,)).fetchone()[0]
