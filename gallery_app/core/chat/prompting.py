"""Grounded prompts that always fit: rules, retrieved passages, recent turns, the question.

How the rules, the passages and the question are laid out is a ``PromptStrategy``, replaceable as one
piece (``InstructionsStrategy`` makes one of a person's answer instructions; the app's own is the default).
What is dropped and how much fits is the builder's alone: it measures each rendering of the strategy,
so no strategy can make a prompt that overflows the context.

Every part is counted with the LLM's own tokenizer. When prompt + answer budget would not
fit the context window, the least useful parts go first — the running summary, passages
ranked below the top two, the oldest turns, then the remaining passages down to one, then that
passage's later lines — so "context is full" can never happen. When even the rules and the
question leave no room, the prompt is refused with a message saying which setting to change.
Chat models get their GGUF chat template; base models a plain completion prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from gallery_app.core.chat.ask_options import AskOptions
from gallery_app.core.chat.chat_model import ChatModel
from gallery_app.core.chat.citations import marker
from gallery_app.core.chat.instructions import (
    DEFAULT_INSTRUCTIONS, SYSTEM_PROMPT as SYSTEM_PROMPT, Instructions, fill, parse_instructions,
)
from gallery_app.core.chat.retrieval import Match
from gallery_app.core.errors import AppError

DONT_KNOW = "I don't know"
#: Base models follow examples better than instructions: one answer found in the context, one not.
COMPLETION_EXAMPLE = (
    "Example context:\n"
    "[1] Trip, 2024-05-01\n"
    "Sam: The bus leaves at 7, don't be late\n"
    "Lee: I'll bring the tickets\n"
    "Q: When does the bus leave?\n"
    "A: At 7 [1].\n"
    "Q: What colour is Sam's car?\n"
    "A: I don't know.\n"
    "Q: Who is bringing the tickets?\n"
    "A: Lee [1].\n"
)
#: What the context slot holds when nothing was found (a question asked without passages).
NO_MESSAGES = "(no messages found)"
MAX_REPLAYED_TURNS = 6
SUMMARY_TOKENS = 120
#: Tokens kept free besides the answer, for the template's markers the per-part counts miss.
SAFETY_MARGIN = 16
#: Room a prompt needs besides the answer: the rules (150 tokens with SmolLM2's template, 240 with
#: a base model's worked examples), the question and a short passage.
MIN_PROMPT_TOKENS = 320
MIN_ANSWER_TOKENS = 16
#: Where the settings live, for messages that name them.
BUDGET_SETTINGS = "Settings → LLM context size and Answer length, or --context and --answer-tokens"
INSTRUCTIONS_SETTINGS = "Settings → Answer instructions, or --instructions"


class PromptTooLong(AppError):
    """The settings leave no room for a prompt, or even the rules and the question do not fit."""


def check_budget(n_ctx: int, answer_tokens: int) -> None:
    problem = budget_problem(n_ctx, answer_tokens)
    if problem:
        raise PromptTooLong(problem, hint=f"Nothing was asked. Change it in {BUDGET_SETTINGS}.")


def budget_problem(n_ctx: int, answer_tokens: int) -> str | None:
    """Why a context window of ``n_ctx`` tokens cannot hold a prompt and an answer of ``answer_tokens``.

    A check of the settings before anything is asked; ``PromptBuilder.build`` measures the real prompt.
    """
    if answer_tokens < MIN_ANSWER_TOKENS:
        return f"An answer needs room for at least {MIN_ANSWER_TOKENS} tokens (the answer length is {answer_tokens})."
    if n_ctx - answer_tokens < MIN_PROMPT_TOKENS:
        shorter = (f", or the answer at most {n_ctx - MIN_PROMPT_TOKENS}"
                   if n_ctx - MIN_PROMPT_TOKENS >= MIN_ANSWER_TOKENS else "")
        return (f"A context of {n_ctx} tokens with {answer_tokens} kept for the answer leaves "
                f"{max(0, n_ctx - answer_tokens)} for the question and the messages; they need at least "
                f"{MIN_PROMPT_TOKENS}. Make the context at least {answer_tokens + MIN_PROMPT_TOKENS} tokens{shorter}.")
    return None


@dataclass(frozen=True)
class Turn:
    question: str
    answer: str
    #: The passages found for the question: a follow-up's answer usually sits near them in the chat.
    matches: tuple[Match, ...] = ()


@dataclass
class Conversation:
    """What was asked and answered so far; older turns are folded into a short summary."""

    turns: list[Turn] = field(default_factory=list)

    def add(self, question: str, answer: str, matches: Sequence[Match] = ()) -> None:
        self.turns.append(Turn(question, answer.strip(), tuple(matches)))

    @property
    def recent(self) -> list[Turn]:
        return self.turns[-MAX_REPLAYED_TURNS:]

    @property
    def older(self) -> list[Turn]:
        return self.turns[:-MAX_REPLAYED_TURNS]

    @property
    def previous_question(self) -> str | None:
        return self.turns[-1].question if self.turns else None

    @property
    def previous_matches(self) -> tuple[Match, ...]:
        return self.turns[-1].matches if self.turns else ()

    def clear(self) -> None:
        self.turns.clear()


def summarise(turns: Sequence[Turn], count_tokens: Callable[[str], int], budget: int = SUMMARY_TOKENS) -> str:
    """A running summary of older turns: the newest ones that fit ``budget`` tokens, oldest first."""
    lines: list[str] = []
    used = 0
    for turn in reversed(turns):
        line = f"Asked: {turn.question} Answer: {turn.answer}"
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        lines.insert(0, line)
        used += cost
    return "\n".join(lines)


def passage_body(match: Match, *, excerpts: bool = False) -> str:
    """The lines of ``match`` the model reads."""
    return match.excerpt if excerpts and match.excerpt else match.text


def passage_heading(match: Match) -> str:
    """What the context heads a passage with, after its number: its chat and day."""
    return f"{match.chat_title}, {match.day}"


def format_context(matches: Sequence[Match], *, excerpts: bool = False) -> str:
    """The passages, each headed by its number (what answers cite), chat and day."""
    return "\n\n".join(f"{marker(number)} {passage_heading(match)}\n{passage_body(match, excerpts=excerpts)}"
                        for number, match in enumerate(matches, start=1))


@dataclass
class Prompt:
    text: str
    tokens: list[int]
    stop: list[str]
    matches: list[Match]
    turns: list[Turn]
    summary: str
    answer_tokens: int
    #: The context block exactly as the model read it (what its answer is checked against).
    context: str = ""


class PromptStrategy(Protocol):
    """How the rules, the passages and the question are laid into one prompt.

    A strategy lays out what it is given and nothing more: the builder chooses which passages, turns
    and summary to give it and tokenises what it renders, dropping parts until that fits.
    """

    #: False for a person's own instructions, so a prompt too long names them as something to shorten.
    is_default: bool

    def context(self, matches: Sequence[Match], *, excerpts: bool) -> str:
        """The passages as the model reads them (the answer is checked against exactly this)."""

    def render(self, llm: ChatModel, question: str, context: str, turns: Sequence[Turn],
               summary: str) -> tuple[str, list[str]]:
        """The whole prompt for ``llm`` and its stop strings; ``context`` is ``self.context(...)``."""


class InstructionsStrategy:
    """Answer instructions (``core.chat.instructions``) laid out for a chat model or a base model."""

    def __init__(self, instructions: str | Instructions = DEFAULT_INSTRUCTIONS):
        self.instructions = (instructions if isinstance(instructions, Instructions)
                             else parse_instructions(instructions))

    @property
    def is_default(self) -> bool:
        return self.instructions.is_default

    def context(self, matches: Sequence[Match], *, excerpts: bool) -> str:
        return format_context(matches, excerpts=excerpts)

    def render(self, llm: ChatModel, question: str, context: str, turns: Sequence[Turn],
               summary: str) -> tuple[str, list[str]]:
        values = {"context": context or NO_MESSAGES, "question": question}
        rules = self.instructions.rules
        if llm.chat_template is not None:
            earlier = f"Earlier in this conversation:\n{summary}" if summary else ""
            system = "\n\n".join(part for part in (rules, earlier) if part)
            messages = [{"role": "system", "content": system}] if system else []
            for turn in turns:
                messages += [{"role": "user", "content": turn.question}, {"role": "assistant", "content": turn.answer}]
            messages.append({"role": "user", "content": fill(self.instructions.request, values)})
            return llm.render_chat(messages)
        # A base model continues text: the rules, the context, then a Q/A transcript ending in "A:".
        history = "".join(f"Q: {t.question}\nA: {t.answer}\n" for t in turns)
        earlier = f"Earlier in this conversation:\n{summary}\n\n" if summary else ""
        head = "\n\n".join(part for part in (rules, COMPLETION_EXAMPLE) if part)
        request = fill(self.instructions.completion_request, values)
        return f"{head}\n{earlier}{request}\n\n{history}Q: {question}\nA:", ["\nQ:", "\n\n"]


#: The app's own instructions and layout.
DEFAULT_STRATEGY = InstructionsStrategy()


class PromptBuilder:
    """Builds the prompt for one question within ``n_ctx`` (prompt) + ``answer_tokens`` (answer)."""

    def __init__(self, llm: ChatModel, *, answer_tokens: int = AskOptions.answer_tokens, excerpts: bool = AskOptions.excerpts,
                 strategy: PromptStrategy = DEFAULT_STRATEGY):
        self.llm = llm
        self.answer_tokens = answer_tokens
        #: Give the model each match's focused excerpt instead of the whole passage.
        self.excerpts = excerpts
        self.strategy = strategy

    def _render(self, question: str, matches: Sequence[Match], turns: Sequence[Turn], summary: str) -> tuple[str, list[str]]:
        context = self.strategy.context(matches, excerpts=self.excerpts)
        return self.strategy.render(self.llm, question, context, turns, summary)

    def build(self, question: str, matches: Sequence[Match], conversation: Conversation | None = None,
              participants: Sequence[str] = ()) -> Prompt:
        conversation = conversation or Conversation()
        matches, turns = list(matches), list(conversation.recent)
        summary = summarise(conversation.older, self.llm.count_tokens) if conversation.older else ""
        limit = self.llm.n_ctx - self.answer_tokens - SAFETY_MARGIN
        while True:
            # The whole rendering is measured every time: a strategy may lay parts out in any way.
            text, stops = self._render(question, matches, turns, summary)
            tokens = self.llm.tokenize(text)
            if len(tokens) <= limit:
                break
            if summary:
                summary = ""
            elif len(matches) > 2:
                matches.pop()
            elif turns:
                turns.pop(0)
            elif len(matches) > 1:
                matches.pop()
            elif matches and len(passage_body(matches[0], excerpts=self.excerpts)) > 1:
                # One passage alone is too long: keep the first lines of what the model reads of it.
                matches[0] = _first_half(matches[0], excerpts=self.excerpts)
            else:
                # Only the rules and the question are left, and they alone are too long (a huge question,
                # or a window the settings check could not foresee, such as a model's own smaller limit).
                shorter = ("a shorter question" if self.strategy.is_default
                           else f"a shorter question, shorten the answer instructions ({INSTRUCTIONS_SETTINGS})")
                raise PromptTooLong(
                    f"The question does not fit the language model's context: the rules and the question "
                    f"alone take {len(tokens)} tokens, and {max(0, limit)} of the {self.llm.n_ctx} are left "
                    f"once {self.answer_tokens} are kept for the answer.",
                    hint=f"Nothing was asked. Ask {shorter}, or make more room in {BUDGET_SETTINGS}.")
        # A small model that starts writing the next chat line ("Ana: …") or a new paragraph has stopped
        # answering the one-sentence question.
        stops = list(dict.fromkeys(stops + ["\n\n"] + [f"\n{name}:" for name in participants]))
        context = self.strategy.context(matches, excerpts=self.excerpts)
        return Prompt(text, tokens, stops, matches, turns, summary, self.answer_tokens, context)


def _first_half(match: Match, *, excerpts: bool) -> Match:
    """``match`` with the first half of the lines the model reads: its excerpt when given excerpts, else its text.

    Trimming the text while the model reads the excerpt would shrink nothing, and the prompt would be refused.
    """
    body = passage_body(match, excerpts=excerpts)
    lines = body.split("\n")
    keep = len(lines) // 2
    trimmed = "\n".join(lines[:keep]) if keep else body[: len(body) // 2]
    return replace(match, **{"excerpt" if excerpts and match.excerpt else "text": trimmed})
