"""Answer instructions a person writes: validated by slot, laid out for chat and base models, and still
within the context window whatever they say; chat text in a slot is never read as a template."""

from __future__ import annotations

import pytest

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.instructions import (
    DEFAULT_INSTRUCTIONS, SYSTEM_PROMPT, InvalidInstructions, instructions_problem, parse_instructions,
    read_instructions,
)
from gallery_app.core.chat.prompting import (
    COMPLETION_EXAMPLE, Conversation, InstructionsStrategy, PromptBuilder, PromptTooLong, format_context,
)
from gallery_app.core.chat.retrieval import Match
from gallery_app.core.chat.session import ChatSession
from gallery_app.core.store import open_store
from tests.chat_helpers import HashEmbedder, ScriptedLLM


class WordLLM:
    """test_prompting's stand-in: words are tokens, the whole rendered prompt is tokenised; a ChatML-like template."""

    def __init__(self, n_ctx: int, template: bool = True):
        self.n_ctx = n_ctx
        self.chat_template = "chatml" if template else None
        self.rendered: list[list[dict]] = []

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def render_chat(self, messages):
        self.rendered.append(list(messages))
        return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n", ["<|end|>"]


def match(rank: int, words: int = 40, text: str | None = None) -> Match:
    body = text or "\n".join(f"Ana: passage {rank} line {i} " + "word " * 8 for i in range(words // 10))
    return Match(rank, 1, "Trip", "2024-05-01", ["Ana"], body, [rank], 1 - rank / 100, 1 / rank, [rank], body)


def conversation(turns: int) -> Conversation:
    history = Conversation()
    for i in range(turns):
        history.add(f"old question {i} " + "q " * 10, f"old answer {i} " + "a " * 10)
    return history


QUESTION_FIRST = "Be brief and kind.\n\nQuestion: {question}\n\nMessages:\n{context}\n\nCite a passage like [1]."
NO_RULES = "{context}\n{question}"
LONG_RULES = ("Rule: " + "always answer from the messages only, " * 40).strip() + (
    "\n\nContext:\n{context}\n\nQ: {question}")
ESCAPED = "Reply as {{\"answer\": …}}.\n\nMessages:\n{context}\n\nQuestion: {question}"


# --- the default is today's prompt, character for character ------------------------------------------

def test_the_default_chat_prompt_is_the_one_before_strategies():
    llm = WordLLM(4096)
    matches, history = [match(1), match(2)], conversation(8)
    prompt = PromptBuilder(llm).build("Who paid?", matches, history)
    summary = prompt.summary
    assert summary  # the older turns are folded into the system message
    context = format_context(matches, excerpts=True)
    expected = ([{"role": "system", "content": SYSTEM_PROMPT + f"\n\nEarlier in this conversation:\n{summary}"}]
                + [m for t in history.recent for m in ({"role": "user", "content": t.question},
                                                        {"role": "assistant", "content": t.answer})]
                + [{"role": "user", "content": f"Context:\n{context}\n\nQuestion: Who paid?"}])
    assert llm.rendered[-1] == expected


def test_the_default_completion_prompt_is_the_one_before_strategies():
    history = conversation(2)
    prompt = PromptBuilder(WordLLM(4096, template=False)).build("Who paid?", [match(1)], history)
    context = format_context([match(1)], excerpts=True)
    transcript = "".join(f"Q: {t.question}\nA: {t.answer}\n" for t in history.turns)
    assert prompt.text == (f"{SYSTEM_PROMPT}\n\n{COMPLETION_EXAMPLE}\nContext:\n{context}\n\n{transcript}"
                           "Q: Who paid?\nA:")


def test_the_default_everywhere_is_the_core_default():
    assert AskOptions().instructions == DEFAULT_INSTRUCTIONS
    assert parse_instructions(DEFAULT_INSTRUCTIONS).is_default and InstructionsStrategy().is_default
    assert PromptBuilder(WordLLM(4096)).strategy.is_default


# --- validation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,named", [
    ("", ["empty", "{context}", "{question}"]),
    ("   \n\n ", ["empty"]),
    ("Answer from the messages.\n\n{context}", ["need {question}", "where the question goes"]),
    ("Question: {question}", ["need {context}", "where the messages found go"]),
    ("Be brief.", ["need {context}", "and {question}"]),
    ("{context}\n{question}\nAnswer in {language}.", ["{language}, which is not a slot", "{{ or }}"]),
    ("{Context}\n{question}", ["{Context}", "Did you mean {context}?"]),
    ("{ question }\n{context}", ["{ question }", "Did you mean {question}?"]),
    ("{context}\n{question}\n{a} {b} {a}", ["{a} and {b}, which are not slots"]),
    ('Reply as {"answer": …}\n{context}\n{question}', ['{"answer": …}', "double it"]),
    ("{}\n{context}\n{question}", ["{}, which is not a slot"]),
    ("Rules {\n\n{context}\n{question}", ["lone “{” on line 1"]),
    ("{context}\n{question}\nsmile :}", ["lone “}” on line 3"]),
    ("{{context}}\n{question}", ["need {context}"]),  # an escape is not the slot
    ("{context}\n{question}\nagain: {context}", ["{context} 2 times (lines 1 and 3)", "once"]),
    ("{question}\n{context}\n{question}", ["{question} 2 times"]),
    ("Context: {context} Question: {question}", ["one line (line 1)", "different lines"]),
])
def test_an_invalid_template_is_refused_by_what_is_wrong(text, named):
    problem = instructions_problem(text)
    assert problem is not None
    for words in named:
        assert words in problem, problem
    with pytest.raises(InvalidInstructions) as error:
        parse_instructions(text)
    assert str(error.value) == problem
    with pytest.raises(InvalidInstructions):
        AskOptions(instructions=text)  # refused where the options are made, before any model loads


