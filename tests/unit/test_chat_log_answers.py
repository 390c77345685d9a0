"""A model that continues the chat log ("Name: …", a message header, "<Media omitted>") is not answering."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.grounding import check_answer, continues_chat_log


# --- chat-log continuations and placeholders ------------------------------------------------------
@pytest.mark.parametrize("output", [
    "Sophia H.: Ich werd später da sein",
    "Philip P.: 10€",
    "Daniel: I put the room on my card",
    "~ Sophia: ja",
    "+49 151 2345678: ok",
    "小明: 我来了",
    "Ана: привет",
    "Ana de la Cruz: hola",
    "[12/03/17, 10:04:11] Sophia H.: Ich werd…",
    "[12/03/17, 10:04:11]",
    "12/03/2017, 10:04 - Philip P.: 10€",
    "12/03/2017, 10:04 -",
    "[10:04, 12/03/2017] Ana: hi",
    "<Media omitted>",
    "<Medien ausgeschlossen>",
    "<attached: 00000012-PHOTO-2017-03-12-10-04-11.jpg>",
    "image omitted",
    "\u200eaudio omitted",
    "Bild weggelassen",
    "imagen omitida",
    "This message was deleted",
    "Philip P.: 10€\nSophia H.: ok",
])
def test_chat_log_is_recognised(output):
    assert continues_chat_log(output) is True
    assert check_answer(output, "Philip P.: 10€\nSophia H.: Ich werd später da sein", "Wer?").chat_log


@pytest.mark.parametrize("output", [
    "Answer: 5",
    "A: Daniel.",
    "Total: £340",
    "Antwort: Daniel",
    "Réponse: Daniel",
    "Short answer: Daniel paid",
    "In short: Daniel paid",
    "The answer: Daniel",
    "Maya said: it came to £340",
    "Yes: Daniel paid",
    "Daniel paid for the hotel [1].",
    "It came to £340 for the two nights.",
    "12/03/2017 at 10:04 they arrived",
    "At 10:04.",
    "340 pounds",
    "I don't know.",
    "mama: ich komme",  # lowercase: only a known participant makes it a chat line
])
def test_answers_are_not_taken_for_chat_log(output):
    assert continues_chat_log(output) is False


def test_known_participants_are_recognised_in_any_spelling():
    assert continues_chat_log("mama: ich komme", ["Mama"]) is True
    assert continues_chat_log("Answer: 5", ["Mama"]) is False


@pytest.mark.parametrize("start,verdict", [
    ("Soph", None),               # could still become "Sophia H.: …"
    ("Sophia H.:", None),         # the colon must be followed by a space
    ("Sophia H.: Ich", True),
    ("Daniel", None),
    ("Daniel paid", None),        # "paid" may still be growing ("Paidi")
    ("Daniel paid for", False),   # no name goes on like this
    ("Ana de la", None),          # names have particles
    ("image omitted", None),      # a placeholder when it ends here
    ("mama", None),
    ("Daniel paid.\n", False),
    ("[12/03/17, 10:0", None),
    ("<attached: 0000", None),
    ("Answer: 5", False),
])
def test_while_writing_the_start_is_judged_only_when_it_can_be(start, verdict):
    assert continues_chat_log(start, finished=False) is verdict
