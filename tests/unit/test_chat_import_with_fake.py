"""Importing WhatsApp exports with the word-hash test embedder: what is stored, what a re-import adds, what it says.

The fast twin of tests/e2e/test_chat_import.py (real MiniLM there); resuming after a crash, the
estimate and concurrent imports are in test_chat_import_resumes.py.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from gallery_app.core.chat.importer import import_chat, reindex
from gallery_app.core.chat.repository import list_chats
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.errors import Cancelled
from gallery_app.core.store import open_store
from tests.chat_helpers import DEMO_CHAT
from tests.small_chats import (
    JONAS, JONAS_MESSAGES, LIGHTHOUSE, LIGHTHOUSE_MESSAGES, LIGHTHOUSE_PEOPLE, LIGHTHOUSE_SHORTER,
    LIGHTHOUSE_SHORTER_MESSAGES,
)
from tests.text_embedders import WordHashEmbedder, write_chat

DETAILS = "3 people: Maya, Daniel, Priya; 1 media not included in the export."


def counts(conn) -> tuple[int, int, int]:
    """(messages, passages, search windows) stored."""
    return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("messages", "chunks", "chunk_windows"))


def unindexed(conn, embedder) -> int:
    # k=0: only the count, so searching embeds nothing (the best passages' messages would be embedded).
    return ChatRetriever(conn, embedder).retrieve("anything", k=0).unindexed


@pytest.fixture
def lighthouse(tmp_path):
    return write_chat(tmp_path / "lighthouse_trip", LIGHTHOUSE)


@pytest.fixture
def jonas(tmp_path):
    return write_chat(tmp_path / "exports", JONAS, "WhatsApp Chat with Jonas.txt")


def test_a_small_export_is_stored_as_messages_passages_and_one_vector_per_window(store, lighthouse):
    embedder = WordHashEmbedder()
    summary = import_chat(store, lighthouse, embedder)
    assert summary.new_chat and summary.title == "Lighthouse trip"
    assert summary.messages_in_file == summary.messages_added == LIGHTHOUSE_MESSAGES
    assert summary.participants == LIGHTHOUSE_PEOPLE
    # The encryption notice and "created group" are not when the chat starts.
    assert (summary.first, summary.last) == (datetime(2024, 4, 3, 19, 42), datetime(2024, 4, 24, 8, 2))
    assert (summary.media_placeholders, summary.skipped_lines) == (1, 0)
    # The people's messages, as the chat list counts them; WhatsApp's notices apart (issue 22, step 7).
    assert summary.describe() == ("Imported “Lighthouse trip”: 32 messages and 2 WhatsApp notices from 03 Apr 2024 "
                                  f"to 24 Apr 2024. {DETAILS}")
    assert list_chats(store)[0].message_count == 32

    messages, passages, windows = counts(store)
    assert messages == LIGHTHOUSE_MESSAGES
    assert passages == summary.passages_added > 1
    # Every window was embedded once, none cut off by the embedder's limit.
    assert windows == summary.windows_added == len(embedder.passages) == len(set(embedder.passages))
    assert embedder.longest_passage <= embedder.max_tokens
    assert unindexed(store, embedder) == 0
    (chat,) = list_chats(store)
    assert chat.describe() == "Lighthouse trip (32 messages, 03 Apr 2024 – 24 Apr 2024; Maya, Daniel, Priya)"


@pytest.mark.parametrize("max_tokens", [24, 64, 512])
def test_passages_fit_the_embedders_limit_however_small(store, lighthouse, max_tokens):
    embedder = WordHashEmbedder(max_tokens=max_tokens)
    summary = import_chat(store, lighthouse, embedder)
    assert summary.messages_added == LIGHTHOUSE_MESSAGES
    assert embedder.longest_passage <= max_tokens
    # Every message with words is somewhere in what was embedded, the packing list line by line.
    embedded = "\n".join(embedder.passages)
    for text in ("Daniel: I'll bring the inflatable kayak", "Daniel: rain jackets", "Priya: Bring a book"):
        assert text in embedded


def test_a_smaller_limit_cuts_the_chat_into_more_passages(tmp_path, lighthouse):
    passages = {}
    for max_tokens in (24, 64, 512):
        conn = open_store(tmp_path / f"{max_tokens}.db")
        passages[max_tokens] = import_chat(conn, lighthouse, WordHashEmbedder(max_tokens=max_tokens)).passages_added
        conn.close()
    assert passages[24] > passages[64] > passages[512]
    assert passages[512] == 7  # a passage per day: a chat day of a few messages is never split without need


def test_importing_the_same_export_again_adds_nothing_and_embeds_nothing(store, lighthouse, tmp_path):
    first = import_chat(store, lighthouse, WordHashEmbedder())
    before = counts(store)
    embedder = WordHashEmbedder()
    again = import_chat(store, lighthouse, embedder)
    assert again.chat_id == first.chat_id and not again.new_chat
    assert (again.messages_in_file, again.messages_added, again.passages_added, again.windows_added) == (34, 0, 0, 0)
    assert again.describe() == f"“Lighthouse trip” is already up to date: all 32 messages were imported before. {DETAILS}"
    assert counts(store) == before and embedder.passages == []
    # The same export saved again under WhatsApp's own file name is still the same chat, with its title.
    renamed = write_chat(tmp_path / "Downloads", LIGHTHOUSE, "WhatsApp Chat with Lighthouse trip.txt")
    third = import_chat(store, renamed, embedder)
    assert third.chat_id == first.chat_id and third.messages_added == 0 and third.title == "Lighthouse trip"
    assert counts(store) == before and len(list_chats(store)) == 1


def test_a_longer_export_adds_only_its_new_messages_as_if_imported_whole(store, tmp_path):
    shorter = write_chat(tmp_path / "april" / "lighthouse_trip", LIGHTHOUSE_SHORTER)
    longer = write_chat(tmp_path / "may" / "lighthouse_trip", LIGHTHOUSE)
    first = import_chat(store, shorter, WordHashEmbedder())
    assert first.messages_added == LIGHTHOUSE_SHORTER_MESSAGES

    embedder = WordHashEmbedder()
    added = import_chat(store, longer, embedder)
    assert added.chat_id == first.chat_id and not added.new_chat and len(list_chats(store)) == 1
    assert added.messages_added == LIGHTHOUSE_MESSAGES - LIGHTHOUSE_SHORTER_MESSAGES
    assert added.describe() == f"Added 15 new messages to “Lighthouse trip” (now up to 24 Apr 2024). {DETAILS}"
    # Only the days that gained messages were cut and embedded again: 10 April (the shorter export
    # stopped at 09:30), with its morning, and the days after it; 3 to 7 April were left alone.
    embedded = "\n".join(embedder.passages)
    assert "Priya: I booked the lighthouse cottage" in embedded and "Penzance" in embedded
    for earlier in ("noodle bar", "wood burner", "balcony", "Packing list"):
        assert earlier not in embedded

    whole = open_store(tmp_path / "whole.db")
    import_chat(whole, longer, WordHashEmbedder())
    assert counts(store) == counts(whole)  # 10 April's first passages were replaced, not kept beside the new ones
    for question in ("Who booked the cottage?", "And the ferry?", "dinner"):
        found = [m.text for m in ChatRetriever(store, embedder).retrieve(question, k=20).matches]
        assert found == [m.text for m in ChatRetriever(whole, embedder).retrieve(question, k=20).matches]
    assert unindexed(store, embedder) == 0
    whole.close()


def test_a_cancel_before_the_first_batch_keeps_the_messages_and_reindex_embeds_them(store, lighthouse):
    embedder = WordHashEmbedder()
    answers = iter([False])  # the check before anything is written passes; the one before the first batch stops
    with pytest.raises(Cancelled) as cancelled:
        import_chat(store, lighthouse, embedder, cancel=lambda: next(answers, True))
    assert str(cancelled.value) == ("The import was cancelled: the messages are saved, no passages were embedded "
                                    "yet. Import the same file again to finish.")
    messages, _passages, windows = counts(store)
    assert messages == LIGHTHOUSE_MESSAGES and embedder.passages == []
    found = ChatRetriever(store, embedder).retrieve("Who is bringing the inflatable kayak?")
    assert found.matches == [] and found.unindexed == windows  # nothing to show, and it says why

    assert reindex(store, embedder) == windows == len(embedder.passages)
    found = ChatRetriever(store, embedder).retrieve("Who is bringing the inflatable kayak?")
    assert found.unindexed == 0 and "inflatable kayak" in found.matches[0].text
    assert import_chat(store, lighthouse, embedder).describe().startswith("“Lighthouse trip” is already up to date")


def test_a_cancel_mid_embedding_keeps_what_finished_and_reindex_embeds_only_the_rest(store):
    embedder = WordHashEmbedder()
    with pytest.raises(Cancelled) as cancelled:
        import_chat(store, DEMO_CHAT, embedder, cancel=lambda: len(embedder.batches) == 2)
    messages, _passages, windows = counts(store)
    kept = sum(embedder.batches)
    assert messages == 432 and 0 < kept < windows
    assert str(cancelled.value).startswith(f"The import was cancelled: the messages are saved, {kept} of {windows} "
                                           "passages were embedded and are kept.")
    assert unindexed(store, embedder) == windows - kept
    first_part = set(embedder.passages)

    embedder.forget()
    assert reindex(store, embedder) == windows - kept
    assert first_part.isdisjoint(embedder.passages)  # nothing embedded twice
    assert len(first_part | set(embedder.passages)) == windows
    assert unindexed(store, embedder) == 0
    again = import_chat(store, DEMO_CHAT, embedder)
    assert again.windows_added == 0 and again.describe().startswith("“Weekend away” is already up to date")


def test_importing_the_same_file_after_a_cancel_says_it_finished(store):
    embedder = WordHashEmbedder()
    with pytest.raises(Cancelled):
        import_chat(store, DEMO_CHAT, embedder, cancel=lambda: len(embedder.batches) == 1)
    left = counts(store)[2] - sum(embedder.batches)
    finished = import_chat(store, DEMO_CHAT, embedder)
    assert (finished.new_chat, finished.messages_added, finished.windows_added) == (False, 0, left)
    assert finished.describe().startswith(f"Finished importing “Weekend away”: all 431 messages were imported "
                                          f"before, and its last {left} passages are now searchable.")


def test_two_chats_stay_separate(store, lighthouse, jonas, tmp_path):
    embedder = WordHashEmbedder()
    trip = import_chat(store, lighthouse, embedder)
    flat = import_chat(store, jonas, embedder)
    assert flat.new_chat and flat.chat_id != trip.chat_id and flat.title == "Jonas"
    assert flat.describe() == "Imported “Jonas”: 8 messages from 15 Apr 2024 to 18 Apr 2024. 2 people: Jonas, Sam."
    chats = {chat.title: chat for chat in list_chats(store)}
    assert sorted(chats) == ["Jonas", "Lighthouse trip"]
    assert chats["Jonas"].participants == ["Jonas", "Sam"] and chats["Jonas"].message_count == JONAS_MESSAGES
    assert chats["Lighthouse trip"].participants == LIGHTHOUSE_PEOPLE
    before = counts(store)

    # Importing one again leaves both as they were.
    assert import_chat(store, jonas, embedder).messages_added == 0 and counts(store) == before
    # A third chat where two messages were forwarded from the trip's (same minute, sender and text)
    # is a chat of its own, and the trip keeps its messages.
    copied = [LIGHTHOUSE[2], LIGHTHOUSE[3]] + [
        "03/04/2024, 20:00 - Ana: Look what my brother is planning",
        "03/04/2024, 20:01 - Ben: Porthleven is lovely in May",
        "03/04/2024, 20:02 - Ana: We should go too",
        "14/04/2024, 09:00 - Ben: Booked a campsite near Helston",
        "14/04/2024, 09:05 - Ana: Amazing",
        "14/04/2024, 09:06 - Ben: Bring the tent pegs this time",
    ]
    other = import_chat(store, write_chat(tmp_path / "cornwall_too", copied), embedder)
    assert other.new_chat and other.chat_id not in (trip.chat_id, flat.chat_id)
    assert other.messages_added == len(copied)
    assert len(list_chats(store)) == 3 and counts(store)[0] == before[0] + len(copied)
    assert {chat.title: chat.message_count for chat in list_chats(store)}["Lighthouse trip"] == 32


def test_a_chat_of_only_system_lines_is_described_without_an_empty_date_span(store, tmp_path):
    quiet = write_chat(tmp_path / "quiet", [
        '03/04/2024, 19:40 - Maya created group "Quiet group"',
        "03/04/2024, 19:41 - Maya added Daniel",
        "03/04/2024, 19:42 - Daniel left",
    ])
    summary = import_chat(store, quiet, WordHashEmbedder())
    assert summary.describe() == "Imported “Quiet”: 3 WhatsApp notices."


def test_an_import_reports_a_line_whose_date_contradicts_the_files_order(store, tmp_path):
    odd = write_chat(tmp_path / "odd", [
        "2/1/20, 10:00 - Bob: hi", "3/1/20, 10:01 - Ann: ok", "4/1/20, 10:01 - Ann: ok", "5/1/20, 10:01 - Ann: ok",
        "3/13/20, 10:00 - Bob: read month first only",
    ])
    summary = import_chat(store, odd, WordHashEmbedder())
    assert summary.describe().endswith("1 line with a date that contradicts the file's other dates kept as text of "
                                       "the message above (line 5).")


def test_media_placeholders_and_call_notices_are_kept_out_of_what_is_searched(store, tmp_path):
    # Older iOS writes "<‎image omitted>" with a direction mark inside the brackets; Android writes call
    # notices as the caller's message. Runs of them were the top hit for unrelated questions (issue 21).
    export = write_chat(tmp_path / "old_ios", [
        "[12/03/2019, 10:01:02] Anna: \u200e<\u200eimage omitted>",
        "[12/03/2019, 10:01:03] Anna: <\u200evideo omitted>",
        "[12/03/2019, 10:01:04] Ben: \u200eMissed voice call",
        "[12/03/2019, 10:01:05] Ben: <attached: 00000012-PHOTO-2019-03-12-10-01-05.jpg>",
        "[12/03/2019, 10:02:00] Ben: The ferry leaves at nine from pier four",
        "[12/03/2019, 10:03:00] Anna: Missed voice call tomorrow? No, I'll pick up this time",
    ])
    embedder = WordHashEmbedder()
    summary = import_chat(store, export, embedder)
    assert summary.messages_added == 6
    embedded = "\n".join(embedder.passages)
    assert "The ferry leaves at nine" in embedded and "I'll pick up this time" in embedded
    for placeholder in ("omitted", "Ben: \u200eMissed voice call", "Ben: Missed voice call", "attached"):
        assert placeholder not in embedded
    # The messages themselves are kept: the viewer still shows them.
    assert counts(store)[0] == 6


def test_windows_are_embedded_in_batches_of_the_same_length_in_the_embedders_tokens(store):
    # A batch is padded to its longest text: grouping by characters instead wasted 6% of the model's
    # time on the English real chat (a line of emoji or long words is short in characters, not tokens).
    embedder = WordHashEmbedder()
    import_chat(store, DEMO_CHAT, embedder)
    lengths = [embedder.count_tokens(text) for text in embedder.passages]
    batches, start = [], 0
    for size in embedder.batches:
        batches.append(lengths[start:start + size])
        start += size
    assert len(batches) >= 5
    # No two batches overlap: the longer texts of one are never padded up to a length the next holds.
    ranges = sorted((min(batch), max(batch)) for batch in batches)
    assert all(longest <= next_shortest for (_, longest), (next_shortest, _) in zip(ranges, ranges[1:]))
