"""Retrieval and answer quality on a chat and its questions.

    python bench/chat_eval.py QUESTIONS CHAT [--embedder SPEC] [--llm SPEC] [--retrieval-only]

QUESTIONS is a JSON Lines file (one object per line: id, question, previous_question, kind,
gold_lines, answer_keywords); CHAT a WhatsApp export. The chat is imported into a temporary
store. recall@k is the share of answerable questions with at least one of their gold messages
(each gold line is the header of a message that answers the question) in the top k passages. Follow-ups are asked after their
previous question in the same conversation. With an LLM, it also reports the share of answers
containing an expected keyword and the share of "don't know" on unanswerable questions.
SPEC is a model setting: a role default, a model key, or a model file/folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KS = (1, 3, 5)


def load_questions(path: Path) -> list[dict]:
    questions = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if line.strip():
            item = json.loads(line)
            missing = {"id", "question", "previous_question", "kind", "gold_lines", "answer_keywords"} - set(item)
            if missing:
                raise SystemExit(f"{path}:{number}: missing fields {sorted(missing)}")
            questions.append(item)
    return questions


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("questions", type=Path)
    parser.add_argument("chat", type=Path)
    parser.add_argument("--embedder", help="text-embedder setting (default: the role's default)")
    parser.add_argument("--llm", help="chat-llm setting (default: the role's default)")
    parser.add_argument("--retrieval-only", action="store_true", help="skip answering")
    parser.add_argument("--follow-ups", choices=["none", "previous", "rewrite"], default=None)
    parser.add_argument("--keywords", choices=["on", "off"], default=None, help="fuse FTS5 keyword search")
    parser.add_argument("--chunk-tokens", type=int, default=None)
    parser.add_argument("--include-date", action="store_true")
    parser.add_argument("--window-messages", type=int, default=None, help="messages per search window")
    parser.add_argument("--window-stride", type=int, default=None, help="messages between window starts")
    parser.add_argument("--passages", type=int, default=6, help="passages given to the LLM")
    parser.add_argument("--context", choices=["excerpts", "passages"], default=None,
                        help="give the LLM focused excerpts or whole passages")
    parser.add_argument("--verbose", action="store_true", help="print every question's outcome")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("GALLERY_APP_DATA_DIR", tempfile.mkdtemp(prefix="chat-eval-"))
    from gallery_app.core.chat.chunking import ChunkingConfig
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.session import DEFAULT_FOLLOW_UPS, DEFAULT_USE_KEYWORDS, ChatSession, FollowUps
    from gallery_app.core.models.loading import open_chat_llm, open_text_embedder
    from gallery_app.core.store import open_store

    questions = load_questions(args.questions)
    embedder = open_text_embedder(args.embedder)
    llm = None if args.retrieval_only else open_chat_llm(args.llm)
    follow_ups = FollowUps(args.follow_ups) if args.follow_ups else DEFAULT_FOLLOW_UPS
    if follow_ups is FollowUps.REWRITE and llm is None:
        llm = open_chat_llm(args.llm)  # rewriting needs the LLM even when answers are not scored
    keywords = DEFAULT_USE_KEYWORDS if args.keywords is None else args.keywords == "on"
    overrides = {"max_tokens": args.chunk_tokens, "window_messages": args.window_messages,
                 "window_stride": args.window_stride}
    config = ChunkingConfig(include_date=args.include_date, **{k: v for k, v in overrides.items() if v})

    conn = open_store(Path(tempfile.mkdtemp(prefix="chat-eval-db-")) / "eval.db")
    started = time.perf_counter()
    summary = import_chat(conn, args.chat, embedder, config=config)
    import_seconds = time.perf_counter() - started
    line_to_message = dict(conn.execute("SELECT source_line, id FROM messages WHERE chat_id = ?", (summary.chat_id,)))

    recall = defaultdict(lambda: defaultdict(list))
    keyword_hits, dont_know = [], []
    answering = not args.retrieval_only
    for item in questions:
        session = ChatSession(conn, embedder, llm, k=max(KS), follow_ups=follow_ups, use_keywords=keywords)
        if session.prompts is not None and args.context:
            session.prompts.excerpts = args.context == "excerpts"
        if item["previous_question"]:
            if answering or follow_ups is FollowUps.REWRITE:
                session.answer(item["previous_question"])  # the real previous answer, as in a conversation
            else:
                session.conversation.add(item["previous_question"], "")
        query, retrieval = session.retrieve(item["question"])
        gold = {line_to_message[line] for line in item["gold_lines"] if line in line_to_message}
        if item["gold_lines"] and len(gold) != len(item["gold_lines"]):
            print(f"warning: {item['id']}: gold lines {item['gold_lines']} are not all message headers", file=sys.stderr)
        if gold:
            for k in KS:
                found = {i for match in retrieval.matches[:k] for i in match.message_ids}
                value = 1.0 if gold & found else 0.0
                recall[item["kind"]][k].append(value)
                recall["overall"][k].append(value)
        text, text_note = "", ""
        if answering:
            session.k = args.passages
            answer = session.answer(item["question"])
            text = answer.text
            if args.verbose and answer.raw_text and answer.raw_text != text:
                text_note = f" (model wrote {answer.raw_text!r})"
            else:
                text_note = ""
            if item["answer_keywords"]:
                keyword_hits.append(any(word in text.lower() for word in item["answer_keywords"]))
            elif not item["gold_lines"]:
                dont_know.append(_is_dont_know(text))
        if args.verbose:
            ranks = [i for i, m in enumerate(retrieval.matches) if gold & set(m.message_ids)]
            print(f"{item['id']:<8} {item['kind']:<13} rank {ranks[0] + 1 if ranks else '-':<3} q={query!r}"
                  + (f" → {text!r}{text_note}" if answering else ""))

    print(f"embedder {embedder.spec.key} · llm {llm.spec.key if llm else '-'} · follow-ups {follow_ups.value} · "
          f"keywords {'on' if keywords else 'off'} · chunks {config.max_tokens} tokens"
          f"{' + date' if config.include_date else ''} · windows {config.window_messages}/{config.window_stride} · "
          f"{summary.passages_added} passages, {summary.windows_added} windows · import {import_seconds:.1f}s")
    kinds = sorted(k for k in recall if k != "overall") + ["overall"]
    for kind in kinds:
        row = recall[kind]
        n = len(row[1])
        print(f"{kind} n={n} " + " ".join(f"R@{k} {sum(row[k]) / n:.2f}" for k in KS))
    overall = recall["overall"]
    line = f"summary: R@3 {sum(overall[3]) / max(1, len(overall[3])):.2f}"
    if answering:
        if keyword_hits:
            print(f"answers with an expected keyword: {sum(keyword_hits)}/{len(keyword_hits)} "
                  f"= {sum(keyword_hits) / len(keyword_hits):.2f}")
            line += f" · keyword answers {sum(keyword_hits) / len(keyword_hits):.2f}"
        if dont_know:
            print(f"\"don't know\" on unanswerable: {sum(dont_know)}/{len(dont_know)} = {sum(dont_know) / len(dont_know):.2f}")
            line += f" · don't-know {sum(dont_know) / len(dont_know):.2f}"
    print(line)
    return 0


def _is_dont_know(text: str) -> bool:
    lowered = text.lower().replace("’", "'")
    return "don't know" in lowered or "couldn't find" in lowered or "do not know" in lowered


if __name__ == "__main__":
    sys.exit(main())
