"""Prompts always fit the context window and drop the least useful parts first."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.citations import strip_markers
from gallery_app.core.chat.grounding import check_answer
from gallery_app.core.chat.prompting import (
    MIN_ANSWER_TOKENS, MIN_PROMPT_TOKENS, SYSTEM_PROMPT, Conversation, PromptBuilder, PromptTooLong, budget_problem,
)
from gallery_app.core.chat.retrieval import Match


class WordLLM:
    """A stand-in LLM whose tokens are words; optionally with a ChatML-like template."""

    def __init__(self, n_ctx: int, template: bool = True):
        self.n_ctx = n_ctx
        self.chat_template = "chatml" if template else None

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def render_chat(self, messages):
        text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"
        return text, ["<|end|>"]


def match(rank: int, words: int = 40) -> Match:
    text = "\n".join(f"Ana: passage {rank} line {i} " + "word " * 8 for i in range(words // 10))
    return Match(rank, 1, "Trip", "2024-05-01", ["Ana"], text, [rank], 1 - rank / 100, 1 / rank, [rank], text)


def conversation(turns: int) -> Conversation:
    history = Conversation()
    for i in range(turns):
        history.add(f"old question {i} " + "q " * 10, f"old answer {i} " + "a " * 10)
    return history


def test_everything_fits_when_there_is_room():
    prompt = PromptBuilder(WordLLM(4096), answer_tokens=100).build("Who paid?", [match(1), match(2)], conversation(2),
                                                                   participants=["Ana", "Ben"])
    assert len(prompt.matches) == 2 and len(prompt.turns) == 2
    assert SYSTEM_PROMPT.splitlines()[0] in prompt.text and "Question: Who paid?" in prompt.text
    assert prompt.stop == ["<|end|>", "\n\n", "\nAna:", "\nBen:"]


@pytest.mark.parametrize("n_ctx", [400, 600, 900, 1500])
def test_prompt_plus_answer_never_exceeds_the_window(n_ctx):
    llm = WordLLM(n_ctx)
    prompt = PromptBuilder(llm, answer_tokens=96).build("How much was it?", [match(i) for i in range(1, 9)],
                                                        conversation(12))
    assert len(prompt.tokens) + prompt.answer_tokens <= n_ctx
    assert prompt.matches and prompt.matches[0].chunk_id == 1  # the best passage always survives


def test_lowest_ranked_passages_and_oldest_turns_go_first():
    prompt = PromptBuilder(WordLLM(700), answer_tokens=96).build("q?", [match(i) for i in range(1, 7)], conversation(4))
    kept = [m.chunk_id for m in prompt.matches]
    assert kept == sorted(kept) and kept[0] == 1 and kept == list(range(1, len(kept) + 1))
    asked = [t.question for t in conversation(4).turns]
    kept_turns = [t.question for t in prompt.turns]
    assert kept_turns == asked[len(asked) - len(kept_turns):]  # whatever survives is the most recent


def test_only_the_last_six_turns_are_replayed_and_older_ones_are_summarised():
    history = conversation(9)
    prompt = PromptBuilder(WordLLM(8192)).build("q?", [match(1)], history)
    assert [t.question for t in prompt.turns] == [t.question for t in history.turns[-6:]]
    assert "old question 0" in prompt.summary and "Earlier in this conversation" in prompt.text


@pytest.mark.parametrize("excerpts", [True, False])
def test_a_single_huge_passage_is_trimmed_rather_than_overflowing(excerpts):
    """Before: with excerpts (the app's default) the text was trimmed while the model read the excerpt,
    so nothing shrank and the prompt was refused as if the question alone were too long."""
    prompt = PromptBuilder(WordLLM(300), answer_tokens=64, excerpts=excerpts).build("q?", [match(1, words=2000)])
    assert len(prompt.tokens) + 64 <= 300 and prompt.matches[0].text
    read = prompt.matches[0].excerpt if excerpts else prompt.matches[0].text
    assert read and read in prompt.context and len(read) < len(match(1, words=2000).text)


def test_base_models_get_a_completion_prompt_with_examples():
    prompt = PromptBuilder(WordLLM(4096, template=False)).build("Who paid?", [match(1)], conversation(1),
                                                                participants=["Ana"])
    assert prompt.text.rstrip().endswith("Q: Who paid?\nA:")
    assert "A: I don't know." in prompt.text  # the worked example teaches the model to abstain
    assert "\nQ:" in prompt.stop and "\nAna:" in prompt.stop


@pytest.mark.parametrize("answer,question,grounded", [
    ("Daniel paid for it.", "Who paid for the hotel?", True),
    ("It came to £340.", "How much was it?", True),
    ("Ryanair.", "Which airline?", False),          # a name nowhere in the context
    ("A total of 95 pounds.", "How much?", False),  # a number nowhere in the context
    ("The answer is Maya's surname.", "What is Maya's surname?", False),  # only repeats the question
    ("The answer to this question is: Maya's surname.", "What is Maya's surname?", False),  # SmolLM2 said it
    # The question restated with its verb inflected (SmolLM2 on an AVX2 CPU: "The aircraft that Daniel flew to …").
    ("Maya paid for the two nights.", "How much did Maya pay for the two nights?", False),
    ("The rooms cost.", "What did the room cost?", False),
    ("It costs £340 for the two nights.", "How much did the two nights cost?", True),
    # The lead-in without the answer (SmolLM2 on the real chats: "The answer to this question is:").
    ("The answer to this question is:", "How do you keep score?", False),
    ("The answer is:", "Who had the key?", False),
    ("दानियल ने पैसे दिए।", "Who paid?", True),  # words outside Latin script are words too
    ("No.", "Did they get a refund?", True),
    ("I don't know.", "What is Daniel's blood type?", True),
    # A possessive or object pronoun that starts a sentence is not a name the context must contain.
    ("Her card paid for it.", "Who paid for the room?", True),
    ("Our room came to £340.", "How much was the room?", True),
    ("Their plan was to pay by card. Him, Daniel.", "Who paid?", True),
])
def test_grounding_check(answer, question, grounded):
    context = "Daniel: I put the room on my card\nMaya: It came to £340 for the two nights"
    assert check_answer(answer, context, question).grounded is grounded


@pytest.mark.parametrize("answer", [
    # SmolLM2 on the demo chat and a real one: a lead-in, then the heading of a passage it was given.
    "The passage you used is:\n[1] Weekend away, 2024-06-10",
    "The answer to this question is:\n[1] Weekend away, 2024-06-10",
    "The context for the question is: [2] spanish_students, 2021-03-18",
    "weekend away, 2024-06-10.",
    "Here is what they said:",  # announces an answer and stops
])
def test_a_passage_heading_or_an_announcement_is_not_an_answer(answer):
    """Before: "The passage you used is: [1] Weekend away, 2024-06-10" was shown as the answer."""
    headings = ["Weekend away, 2024-06-10", "spanish_students, 2021-03-18"]
    context = "[1] Weekend away, 2024-06-10\nDaniel: I put the room on my card\n\n[2] spanish_students, 2021-03-18\nLean: dale"
    check = check_answer(strip_markers(answer), strip_markers(context), "When did Maya pay?", headings=headings)
    assert check.says_nothing and not check.grounded


@pytest.mark.parametrize("answer", [
    "On 2024-06-10, in Weekend away.",   # the heading's date is the answer to a "when"
    "Daniel paid: £340 for the room.",  # a colon inside an answer
])
def test_an_answer_that_uses_a_heading_or_a_colon_still_stands(answer):
    headings = ["Weekend away, 2024-06-10"]
    context = "[1] Weekend away, 2024-06-10\nDaniel: I put the room on my card, it came to £340"
    assert check_answer(strip_markers(answer), strip_markers(context), "When did Maya pay?", headings=headings).grounded


@pytest.mark.parametrize("answer,question,grounded", [
    ("Оплатил Даниил.", "Кто оплатил номер?", True),
    ("Оплатил Игорь.", "Кто оплатил номер?", False),  # a name nowhere in the context, in Cyrillic
    ("Номер оплатил.", "Кто оплатил номер?", False),   # only repeats the question
    ("Η Μαρια.", "Ποιος πλήρωσε;", True),                # Greek accents folded as Latin ones are
    ("Ο Νίκος.", "Ποιος πλήρωσε;", False),
    ("Daniel’s card paid.", "Who paid?", True),          # a typographic apostrophe is not part of the name
])
def test_grounding_in_other_scripts(answer, question, grounded):
    """Before: every letter outside Latin script was folded away, so an invented Cyrillic or Greek name
    passed the check, and an answer that restated a Russian question was taken for an answer."""
    context = "Даниил: Я оплатил номер своей картой\nΜαρία: Πλήρωσα εγώ\nDaniel: It came to £340"
    assert check_answer(answer, context, question).grounded is grounded


@pytest.mark.timeout(20)
@pytest.mark.parametrize("n_ctx,answer_tokens", [(10, 96), (512, 512), (120, 16)])
def test_a_window_too_small_for_any_prompt_is_refused_not_looped(n_ctx, answer_tokens):
    """Before: build() halved the question down to "" and then spun forever (100% CPU, Stop could not end it)."""
    builder = PromptBuilder(WordLLM(n_ctx), answer_tokens=answer_tokens)
    with pytest.raises(PromptTooLong) as error:
        builder.build("Who paid for the hotel?", [match(1), match(2)], conversation(3))
    message = str(error.value)
    assert f"of the {n_ctx} are left" in message and "Nothing was asked" in message and "--context" in message


def test_the_budget_check_names_what_to_change():
    assert budget_problem(4096, 96) is None
    assert budget_problem(MIN_PROMPT_TOKENS + MIN_ANSWER_TOKENS, MIN_ANSWER_TOKENS) is None
    assert budget_problem(512, 512) == (
        "A context of 512 tokens with 512 kept for the answer leaves 0 for the question and the messages; they "
        f"need at least {MIN_PROMPT_TOKENS}. Make the context at least {512 + MIN_PROMPT_TOKENS} tokens, or the "
        f"answer at most {512 - MIN_PROMPT_TOKENS}.")
    assert "at least 16 tokens" in budget_problem(4096, 0)
    assert budget_problem(300, 16).endswith(f"Make the context at least {16 + MIN_PROMPT_TOKENS} tokens.")
