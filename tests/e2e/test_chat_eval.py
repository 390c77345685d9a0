"""bench/chat_eval.py: the evaluation the README quotes, with the offline English MiniLM."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.chat_helpers import DEMO_CHAT, DEMO_QUESTIONS, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def run_eval(questions, *extra: str) -> str:
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "chat_eval.py"), str(questions), str(DEMO_CHAT),
         "--embedder", "all-minilm-l6-v2-int8", "--retrieval-only", *extra],
        capture_output=True, text=True, check=True, timeout=600)
    return result.stdout


def recall_at_3(output: str) -> float:
    return float(re.search(r"^overall n=\d+ R@1 [\d.]+ R@3 ([\d.]+)", output, re.M).group(1))


def test_minilm_recall_at_3_on_the_demo_questions():
    output = run_eval(DEMO_QUESTIONS)
    assert recall_at_3(output) >= 0.9, output
    assert output.strip().splitlines()[-1].startswith("summary: R@3")


def test_any_file_in_the_format_is_accepted(tmp_path):
    questions = tmp_path / "mine.jsonl"
    questions.write_text("\n".join(json.dumps(item) for item in [
        {"id": "a", "question": "What was the key safe code?", "previous_question": None, "kind": "fact",
         "gold_lines": [347], "answer_keywords": ["4418"]},
        {"id": "b", "question": "Who has a pet parrot?", "previous_question": None, "kind": "unanswerable",
         "gold_lines": [], "answer_keywords": []},
    ]))
    output = run_eval(questions)
    assert "fact n=1 R@1 1.00" in output and "overall n=1" in output