@pytest.mark.parametrize("text", [DEFAULT_INSTRUCTIONS, QUESTION_FIRST, NO_RULES, LONG_RULES, ESCAPED])
def test_valid_templates_have_no_problem(text):
    assert instructions_problem(text) is None
    assert InstructionsStrategy(text).is_default is (text == DEFAULT_INSTRUCTIONS)


def test_rules_go_to_the_system_message_and_the_request_to_the_user_turn():
    llm = WordLLM(4096)
    PromptBuilder(llm, strategy=InstructionsStrategy(QUESTION_FIRST)).build("Who paid?", [match(1)])
    system, user = llm.rendered[-1]
    assert system == {"role": "system", "content": "Be brief and kind."}
    context = format_context([match(1)], excerpts=True)
    assert user["content"] == f"Question: Who paid?\n\nMessages:\n{context}\n\nCite a passage like [1]."


def test_a_template_without_rules_has_no_system_message():
    llm = WordLLM(4096)
    PromptBuilder(llm, strategy=InstructionsStrategy(NO_RULES)).build("Who paid?", [match(1)])
    (user,) = llm.rendered[-1]
    assert user["content"] == format_context([match(1)], excerpts=True) + "\nWho paid?"


def test_a_base_model_asks_the_question_as_the_transcripts_last_line():
    prompt = PromptBuilder(WordLLM(4096, template=False), strategy=InstructionsStrategy(QUESTION_FIRST)).build(
        "Who paid?", [match(1)], conversation(1))
    context = format_context([match(1)], excerpts=True)
    assert prompt.text.startswith(f"Be brief and kind.\n\n{COMPLETION_EXAMPLE}\nMessages:\n{context}\n\n"
                                  "Cite a passage like [1].\n\nQ: old question 0")
    assert prompt.text.endswith("Q: Who paid?\nA:") and prompt.text.count("Who paid?") == 1


def test_escaped_braces_are_written_as_braces():
    llm = WordLLM(4096)
    PromptBuilder(llm, strategy=InstructionsStrategy(ESCAPED)).build("q?", [match(1)])
    assert llm.rendered[-1][0]["content"] == 'Reply as {"answer": …}.'


# --- chat text is data --------------------------------------------------------------------------------

@pytest.mark.parametrize("instructions", [DEFAULT_INSTRUCTIONS, QUESTION_FIRST, ESCAPED])
@pytest.mark.parametrize("template", [True, False], ids=["chat", "base"])
def test_braces_in_messages_and_questions_are_never_slots(instructions, template):
    forged = "Ana: see {question} and {context} {0} {{ }} {__class__} }{"
    question = "What did {context} say about {question}?"
    prompt = PromptBuilder(WordLLM(4096, template=template), strategy=InstructionsStrategy(instructions)).build(
        question, [match(1, text=forged)])
    assert forged in prompt.text and question in prompt.text
    assert prompt.text.count(forged) == 1 and prompt.text.count(question) == 1


