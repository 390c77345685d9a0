"""Exports that are several chats pasted together: one passage never mixes two of them (issue 21)."""

from __future__ import annotations

from gallery_app.core.chat.conversations import conversation_of, conversation_starts
from gallery_app.core.chat.whatsapp import parse_chat_text
from tests.text_embedders import WordHashEmbedder, write_chat
from gallery_app.core.chat.importer import import_chat

NOTICE = "Messages to this chat and calls are now secured with end-to-end encryption. Tap for more info."
# Two one-to-one chats of a helpdesk, the second pasted after the first though it happened earlier:
# both ask on the afternoon of 18 January.
PASTED = [
    f"1/19/18, 04:20 - {NOTICE}",
    "1/18/18, 14:02 - \u202a+62 857-4105-7093\u202c: Is the dormitory free for scholarship students?",
    "1/18/18, 14:30 - SMB Telkom: Yes, free of charge",
    "1/18/18, 14:31 - \u202a+62 857-4105-7093\u202c: Thanks a lot",
    "",
    f"1/18/18, 09:00 - {NOTICE}",
    "1/18/18, 14:05 - \u202a+62 812-9199-2865\u202c: When does the written test open?",
    "1/18/18, 14:40 - SMB Telkom: Early February",
    "1/18/18, 14:41 - \u202a+62 812-9199-2865\u202c: Ok thank you",
    "",
    # A third one pasted without its notice, weeks earlier.
    "12/20/17, 10:00 - \u202a+62 813-1111-2222\u202c: Is the campus open in the holidays?",
]


def test_each_pasted_chat_is_a_conversation_of_its_own():
    messages = parse_chat_text("\n".join(PASTED) + "\n").messages
    starts = conversation_starts(messages)
    conversations = [conversation_of(m.line, starts) for m in messages if m.sender]
    assert conversations[:3] == [conversations[0]] * 3
    assert conversations[3:6] == [conversations[3]] * 3
    assert len({conversations[0], conversations[3], conversations[6]}) == 3


def test_a_chat_in_time_order_is_one_conversation():
    lines = ["03/05/2024, 09:00 - Ana: morning", "03/05/2024, 09:01 - Ben: hi",
             # A flight to another time zone puts the next message hours back: the same conversation.
             "03/05/2024, 03:30 - Ana: landed!",
             # Android writes a join at the time the phone learnt of it.
             "05/05/2024, 08:00 - Carla joined using this group's invite link",
             "04/05/2024, 10:00 - Ben: next day"]
    assert conversation_starts(parse_chat_text("\n".join(lines) + "\n").messages) == []


def test_a_passage_holds_one_pasted_chat_with_its_answers(store, tmp_path):
    embedder = WordHashEmbedder()
    import_chat(store, write_chat(tmp_path / "helpdesk", PASTED), embedder)
    passages = [text for (text,) in store.execute("SELECT text FROM chunks ORDER BY id")]
    assert len(passages) == 3
    dormitory = next(text for text in passages if "dormitory" in text)
    assert "free of charge" in dormitory and "written test" not in dormitory and "Early February" not in dormitory


def test_chats_pasted_from_a_phone_in_indonesian_are_told_apart_by_their_notice():
    notice = ("Pesan dan panggilan terenkripsi secara end-to-end. Tidak seorang pun di luar chat ini yang dapat "
              "membaca atau mendengarkannya, bahkan WhatsApp. Ketuk untuk info selengkapnya.")
    pasted = [f"09/02/18 17.21 - {notice}",
              "09/02/18 17.21 - Adisti: Ujian tulis gelombang 1 memakai baju apa?",
              "10/02/18 10.49 - SMB Telkom: Bebas rapih sopan Dek",
              f"10/02/18 11.00 - {notice}",
              "10/02/18 11.05 - Rani: Biaya per semester berapa kak?"]
    messages = parse_chat_text("\n".join(pasted) + "\n").messages
    starts = conversation_starts(messages)
    conversations = [conversation_of(m.line, starts) for m in messages if m.sender]
    assert conversations[0] == conversations[1] != conversations[2]
