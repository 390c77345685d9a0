"""How a question is asked: how many passages, how long an answer, which context, how follow-ups search,
which answer instructions.

``AskOptions`` holds the one default of each: the window's Settings, the CLI's arguments, ``ChatSession``,
``PromptBuilder`` and the benches all start from it. The measurements behind them are in docs/chat.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gallery_app.core.chat.instructions import DEFAULT_INSTRUCTIONS, parse_instructions
from gallery_app.core.models.memory import CONTEXT_TOKENS


class FollowUps(str, Enum):
    #: Search with the question alone.
    NONE = "none"
    #: Search with the previous question prepended (the usual baseline).
    PREVIOUS = "previous"
    #: Let the LLM rewrite the question into a standalone one from the recent turns.
    REWRITE = "rewrite"
    #: Search the question alone and with the previous question, and lift passages close in time
    #: to the previous answer's passages.
    NEIGHBOURHOOD = "neighbourhood"


@dataclass(frozen=True)
class AskOptions:
    #: Passages given to the LLM (as focused excerpts): measured on the demo questions, see docs/chat.md.
    passages: int = 6
    #: The longest answer in tokens. The prompt asks for one short sentence; the answers in docs/chat.md
    #: were measured with this cap, and a small model that loops on a sentence stops sooner.
    answer_tokens: int = 96
    #: The LLM's context window asked for (a model may get less when memory is short).
    context_tokens: int = CONTEXT_TOKENS
    #: Give the LLM each passage's focused excerpt instead of the whole passage.
    excerpts: bool = True
    follow_ups: FollowUps = FollowUps.NEIGHBOURHOOD
    #: Fuse FTS5 keyword matches into the ranking.
    use_keywords: bool = False
    #: Lift passages that share a rare word with the question (see ChatRetriever._lift_rare_words): a name
    #: or place written the same in the question and in a chat of another language. Over the six real chats
    #: mean R@3 0.68 -> 0.70, worst set 0.52 -> 0.57, no set down by more than a question (docs/chat.md).
    rare_words: bool = True
    #: Read the best passages a second time with a small language model (core/chat/second_reading.py), when it
    #: is installed: over the six real chats mean R@3 0.70 -> 0.71, R@1 0.52 -> 0.54, no set down; ~3 s a question.
    read_again: bool = True
    #: Score a question against each language's messages on their own scale (ChatRetriever._z_by_language).
    by_language: bool = False
    #: Passages scoring below this are left out.
    min_score: float = 0.0
    #: The rules and where the messages and the question go (core/chat/instructions.py): the person's own
    #: text when they replaced it.
    instructions: str = DEFAULT_INSTRUCTIONS

    def __post_init__(self) -> None:
        object.__setattr__(self, "follow_ups", FollowUps(self.follow_ups))
        # Refused here, before any model is loaded, rather than at the first question.
        parse_instructions(self.instructions)
