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
         # The bench's own workings; the second reading's effect is held on the real chats (test_real_chat_retrieval).
         "--embedder", "all-minilm-l6-v2-int8", "--retrieval-only", "--read-again", "off", *extra],
        capture_output=True, text=True, check=True, timeout=600)
    return result.stdout


def row(output: str, kind: str) -> list[float]:
    """n, R@1, R@3, R@5, R@10 of one kind's row in the table."""
    found = re.search(rf"^\S+\s+{re.escape(kind)}\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", output, re.M)
    return [float(value) for value in found.groups()]


def write_two_questions(folder):
    """A question file of one's own: an answerable question and an unanswerable one."""
    questions = folder / "mine.jsonl"
    questions.write_text("\n".join(json.dumps(item) for item in [
        {"id": "a", "question": "What was the key safe code?", "previous_question": None, "kind": "fact",
         "gold_lines": [347], "answer_keywords": ["4418"]},
        {"id": "b", "question": "Who has a pet parrot?", "previous_question": None, "kind": "unanswerable",
         "gold_lines": [], "answer_keywords": []},
    ]))
    return questions


def test_minilm_recall_at_3_on_the_demo_questions(tmp_path):
    misses = tmp_path / "misses.jsonl"
    output = run_eval(DEMO_QUESTIONS, "--misses", str(misses))
    # Measured 0.82 (docs/chat.md); 0.79 since the other person's whole turn leads a window in (session 38:
    # demo q04, a follow-up, ranks 4th), a trade made for the real chats and said in docs/chat.md.
    assert row(output, "overall")[2] >= 0.78, output
    assert "summary: R@3 questions" in output
    written = [json.loads(line) for line in misses.read_text("utf-8").splitlines()]
    assert all({"id", "rank", "searched", "gold", "top"} <= set(miss) for miss in written)
    # A right top passage that highlights another message is written too, with the line it highlighted.
    highlighted = [miss for miss in written if miss.get("miss") == "evidence"]
    assert f"another message highlighted: {len(highlighted)}," in output
    assert all(miss["rank"] == 1 and miss["highlighted"] not in miss["gold"] for miss in highlighted)


def test_any_file_in_the_format_is_accepted(tmp_path):
    questions = write_two_questions(tmp_path)
    output = run_eval(questions, "--misses", str(tmp_path / "misses.jsonl"))
    assert row(output, "fact") == [1, 1.0, 1.0, 1.0, 1.0] and row(output, "overall")[0] == 1


def test_answers_say_whether_the_keyword_was_in_the_models_words_or_the_closest_message(tmp_path):
    questions = write_two_questions(tmp_path)
    output = subprocess.run(
        [sys.executable, str(REPO / "bench" / "chat_eval.py"), str(questions), str(DEMO_CHAT), "--embedder",
         "all-minilm-l6-v2-int8", "--read-again", "off", "--misses", str(tmp_path / "misses.jsonl"), "--verbose"],
        capture_output=True, text=True, check=True, timeout=600).stdout
    counts = re.search(r"answers with a keyword (\d)/1 \(in the model's own answer (\d), in the closest message under "
                       r"a decline (\d); the model's words before the grounding check (\d)\)", output)
    assert counts, output
    shown, own, closest, before = map(int, counts.groups())
    assert shown == own + closest and own <= before
    # A declined answer's line says what the model wrote, so a reader can judge the check.
    answer_line = next(line for line in output.splitlines() if re.match(r"\S+\s+a\s+fact", line))
    assert ("I don't know" in answer_line) == ("(the model wrote " in answer_line), answer_line


def test_a_cached_rerun_reads_nothing_again_and_gives_the_same_table(tmp_path):
    """--cache keeps the reader's readings: what a rerun of a variant does not change, it does not read again."""
    questions = write_two_questions(tmp_path)

    def cached_run() -> str:
        output = subprocess.run(
            [sys.executable, str(REPO / "bench" / "chat_eval.py"), str(questions), str(DEMO_CHAT), "--embedder",
             "all-minilm-l6-v2-int8", "--retrieval-only", "--cache", str(tmp_path / "cache"),
             "--misses", str(tmp_path / "misses.jsonl")], capture_output=True, text=True, check=True, timeout=600).stdout
        return "\n".join(line for line in output.splitlines() if " import " not in line)  # import seconds vary

    first = cached_run()
    readings_file = next((tmp_path / "cache").glob("readings-*.json"))
    readings = json.loads(readings_file.read_text("utf-8"))
    assert readings
    assert cached_run() == first
    assert json.loads(readings_file.read_text("utf-8")) == readings
