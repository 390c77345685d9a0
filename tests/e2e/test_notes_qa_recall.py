"""Retrieval on a real notes folder written by other people (../shared/fixtures/notes_qa), offline e5.

The whole folder (97 notes, a JSONL export, 3 PDFs, 2 Word files) is indexed with the app's indexer and
every question asked as the app asks it (bench/notes_eval.py). The floors sit a little below what was
measured (README, "Notes and documents"): 25 of 27 answerable questions in the top 3, 3 of the 4 PDF ones.
"""

from __future__ import annotations


import pytest

from gallery_app.core.models.loading import open_text_embedder
from tests.chat_helpers import load_bench
from tests.conftest import SHARED_FIXTURES

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.shared_fixtures]

#: Measured 0.93 (25/27); one question's worth below.
RECALL_AT_3_FLOOR = 0.88
#: Measured 0.75 (3/4), the issue's target: no room below it.
PDF_RECALL_AT_3_FLOOR = 0.75
#: Measured 1.00.
RECALL_AT_5_FLOOR = 0.96
#: Measured 0.74 (20/27) since a rare word of the question lifts the notes holding it (0.67 before); a question below.
RECALL_AT_1_FLOOR = 0.70


def _notes_eval():
    return load_bench("notes_eval")


def test_notes_qa_recall_holds():
    embedder = open_text_embedder(None, threads=2)
    try:
        result = _notes_eval().evaluate_notes(embedder, SHARED_FIXTURES / "notes_qa")
    finally:
        embedder.release()
    assert len(result.ranks) == 27 and result.unanswerable == 3
    assert result.recall(1) >= RECALL_AT_1_FLOOR, result.ranks
    assert result.recall(3) >= RECALL_AT_3_FLOOR, result.ranks
    assert result.recall(5) >= RECALL_AT_5_FLOOR, result.ranks
    assert result.recall(3, "pdf") >= PDF_RECALL_AT_3_FLOOR, result.ranks