# --- the context never overflows ----------------------------------------------------------------------

class EveryPassageTwice(InstructionsStrategy):
    """A strategy object, not a template: it lays every passage out twice (a wasteful layout)."""

    is_default = False

    def context(self, matches, *, excerpts):
        once = format_context(matches, excerpts=excerpts)
        return f"{once}\n\nOnce more:\n{once}"


STRATEGIES = {"question first": InstructionsStrategy(QUESTION_FIRST), "no rules": InstructionsStrategy(NO_RULES),
              "long rules": InstructionsStrategy(LONG_RULES), "escaped": InstructionsStrategy(ESCAPED),
              "twice": EveryPassageTwice()}


@pytest.mark.parametrize("name", list(STRATEGIES))
@pytest.mark.parametrize("template", [True, False], ids=["chat", "base"])
@pytest.mark.parametrize("n_ctx", [600, 900, 1500, 4096])
def test_a_custom_strategys_prompt_never_exceeds_the_window(name, template, n_ctx):
    llm = WordLLM(n_ctx, template=template)
    builder = PromptBuilder(llm, answer_tokens=96, strategy=STRATEGIES[name])
    long_passages = [match(i, words=400) for i in range(1, 13)]
    prompt = builder.build("How much was the ferry in the end?", long_passages, conversation(12))
    assert len(prompt.tokens) + prompt.answer_tokens <= n_ctx
    assert len(llm.tokenize(prompt.text)) == len(prompt.tokens)  # measured on the final rendered prompt
    assert prompt.matches and prompt.matches[0].chunk_id == 1  # the best passage always survives
    assert prompt.context == STRATEGIES[name].context(prompt.matches, excerpts=True)


def test_instructions_too_long_for_the_window_are_refused_naming_them():
    llm = WordLLM(600)
    long = "Answer carefully. " * 400 + "\n\n{context}\n{question}"
    with pytest.raises(PromptTooLong) as error:
        PromptBuilder(llm, answer_tokens=96, strategy=InstructionsStrategy(long)).build("Who paid?", [match(1)])
    message = str(error.value)
    assert "of the 600 are left" in message and "shorten the answer instructions" in message
    assert "Settings → Answer instructions, or --instructions" in message


# --- where the instructions come from -----------------------------------------------------------------

def test_a_session_asks_with_the_options_instructions(tmp_path):
    conn = open_store(tmp_path / "gallery.db")
    try:
        session = ChatSession(conn, HashEmbedder(), ScriptedLLM([]), AskOptions(instructions=QUESTION_FIRST))
        assert session.prompts.strategy.instructions.text == QUESTION_FIRST
        replaced = ChatSession(conn, HashEmbedder(), ScriptedLLM([]), strategy=STRATEGIES["twice"])
        assert replaced.prompts.strategy is STRATEGIES["twice"]
    finally:
        conn.close()


def test_a_file_of_instructions_is_read_as_utf8(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_bytes(("\ufeffRéponds en français.\r\n\r\n{context}\r\n{question}\r\n").encode("utf-8"))
    instructions = read_instructions(path)
    assert instructions.text == "Réponds en français.\n\n{context}\n{question}"  # BOM, CRLF, final newline gone
    assert instructions.rules == "Réponds en français."


@pytest.mark.parametrize("content,named", [
    (None, "does not exist"),
    ("folder", "is a folder"),
    (b"R\xe9ponds\n{context}\n{question}", "is not UTF-8 text (its byte 2 is not)"),
    (b"{context}\n{qestion}", "{qestion}, which is not a slot"),
    (b"", "are empty"),
])
def test_a_bad_instructions_file_is_refused_by_name(tmp_path, content, named):
    path = tmp_path / "rules.txt"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InvalidInstructions) as error:
        read_instructions(path)
    assert named in str(error.value) and str(path) in str(error.value)
    assert "Nothing was asked" in str(error.value)
