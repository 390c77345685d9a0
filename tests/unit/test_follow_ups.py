"""Which questions follow up on the one before: examples written here, in the chats' languages (the
eval's questions are measured in bench/chat_eval.py --in-a-row, not copied here)."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.follow_ups import is_follow_up

FOLLOW_UPS = [
    "How much was it?", "Where is it?", "Why?", "And on Sunday?", "What about the second night?",
    "Who paid for that?", "Did she come in the end?", "When did he send them?", "En wie won er?",
    "En hoeveel kostte dat?", "¿Y cuánto costó?", "¿Dónde está eso?", "Lalu kapan acaranya?",
    "Terus siapa yang datang?", "Aur kab hai?", "Und wann war das?", "Et combien ça coûte ?",
    "How much did the tickets for them cost?",
]
STANDALONE = [
    "Who ended up paying for the hotel in Rye?", "Who is Gill?", "Wanneer is Iris jarig?",
    "What did Rens find for the two words he entered in the word game on 24 January?",
    "¿En qué restaurante celebraron el cumpleaños de la abuela?", "En qué fecha es el examen final?",
    "When was the group given its current name?", "Was there a deadline for the registration form?",
    "Which carrier did Akshay sign up for when he moved to Texas?",
    "Kapan batas waktu pendaftaran mahasiswa baru tahun ini?", "Hoe heet de hond van Maya?",
    "",
]


@pytest.mark.parametrize("question", FOLLOW_UPS)
def test_a_question_leaning_on_the_one_before_is_a_follow_up(question):
    assert is_follow_up(question)


@pytest.mark.parametrize("question", STANDALONE)
def test_a_question_that_says_what_it_asks_about_stands_alone(question):
    assert not is_follow_up(question)
