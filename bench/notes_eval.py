"""Retrieval on a real notes folder and its questions (../shared/fixtures/notes_qa), as `make eval` reports it.

    python bench/notes_eval.py                      # the notes_qa set, retrieval only
    python bench/notes_eval.py --embedder SPEC --verbose

The folder is indexed once into a temporary store with the app's own notes indexer, then every
question is asked as the app asks it (``ChatSession.retrieve``). A chunk *contains* a gold entry when it is a chunk of
that entry's file and its text holds the quote, both read after Unicode NFKC and with every run of
whitespace made one space (the set's README). R@k is the share of the answerable questions with a gold
chunk in the top k; "top holds gold" is the retrieval half of evidence@1 (the other half, the answer's
keyword, needs the LLM: `chat_eval.py` adds it when it answers). Misses go to --misses.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

NOTES_QA = REPO.parent / "shared" / "fixtures" / "notes_qa"
KS = (1, 3, 5, 10)
DEEPEST_RANK = 50


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


@dataclass
class _Hit:
    """A passage found when chats are searched too: a note chunk, or None for a chat passage."""

    chunk: object | None
    page: int | None


def load_questions(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def holds_gold(chunk, gold: list[dict]) -> bool:
    """Whether a stored note chunk holds one of the question's gold quotes (its file, its words)."""
    text = normalised(chunk.text)
    return any(entry["file"] == chunk.relative_path and normalised(entry["quote"]) in text for entry in gold)


@dataclass
class NotesResult:
    name: str
    ranks: list[int | None] = field(default_factory=list)       # first gold rank per answerable question
    kinds: list[str] = field(default_factory=list)
    unanswerable: int = 0
    index_seconds: float = 0.0
    summary: str = ""
    misses: list[dict] = field(default_factory=list)
    #: With an LLM: per answerable question whether the answer holds a keyword, and whether that and the top
    #: chunk holding a gold quote both hold (evidence@1); per unanswerable one whether it said "don't know".
    keyword_hits: list[bool] = field(default_factory=list)
    evidence: list[bool] = field(default_factory=list)
    dont_know: list[bool] = field(default_factory=list)

    def recall(self, k: int, kind: str | None = None) -> float:
        chosen = [r for r, q in zip(self.ranks, self.kinds) if kind is None or q == kind]
        return sum(r is not None and r <= k for r in chosen) / len(chosen) if chosen else float("nan")


def index_notes(folder: Path, embedder, conn=None) -> tuple[object, float, str]:
    from gallery_app.core.notes.indexer import index_folder
    from gallery_app.core.store import open_store

    conn = conn or open_store(Path(tempfile.mkdtemp(prefix="notes-eval-")) / "notes.db")
    started = time.perf_counter()
    summary = index_folder(conn, folder, embedder)
    return conn, time.perf_counter() - started, summary.describe()


def evaluate_notes(embedder, fixture: Path = NOTES_QA, *, verbose: bool = False, chats: list[Path] = (),
                   llm=None) -> NotesResult:
    """``chats``: exports imported into the same library first, so each question is asked as the app asks
    it (``ChatSession``, chats and notes together) and a chat passage can take a note's place. ``llm``: also
    answer every question as the app does (its default options) and score the answers."""
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.session import ChatSession
    from gallery_app.core.chat.ask_options import AskOptions
    from gallery_app.core.notes.repository import chunks_by_id
    from gallery_app.core.store import open_store

    library = None
    if chats:
        library = open_store(Path(tempfile.mkdtemp(prefix="notes-eval-")) / "library.db")
        for chat in chats:
            import_chat(library, chat, embedder)
    conn, seconds, summary = index_notes(fixture / "folder", embedder, library)
    result = NotesResult(fixture.name + (f" beside {len(chats)} chats" if chats else ""), index_seconds=seconds,
                         summary=summary)
    session = ChatSession(conn, embedder, options=AskOptions(passages=DEEPEST_RANK))
    answering = ChatSession(conn, embedder, llm) if llm is not None else None
    for item in load_questions(fixture / "questions.jsonl"):
        text = ""
        if answering is not None:
            answering.new_conversation()
            text = answering.answer(item["question"]).text
        if not item["gold"]:
            result.unanswerable += 1
            if answering is not None:
                result.dont_know.append("don't know" in text.lower() or "do not know" in text.lower())
            continue
        session.new_conversation()
        found = session.retrieve(item["question"])[1].matches
        chunk_of = chunks_by_id(conn, [m.chunk_id for m in found if m.is_note])
        hits = [_Hit(chunk_of.get(m.chunk_id) if m.is_note else None, m.note.page if m.is_note else None)
                for m in found]
        rank = next((n for n, hit in enumerate(hits, 1) if hit.chunk is not None and holds_gold(hit.chunk, item["gold"])),
                    None)
        result.ranks.append(rank)
        result.kinds.append(item["kind"])
        if answering is not None:
            hit = any(word in text.lower() for word in item["answer_keywords"])
            result.keyword_hits.append(hit)
            result.evidence.append(hit and rank == 1)
        if rank is None or rank > 3:
            result.misses.append({"id": item["id"], "question": item["question"], "kind": item["kind"], "rank": rank,
                                  "gold": item["gold"],
                                  "top": [{"file": h.chunk.relative_path if h.chunk else "(a chat)", "page": h.page,
                                           "text": h.chunk.text[:300] if h.chunk else ""} for h in hits[:3]]})
        if verbose:
            print(f"  {item['id']} {item['kind']:<13} rank {rank if rank else '-':>3}  {item['question']}"
                  + (f" → {text!r}" if answering is not None else ""))
    conn.close()
    return result


