"""A word of the question that few passages hold (a name, a place, a scheme) lifts those passages, by default.

Small multilingual embedders place a proper noun of another language poorly: "Bidikmisi", "Sholay" or
"Mataram" in an English question barely moves it towards the Indonesian or Hindi message that names it.
The same string in both is the surest link there is. Measured on the six real chats (docs/chat.md), the
lift raises mean R@3 0.68 -> 0.70 and the worst set 0.52 -> 0.57; on by default since issue 21.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.chat.session import ChatSession
from tests.chat_helpers import HashEmbedder

RARE = "Bidikmisi"
QUESTION = f"Do {RARE} students have to pay for the dormitory?"
ANSWER = "Admin: bebas biaya dek"
DAYS = 150  # a passage a day: 1% of them is 1.5, so a word in one passage is rare


class AllAlike(HashEmbedder):
    """An embedder to which every passage of the helpdesk reads the same (an applicant asks, the admin answers
    about the exam), as the small model's vectors for short Indonesian replies are near to each other: the
    question is equally near to all of them, so only the rare word can tell which one answers."""

    model_key = "test-all-alike"

    def embed_passages(self, texts):
        return np.tile(self._vector("ujian"), (len(texts), 1))


def _helpdesk_chat(folder):
    """A helpdesk export of DAYS days, an applicant's question and the answer each day; one names the scheme."""
    lines, first = [], date(2018, 1, 1)
    for number in range(DAYS):
        day = (first + timedelta(days=number)).strftime("%d/%m/%Y")
        if number == DAYS // 2:
            lines += [f"{day}, 10:00 - Ana: Kak, kalau lewat {RARE} bayar asrama?", f"{day}, 10:05 - {ANSWER}"]
        else:
            lines += [f"{day}, 10:00 - Ana: Kak, ujian tulis sesi {number} jam berapa?",
                      f"{day}, 10:05 - Admin: Ujian tulis sesi {number} jam 8 pagi dek"]
    path = folder / "WhatsApp Chat with SMB.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def helpdesk(store, tmp_path):
    embedder = AllAlike()
    import_chat(store, _helpdesk_chat(tmp_path), embedder)
    return store, embedder


def _first(retrieval) -> str:
    return retrieval.matches[0].text


def test_the_embedder_alone_does_not_find_the_answer(helpdesk):
    conn, embedder = helpdesk
    found = ChatRetriever(conn, embedder, rare_words=False).retrieve(QUESTION, k=3)
    assert len(found.matches) == 3 and not any(ANSWER in match.text for match in found.matches)


def test_the_app_finds_the_passage_naming_the_rare_word_first(helpdesk):
    conn, embedder = helpdesk
    _query, found = ChatSession(conn, embedder, None, AskOptions()).retrieve(QUESTION)
    assert ANSWER in _first(found)
    assert ANSWER in _first(ChatRetriever(conn, embedder).retrieve(QUESTION, k=3))


def test_a_word_many_passages_hold_lifts_nothing(helpdesk):
    conn, embedder = helpdesk
    question = "Ujian tulis jam berapa?"
    lifted = ChatRetriever(conn, embedder).retrieve(question, k=10)
    plain = ChatRetriever(conn, embedder, rare_words=False).retrieve(question, k=10)
    assert [m.chunk_id for m in lifted.matches] == [m.chunk_id for m in plain.matches]
    assert [m.score for m in lifted.matches] == [m.score for m in plain.matches]


def _notes_folder(folder):
    """A folder of DAYS one-line notes about the exam; one names the scheme."""
    folder.mkdir()
    for number in range(DAYS):
        text = (f"Penerima {RARE} tidak membayar asrama." if number == DAYS // 2
                else f"Ujian tulis sesi {number} dimulai jam 8 pagi.")
        (folder / f"catatan-{number:03}.md").write_text(f"# Catatan {number}\n\n{text}\n", encoding="utf-8")
    return folder


def test_a_note_holding_the_rare_word_is_lifted_as_a_chat_passage_is(store, tmp_path):
    """Asked together, neither source gains on the other for a rare word: the note naming it is lifted too."""
    from gallery_app.core.notes.indexer import index_folder

    embedder = AllAlike()
    import_chat(store, _helpdesk_chat(tmp_path), embedder)
    index_folder(store, _notes_folder(tmp_path / "notes"), embedder)
    _query, found = ChatSession(store, embedder, None, AskOptions()).retrieve(QUESTION)
    first_two = {("note" if match.is_note else "chat") for match in found.matches[:2]}
    assert first_two == {"note", "chat"}, [match.text[:60] for match in found.matches[:4]]
    note = next(match for match in found.matches if match.is_note)
    assert RARE in note.text
    _query, plain = ChatSession(store, embedder, None, AskOptions(rare_words=False)).retrieve(QUESTION)
    assert not any(RARE in match.text for match in plain.matches[:3])


def test_notes_search_ranks_the_rare_word_as_asking_does(store, tmp_path):
    """`gallery-app-cli notes search` (search_notes) ranks as asking the notes in the window does."""
    from gallery_app.core.notes.indexer import index_folder
    from gallery_app.core.notes.search import search_notes

    embedder = AllAlike()
    index_folder(store, _notes_folder(tmp_path / "notes"), embedder)
    assert RARE in search_notes(store, embedder, QUESTION, 3)[0].chunk.text
