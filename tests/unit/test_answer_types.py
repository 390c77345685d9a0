"""Which questions ask for an amount, and which messages hold one, in the languages chats are written in."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.answer_types import asks_for_an_amount, holds_a_number


@pytest.mark.parametrize("question, asks", [
    ("How much did Rahul's family pay for their Maserati?", True),
    ("What price did Rahul ask for the SUV he advertised to the group?", True),
    ("Roughly how many new students does Telkom University take in each year?", True),
    ("Hoeveel pogingen had Vicky nodig?", True),
    ("What time was the reservation?", True),
    ("Hoe laat begint het?", True),
    ("¿Cuánto dinero le pidió el registrador?", True),
    ("¿A qué hora abre el buffet de la facultad?", True),
    ("Lalu berapa biaya per semesternya?", True),
    ("Farewell mein kitna dena pada?", True),
    ("Wie viel kostet die Wohnung pro Jahr?", True),
    ("Combien coûte le billet ?", True),
    ("A que horas abre a cantina?", True),
    ("Who got stuck halfway across a forest cable ride?", False),
    ("Where did Rahul go for Thanksgiving?", False),
    ("¿Dónde queda el lugar para sacar fotocopias?", False),
    ("Somehow they made it", False),  # "how" inside a word is not a question word
])
def test_a_question_that_asks_for_an_amount(question: str, asks: bool):
    assert asks_for_an_amount(question) is asks


@pytest.mark.parametrize("text, holds", [
    ("Highest is 25k", True),
    ("Bpp untuk s1 sistem informasi 7,5 juta dek", True),
    ("Sekitar 8ribu an", True),
    ("at 4:15 in the hall", True),
    ("Cool place to just hang out", False),
    ("https://docs.google.com/spreadsheets/d/14WgOD6CcOGrK6Y8/edit#gid=0", False),  # a link's digits
    ("@919112845539 @919588256424", False),  # mentions of phone numbers
])
def test_a_message_that_holds_a_number(text: str, holds: bool):
    assert holds_a_number(text) is holds
