"""Passages keep who said what, never span two days, and fit the embedder's token budget."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from gallery_app.core.chat.chunking import ChunkInput, ChunkingConfig, chunk_messages


def count_words(text: str) -> int:
    """A stand-in tokenizer: two special tokens plus one token per word."""
    return 2 + len(text.split())


def messages(n: int, *, start=datetime(2024, 5, 1, 9, 0), step=timedelta(minutes=5), text="hello there"):
    return [ChunkInput(i + 1, start + i * step, ["Ana", "Ben"][i % 2], f"{text} {i}") for i in range(n)]


def test_every_line_starts_with_its_sender():
    items = [ChunkInput(1, datetime(2024, 5, 1, 9), "Ana", "first line\nsecond line\n\nthird"),
             ChunkInput(2, datetime(2024, 5, 1, 9, 1), "Ben", "ok")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=100)
    assert chunk.text.split("\n") == ["Ana: first line", "Ana: second line", "Ana: third", "Ben: ok"]
    assert chunk.message_ids == [1, 2] and chunk.senders == ["Ana", "Ben"]


def test_a_new_passage_starts_when_the_day_changes():
    items = messages(6, start=datetime(2024, 5, 1, 22, 0), step=timedelta(minutes=30))
    chunks = chunk_messages(items, count_words, max_tokens=500)
    assert [c.day.isoformat() for c in chunks] == ["2024-05-01", "2024-05-02"]
    assert [c.message_ids for c in chunks] == [[1, 2, 3, 4], [5, 6]]
    assert all(c.first_timestamp.date() == c.last_timestamp.date() == c.day for c in chunks)


def test_passages_stay_within_the_token_budget():
    chunks = chunk_messages(messages(100), count_words, max_tokens=512, config=ChunkingConfig(max_tokens=40))
    assert len(chunks) > 5
    assert all(c.tokens <= 40 for c in chunks)
    assert sorted(i for c in chunks for i in c.message_ids) == list(range(1, 101))


def test_a_long_message_is_split_at_sentences_and_every_part_keeps_the_sender():
    sentences = " ".join(f"Sentence number {i} is here." for i in range(40))
    (long_message,) = [ChunkInput(1, datetime(2024, 5, 1, 9), "Chloé", sentences)]
    chunks = chunk_messages([long_message], count_words, max_tokens=30)
    lines = [line for c in chunks for line in c.text.split("\n")]
    assert len(chunks) > 3 and all(c.tokens <= 30 for c in chunks)
    assert all(line.startswith("Chloé: ") for line in lines)
    assert all(line.endswith(".") for line in lines)  # cut between sentences, not inside one
    assert " ".join(line.removeprefix("Chloé: ") for line in lines) == sentences
    assert all(c.message_ids == [1] for c in chunks)


def test_a_sentence_longer_than_the_budget_is_split_between_words():
    words = " ".join(f"w{i}" for i in range(200))
    chunks = chunk_messages([ChunkInput(1, datetime(2024, 5, 1), "Ana", words)], count_words, max_tokens=25)
    assert all(c.tokens <= 25 for c in chunks)
    assert " ".join(l.removeprefix("Ana: ") for c in chunks for l in c.text.split("\n")) == words


def test_the_date_can_lead_the_passage():
    (chunk,) = chunk_messages(messages(2), count_words, max_tokens=100, config=ChunkingConfig(include_date=True))
    assert chunk.text.split("\n")[0] == "2024-05-01"


def test_a_long_pause_can_start_a_new_passage():
    items = messages(4, step=timedelta(hours=3))
    assert len(chunk_messages(items, count_words, max_tokens=500)) == 1
    assert len(chunk_messages(items, count_words, max_tokens=500, config=ChunkingConfig(max_gap_minutes=60))) == 4


def test_underestimated_tokens_are_caught_by_the_exact_count():
    # Joined passages cost more than their lines suggest: the exact count still keeps them in budget.
    def lumpy(text: str) -> int:
        return count_words(text) + 3 * text.count("\n")

    chunks = chunk_messages(messages(60), lumpy, max_tokens=30)
    assert all(c.tokens <= 30 for c in chunks)
    assert sorted(i for c in chunks for i in c.message_ids) == list(range(1, 61))


def test_a_budget_with_no_room_is_refused():
    with pytest.raises(ValueError, match="no room"):
        chunk_messages(messages(2), count_words, max_tokens=10)


# --- windows --------------------------------------------------------------------------------------

ANNOUNCEMENT = ("Hi all, the trip is confirmed. We leave on Friday at 8 from the station. "
                "Bring warm clothes because the cabin has no heating. The hotspot costs 12 euros for the weekend. "
                "Dinner on Saturday is at the lake restaurant, booked for nine people. "
                "Please pay Ana back for the train tickets before Thursday.")


def test_emoji_grids_and_reactions_are_left_out_of_every_window():
    items = [ChunkInput(1, datetime(2022, 1, 23, 12), "Rens", "Woordle 218 3/6\n\n⬛⬛🟨🟨🟨\n🟩🟩🟩🟩🟩"),
             ChunkInput(2, datetime(2022, 1, 23, 12, 1), "Vicky", "😂😂😂"),
             ChunkInput(3, datetime(2022, 1, 23, 12, 2), "Frans", "Poriën mag niet als eerste woord")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=200)
    # The passage drops the grid but keeps every message: a reaction that is only emoji stays.
    assert chunk.text.split("\n") == ["Rens: Woordle 218 3/6", "Vicky: 😂😂😂", "Frans: Poriën mag niet als eerste woord"]
    assert chunk.message_ids == [1, 2, 3]
    (whole,) = chunk_messages(items, count_words, max_tokens=200, config=ChunkingConfig(trim_noise=False))
    assert "🟩" in whole.text
    windows = chunk.windows(ChunkingConfig())
    assert windows and all("🟩" not in text and "😂" not in text for _ids, text in windows)
    assert any(ids == [1, 3] and text == "Rens: Woordle 218 3/6\nFrans: Poriën mag niet als eerste woord"
               for ids, text in windows)


def test_a_long_message_is_searched_one_group_of_sentences_at_a_time():
    items = [ChunkInput(1, datetime(2024, 5, 1, 9), "Ana", ANNOUNCEMENT),
             ChunkInput(2, datetime(2024, 5, 1, 9, 5), "Ben", "ok")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=400)
    windows = chunk.windows(ChunkingConfig(sentence_window_chars=120))
    singles = [text for ids, text in windows if ids == [1]]
    assert len(singles) >= 3 and all(text.startswith("Ana: ") and len(text) < 200 for text in singles)
    assert any("hotspot costs 12 euros" in text for text in singles)
    assert any(ids == [1, 2] for ids, _text in windows)  # and the window with its reply


def test_short_messages_are_searched_only_in_windows_of_consecutive_messages():
    (chunk,) = chunk_messages(messages(6), count_words, max_tokens=200)
    windows = chunk.windows(ChunkingConfig())
    assert all(len(ids) > 1 for ids, _text in windows)
    assert [ids for ids, _ in windows] == [[1, 2, 3, 4], [3, 4, 5, 6]]


def _conversation(turns: list[tuple[str, list[str]]]) -> list[ChunkInput]:
    said = [(sender, text) for sender, texts in turns for text in texts]
    return [ChunkInput(n, datetime(2023, 3, 1, 10, n), sender, text) for n, (sender, text) in enumerate(said, 1)]


def test_a_window_finishes_a_turn_the_count_would_cut():
    # Counted in fours, dam's two-message question would be split between two windows.
    items = _conversation([("dam", ["Alguien cursa a la noche?"]), ("Lean", ["Yo", "Por?"]),
                           ("dam", ["Y en qué horario?", "Los lunes también?"]),
                           ("Lean", ["De 19 a 23, lunes a jueves"]), ("dam", ["Gracias"]), ("Lean", ["De nada"]),
                           ("dam", ["Nos vemos"])])
    (chunk,) = chunk_messages(items, count_words, max_tokens=400)
    assert [ids for ids, _text in chunk.windows(ChunkingConfig())] == [[1, 2, 3, 4, 5], [6, 7, 8, 9]]
    # Counted where the count falls, as before: the question's two messages are in different windows.
    assert [ids for ids, _ in chunk.windows(ChunkingConfig(finish_turns=None))] == [[1, 2, 3, 4], [5, 6, 7, 8],
                                                                                    [6, 7, 8, 9]]


def test_a_window_ends_where_a_long_turn_begins_rather_than_cutting_it():
    items = _conversation([("Ana", ["Who has the key?"]), ("Ben", ["Not me"]), ("Ana", ["Hm"]),
                           ("Cas", ["I do", "It was in my bag", "Under the charger"]), ("Ana", ["Phew"])])
    (chunk,) = chunk_messages(items, count_words, max_tokens=400)
    windows = [ids for ids, _text in chunk.windows(ChunkingConfig())]
    assert windows == [[1, 2, 3], [4, 5, 6, 7]]
    assert [ids for ids, _ in chunk.windows(ChunkingConfig(finish_turns=None))] == [[1, 2, 3, 4], [4, 5, 6, 7]]


def test_a_system_line_reads_without_a_sender():
    items = [ChunkInput(1, datetime(2017, 8, 24, 2, 12), "", "Udit changed the subject to “More than Squash”"),
             ChunkInput(2, datetime(2017, 8, 24, 2, 13), "Rahul", "lol")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=200)
    assert chunk.text.split("\n") == ["Udit changed the subject to “More than Squash”", "Rahul: lol"]
    assert chunk.senders == ["Rahul"]


def test_phone_numbers_can_be_shown_but_not_searched():
    # Off by default: measured on the real chats, it lifts two and costs a third more (docs/chat.md).
    # A helpdesk's applicants are known only by number; a club's members mention each other by number.
    items = [ChunkInput(1, datetime(2018, 1, 18, 14, 2), "+62 857-4105-7093", "Is the dormitory free?"),
             ChunkInput(2, datetime(2018, 1, 18, 14, 30), "SMB Telkom", "Yes, free of charge"),
             ChunkInput(3, datetime(2018, 1, 18, 14, 31), "Rohan", "@\u2068919439797508\u2069 group pe bata de"),
             ChunkInput(4, datetime(2018, 1, 18, 14, 32), "Rohan", "@919439797508 @917018059175")]
    (chunk,) = chunk_messages(items, count_words, max_tokens=200)
    assert "+62 857-4105-7093: Is the dormitory free?" in chunk.text and "@919439797508 @917018059175" in chunk.text
    ((members, text),) = chunk.windows(ChunkingConfig(plain_mentions=True, plain_number_senders=True))
    assert text == "Is the dormitory free?\nSMB Telkom: Yes, free of charge\nRohan: group pe bata de"
    assert members == [1, 2, 3]  # a message of mentions only is not searched


def test_a_reply_that_opens_a_day_is_searched_with_the_question_before_it():
    # The helpdesk answers two days later: "Sekitar 8ribu an" alone says nothing of what was asked.
    items = [ChunkInput(1, datetime(2018, 2, 7, 15, 26), "SMB Telkom", "Silakan akses smb.telkomuniversity.ac.id"),
             ChunkInput(2, datetime(2018, 2, 7, 15, 33), "+62 896", "Untuk siswa yang diterima pertahun berapa kak?"),
             ChunkInput(3, datetime(2018, 2, 9, 14, 30), "SMB Telkom", "Sekitar 8ribu an"),
             ChunkInput(4, datetime(2018, 2, 9, 14, 49), "+62 896", "Jurusan TI ada brp kelas kak?")]
    first, second = chunk_messages(items, count_words, max_tokens=200)
    assert second.message_ids == [3, 4] and second.text.startswith("SMB Telkom: Sekitar")  # the passage is its day
    ((members, text),) = second.windows(ChunkingConfig(lead_in=True))
    assert members == [3, 4]  # the question is context, not a message of the window
    assert text.split("\n") == ["+62 896: Untuk siswa yang diterima pertahun berapa kak?",
                                "SMB Telkom: Sekitar 8ribu an", "+62 896: Jurusan TI ada brp kelas kak?"]
    assert second.windows(ChunkingConfig(lead_in=False))[0][1].startswith("SMB Telkom: Sekitar")
    assert first.windows(ChunkingConfig(lead_in=True))[0][1].startswith("SMB Telkom: Silakan")  # nothing before


def test_a_window_inside_a_passage_is_read_after_the_message_before_it():
    (chunk,) = chunk_messages(messages(8), count_words, max_tokens=200)
    windows = chunk.windows(ChunkingConfig(lead_in=True))
    assert [ids for ids, _ in windows] == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert windows[1][1].split("\n")[0] == "Ben: hello there 3"


def test_the_lead_in_comes_from_the_same_pasted_conversation_and_is_cut_to_its_end():
    question = "word " * 200 + "so how much is the dormitory?"
    items = [ChunkInput(1, datetime(2018, 1, 1, 9), "A", question, conversation=0),
             ChunkInput(2, datetime(2018, 1, 1, 10), "B", "unrelated", conversation=1),
             ChunkInput(3, datetime(2018, 1, 2, 9), "Desk", "free of charge", conversation=0)]
    chunks = chunk_messages(items, count_words, max_tokens=400)
    reply = next(chunk for chunk in chunks if chunk.message_ids == [3])
    ((_members, text),) = reply.windows(ChunkingConfig(lead_in=True))
    lead, answer = text.split("\n")
    assert lead.endswith("so how much is the dormitory?") and len(lead) <= 150 and answer == "Desk: free of charge"
    assert lead.startswith("A: …word ")  # cut short, it still says who wrote it


def test_a_question_written_as_several_messages_leads_in_whole():
    # The helpdesk: an applicant asks in three messages; the desk's reply answers the first of them.
    asked = ["Biaya semester jurusan SI kak", "Oh gak langsung bayar ya kak?", "Pendaftaran reguler kapan kak?"]
    items = [ChunkInput(1, datetime(2018, 2, 10, 11, 29), "Desk", "Nanti ada tahap pembayaran nya dek")]
    items += [ChunkInput(1 + n, datetime(2018, 2, 10, 11, 30 + n), "+62 821", text) for n, text in enumerate(asked, 1)]
    items += [ChunkInput(5 + n, datetime(2018, 2, 10, 11, 44 + n), "Desk", text) for n, text in
              enumerate(["Bpp untuk s1 SI 7,5 juta dek", "Tidak dek, 3 tahap", "UTG1 terakhir hari ini", "Sama sama"])]
    (chunk,) = chunk_messages(items, count_words, max_tokens=400)
    reply = dict((ids[0], text) for ids, text in chunk.windows(ChunkingConfig()))[5]
    assert reply.split("\n")[:4] == [f"+62 821: {text}" for text in asked] + ["Desk: Bpp untuk s1 SI 7,5 juta dek"]
    # A reply that opens the next day is led in by the whole question too, from the passage before.
    next_day = items[:4] + [ChunkInput(m.id, m.timestamp.replace(day=11), m.sender, m.text) for m in items[4:]]
    _asked, opening = chunk_messages(next_day, count_words, max_tokens=400)
    assert opening.message_ids[0] == 5
    assert opening.windows(ChunkingConfig())[0][1].split("\n")[:4] == reply.split("\n")[:4]


def test_a_window_is_not_led_in_by_its_own_senders_message():
    # Maya's "the cottage came to 340" would make the next day's window a second home for her own answer.
    items = [ChunkInput(1, datetime(2024, 6, 4, 9, 40), "Maya", "Thanks! The cottage came to 340 for two nights"),
             ChunkInput(2, datetime(2024, 6, 5, 18, 0), "Maya", "Shall we bring the board games?"),
             ChunkInput(3, datetime(2024, 6, 5, 18, 5), "Daniel", "Yes, and the cards")]
    _first, second = chunk_messages(items, count_words, max_tokens=200)
    ((_members, text),) = second.windows(ChunkingConfig())
    assert "cottage" not in text


def test_a_lead_in_that_would_not_fit_the_embedder_beside_the_passage_is_left_out():
    items = [ChunkInput(1, datetime(2018, 1, 1, 9), "A", "how much is the dormitory for one year?"),
             ChunkInput(2, datetime(2018, 1, 2, 9), "Desk", "free " * 20)]
    _first, tight = chunk_messages(items, count_words, max_tokens=25)
    _first, roomy = chunk_messages(items, count_words, max_tokens=200)
    assert tight.lead_in is None and roomy.lead_in == ("A", "A: how much is the dormitory for one year?")
    assert tight.windows(ChunkingConfig())[0][1].startswith("Desk: free")