def print_notes_table(result: NotesResult) -> None:
    kinds = sorted(set(result.kinds))
    print(f"notes: {result.name} — {result.summary} (indexed in {result.index_seconds:.0f} s)")
    print(f"  {'':<14}{'n':>4}" + "".join(f"{'R@' + str(k):>7}" for k in KS))
    print(f"  {'all':<14}{len(result.ranks):>4}" + "".join(f"{result.recall(k):>7.2f}" for k in KS))
    for kind in kinds:
        n = result.kinds.count(kind)
        print(f"  {kind:<14}{n:>4}" + "".join(f"{result.recall(k, kind):>7.2f}" for k in KS))
    print(f"  top chunk holds a gold quote: {result.recall(1):.2f}; {result.unanswerable} unanswerable questions "
          "left out of R@k")
    if result.keyword_hits:
        share = lambda values: sum(values) / len(values) if values else float("nan")  # noqa: E731
        print(f"  answers: keyword {sum(result.keyword_hits)}/{len(result.keyword_hits)} · evidence@1 "
              f"{share(result.evidence):.2f} · don't know on unanswerable {sum(result.dont_know)}/{len(result.dont_know)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Retrieval on ../shared/fixtures/notes_qa.")
    parser.add_argument("--embedder", help="text-embedder setting (default: the role's default)")
    parser.add_argument("--fixture", type=Path, default=NOTES_QA)
    parser.add_argument("--cache", type=Path, default=None, help="vector cache folder (as chat_eval.py --cache)")
    parser.add_argument("--misses", type=Path, default=REPO / ".cache" / "notes_eval_misses.jsonl")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--llm", help="also answer with this chat-llm setting (default: retrieval only)")
    parser.add_argument("--answer", action="store_true", help="also answer, with the default chat LLM")
    parser.add_argument("--with-chats", action="store_true",
                        help="the real chats of ../shared/fixtures/chat_qa in the same library, asked together")
    args = parser.parse_args(argv)
    if not (args.fixture / "questions.jsonl").is_file():
        print(f"no notes set at {args.fixture}: nothing to measure")
        return 0
    os.environ.setdefault("GALLERY_APP_DATA_DIR", tempfile.mkdtemp(prefix="notes-eval-"))
    from gallery_app.core.models.loading import open_text_embedder

    embedder = open_text_embedder(args.embedder)
    chats = sorted((REPO.parent / "shared" / "fixtures" / "chat_qa").glob("*.txt")) if args.with_chats else []
    if args.cache:
        from bench.chat_eval import CachedEmbedder

        embedder = CachedEmbedder(embedder, args.cache)
    llm = None
    if args.answer or args.llm:
        from gallery_app.core.models.loading import open_chat_llm

        llm = open_chat_llm(args.llm)
    result = evaluate_notes(embedder, args.fixture, verbose=args.verbose, chats=chats, llm=llm)
    if args.cache:
        embedder.save()
    print(f"embedder {embedder.spec.key}")
    print_notes_table(result)
    args.misses.parent.mkdir(parents=True, exist_ok=True)
    args.misses.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in result.misses), "utf-8")
    print(f"misses (rank > 3): {len(result.misses)}, written to {args.misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
