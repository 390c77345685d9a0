"""Retrieval and answer quality on chats and their questions.

    python bench/chat_eval.py                       # every set: the demo sets and the real chats
    python bench/chat_eval.py QUESTIONS CHAT        # one set
    python bench/chat_eval.py --set dutch_friends --set demo --retrieval-only

A set is a JSON Lines file of questions (one object per line: id, question, previous_question,
kind, gold_lines, answer_keywords; the format of ../shared/fixtures/chat_qa, read unchanged) and
the WhatsApp export it is about. Each chat is imported once into a temporary store. recall@k is the
share of answerable questions with at least one of their gold messages (each gold line is the
header of a message that answers it) in the top k passages. Follow-ups are asked after their
previous question in the same conversation, as the app asks them. With an LLM it also reports the
share of answers containing an expected keyword and of "don't know" on unanswerable questions.
Every miss (rank of the first gold passage up to 50, the query searched, the gold messages and the
top passages) goes to a file you can read (--misses), and so does every question whose top passage holds
a gold message but highlights another ("miss": "evidence", with the highlighted line).
SPEC is a model setting: a role default, a model key, or a model file/folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gallery_app.core.chat.ask_options import AskOptions, FollowUps  # noqa: E402
from gallery_app.core.chat.second_reading import READ_AGAIN_DEPTH  # noqa: E402
from gallery_app.core.json_file import read_json, write_json  # noqa: E402

#: Passages retrieved per question: enough to tell "ranked low" from "never found".
DEEPEST_RANK = 50
#: R@READ_AGAIN_DEPTH (15) is what the second reading can reach: it reorders that many of the best passages, so no
#: reading puts an answer into the top 3 of more questions than that column says are in its reach.
KS = tuple(sorted({1, 3, 5, 10, READ_AGAIN_DEPTH, DEEPEST_RANK}))
DEMO_CHAT = REPO / "resources" / "demo" / "chats" / "weekend_away" / "_chat.txt"
CHAT_QA = REPO.parent / "shared" / "fixtures" / "chat_qa"
NOTES_QA = REPO.parent / "shared" / "fixtures" / "notes_qa"
QUESTIONS_SUFFIX = ".questions.jsonl"
#: The sets we wrote about our own demo chat: reported, but never part of the real chats' mean.
DEMO_SETS = {
    "demo": (REPO / "resources" / "demo" / "questions.jsonl", DEMO_CHAT),
    "demo-multilingual": (REPO / "resources" / "demo" / "questions_multilingual.jsonl", DEMO_CHAT),
}


def real_sets(folder: Path = CHAT_QA) -> dict[str, tuple[Path, Path]]:
    """Every ``NAME.questions.jsonl`` with its ``NAME.txt`` in ``folder``: a set added there is picked up."""
    found = {}
    for questions in sorted(folder.glob(f"*{QUESTIONS_SUFFIX}")):
        name = questions.name[:-len(QUESTIONS_SUFFIX)]
        found[name] = (questions, folder / f"{name}.txt")
    return found


REAL_SETS = real_sets()
SETS = {**DEMO_SETS, **REAL_SETS}


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


class CachedEmbedder:
    """An embedder that remembers vectors by text, so trying a retrieval variant re-embeds only new windows.

    For development only (``--cache``): import seconds measured through it are not the app's.
    """

    def __init__(self, inner, folder: Path):
        self.inner = inner
        self.path = folder / f"{inner.model_key}.npz"
        self.vectors: dict[str, object] = {}
        if self.path.exists():
            import numpy as np

            data = np.load(self.path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"]))

    @staticmethod
    def _key(text: str, is_query: bool) -> str:
        return hashlib.sha1(f"{int(is_query)}\0{text}".encode("utf-8")).hexdigest()

    def _embed(self, texts, is_query: bool):
        import numpy as np

        keys = [self._key(text, is_query) for text in texts]
        todo = [i for i, key in enumerate(keys) if key not in self.vectors]
        if todo:
            fresh = (self.inner.embed_query(texts[todo[0]])[None] if is_query
                     else self.inner.embed_passages([texts[i] for i in todo]))
            for i, vector in zip(todo, fresh):
                self.vectors[keys[i]] = vector
        if not keys:
            return np.zeros((0, self.inner.dims), np.float32)
        return np.stack([self.vectors[key] for key in keys])

    def embed_passages(self, texts):
        return self._embed(list(texts), False)

    def embed_query(self, text):
        return self._embed([text], True)[0]

    def save(self) -> None:
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        # Per process, as core/json_file's write_json names its own: two runs sharing a cache folder must not
        # write into one temporary file.
        tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.path)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class CachedReading:
    """The second reading's model, remembering each excerpt's reading (by prompt and questions), so trying a
    variant re-reads only what changed: a run over the six chats takes minutes instead of a quarter of an hour.

    For development only (``--cache``): the seconds a question takes through it are not the app's.
    """

    def __init__(self, inner, folder: Path, model_key: str):
        self.inner = inner
        self.path = folder / f"readings-{model_key}.json"
        self.readings: dict[str, list[float]] = read_json(self.path)

    @staticmethod
    def _key(prompt: str, continuations) -> str:
        return hashlib.sha1("\0".join([prompt, *continuations]).encode("utf-8")).hexdigest()

    def continuation_likelihoods(self, prompts, continuations):
        keys = [self._key(prompt, continuations) for prompt in prompts]
        todo = [i for i, key in enumerate(keys) if key not in self.readings]
        if todo:
            fresh = self.inner.continuation_likelihoods([prompts[i] for i in todo], continuations)
            for i, reading in zip(todo, fresh):
                self.readings[keys[i]] = [float(x) for x in reading]
        return [self.readings[key] for key in keys]

    def save(self) -> None:
        write_json(self.path, self.readings)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@dataclass
class SetResult:
    name: str
    recall: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    misses: list = field(default_factory=list)
    #: Per question with keywords: does what the person reads (the answer, or a decline and its closest message) hold one?
    keyword_hits: list = field(default_factory=list)
    #: Same, counting only an answer in the model's own words (not declined).
    keyword_in_answers: list = field(default_factory=list)
    #: Same, in what the model wrote before the grounding check judged it (declined or not).
    keyword_before_check: list = field(default_factory=list)
    dont_know: list = field(default_factory=list)
    #: Per answerable question: is the message the app names first (the top passage's closest message) gold?
    evidence: list = field(default_factory=list)
    #: Questions whose top passage holds a gold message but highlights another one.
    evidence_misses: list = field(default_factory=list)
    import_seconds: float = 0.0
    windows: int = 0
    passages: int = 0
    messages: int = 0

    def record(self, kind: str, first_rank: int | None) -> None:
        for k in KS:
            self.recall[kind][k].append(1.0 if first_rank is not None and first_rank <= k else 0.0)


@dataclass
class ImportedChat:
    conn: object
    chat_id: int
    line_to_message: dict
    seconds: float
    summary: object

    def gold_messages(self, item: dict) -> set[int]:
        """The ids of the messages whose header lines the question lists as answering it."""
        return {self.line_to_message[line] for line in item["gold_lines"] if line in self.line_to_message}


def import_for_eval(chat: Path, embedder, config) -> ImportedChat:
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.repository import chat_messages
    from gallery_app.core.store import open_store

    conn = open_store(Path(tempfile.mkdtemp(prefix="chat-eval-db-")) / "eval.db")
    started = time.perf_counter()
    summary = import_chat(conn, chat, embedder, config=config)
    seconds = time.perf_counter() - started
    line_to_message = {message.line: message.id for message in chat_messages(conn, summary.chat_id)}
    return ImportedChat(conn, summary.chat_id, line_to_message, seconds, summary)


def evaluate(name: str, questions: list[dict], chat: ImportedChat, embedder, llm, options) -> SetResult:
    from gallery_app.core.chat.prompting import Conversation
    from gallery_app.core.chat.session import ChatSession

    result = SetResult(name, import_seconds=chat.seconds, windows=chat.summary.windows_added,
                       passages=chat.summary.passages_added, messages=chat.summary.messages_in_file)
    conn = chat.conn
    ranking = replace(options.ask, passages=DEEPEST_RANK)
    for item in questions:
        # One conversation, searched deep for the ranks and asked as the app asks.
        conversation = Conversation()
        session = ChatSession(conn, embedder, llm, ranking, conversation=conversation,
                              second_reading=options.second_reading)
        answering = (ChatSession(conn, embedder, llm, options.ask, conversation=conversation,
                                 second_reading=options.second_reading) if llm else None)
        if item["previous_question"]:
            # The previous turn as the app has it: its passages (and, when answering, the real answer).
            if answering is not None:
                answering.answer(item["previous_question"])
            else:
                session.remember(item["previous_question"], session.retrieve(item["previous_question"])[1], "")
        query, retrieval = session.retrieve(item["question"])
        gold = chat.gold_messages(item)
        if item["gold_lines"] and len(gold) != len(item["gold_lines"]):
            print(f"warning: {name} {item['id']}: gold lines {item['gold_lines']} are not all message headers",
                  file=sys.stderr)
        first = _first_rank(retrieval, gold)
        if gold:
            result.record(item["kind"], first)
            result.record("overall", first)
            highlighted = _first_evidence(conn, retrieval, item["question"])
            result.evidence.append(highlighted in gold)
            if first == 1 and highlighted not in gold:
                result.evidence_misses.append({**_miss(conn, item, query, retrieval, gold, first),
                                               "highlighted": _line_of(conn, highlighted)})
            if first is None or first > 3:
                result.misses.append(_miss(conn, item, query, retrieval, gold, first))
        text = ""
        if answering is not None:
            answer = answering.answer(item["question"])
            text = answer.text
            if item["answer_keywords"]:
                def holds_keyword(written: str) -> bool:
                    return any(word in written.lower() for word in item["answer_keywords"])

                shown = holds_keyword(text)
                result.keyword_hits.append(shown)
                result.keyword_in_answers.append(shown and not answer.declined)
                result.keyword_before_check.append(holds_keyword(answer.raw_text))
            elif not item["gold_lines"]:
                result.dont_know.append(_is_dont_know(text))
        if options.verbose:
            declined = answering is not None and answer.declined
            print(f"{name:<18} {item['id']:<6} {item['kind']:<14} rank {first or '-':<3} q={query!r}"
                  + (f" → {text!r}" if llm is not None else "")
                  + (f" (the model wrote {answer.raw_text!r})" if declined else ""))
    return result


def in_a_row(sets: list[tuple[str, list[dict], Path]], embedder, config, options) -> list[SetResult]:
    """Every set's questions asked as a person asks them: all chats in one library, one conversation, the
    sets taken in turn (a question about one chat, then one about another), each follow-up right after
    the question it follows; through the ``ChatSession`` the window uses, searching every chat.

    Each question is also asked alone (a new conversation; a follow-up after its previous question) in
    the same library. Standalone questions must score the same in a row as alone: one that is searched
    with the question before it has been taken for a follow-up. Kinds "alone" and "in a row" per set.
    """
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.prompting import Conversation
    from gallery_app.core.chat.repository import chat_messages
    from gallery_app.core.chat.session import ChatSession
    from gallery_app.core.store import open_store

    conn = open_store(Path(tempfile.mkdtemp(prefix="chat-eval-row-")) / "eval.db")
    line_to_message: dict[Path, dict] = {}
    for _name, _questions, chat in sets:
        if chat not in line_to_message:
            chat_id = import_chat(conn, chat, embedder, config=config).chat_id
            line_to_message[chat] = {m.line: m.id for m in chat_messages(conn, chat_id)}
    ranking = replace(options.ask, passages=DEEPEST_RANK)

    def gold(chat: Path, item: dict) -> set[int]:
        return {line_to_message[chat][line] for line in item["gold_lines"] if line in line_to_message[chat]}

    results = {name: SetResult(name) for name, _q, _c in sets}
    for name, questions, chat in sets:  # alone
        for item in questions:
            session = ChatSession(conn, embedder, None, ranking, conversation=Conversation(),
                                  second_reading=options.second_reading)
            if item["previous_question"]:
                session.remember(item["previous_question"], session.retrieve(item["previous_question"])[1], "")
            if gold(chat, item):
                results[name].record("alone", _first_rank(session.retrieve(item["question"])[1], gold(chat, item)))
    session = ChatSession(conn, embedder, None, ranking, conversation=Conversation(),
                          second_reading=options.second_reading)
    for name, chat, item in _person_order(sets):
        question = item.get("_asked", item["question"])
        _query, retrieval = session.retrieve(question)
        session.remember(question, retrieval, "")
        if "_asked" not in item and gold(chat, item):
            results[name].record("in a row", _first_rank(retrieval, gold(chat, item)))
    return [results[name] for name, _q, _c in sets]


def _person_order(sets: list[tuple[str, list[dict], Path]]):
    """(set, chat, item) with the sets interleaved one question at a time; a follow-up comes right after its
    previous question (asked first, marked ``_asked``, when the set does not hold it as a question)."""
    queues = []
    for name, questions, chat in sets:
        by_question = {item["question"]: item for item in questions}
        followed = {item["previous_question"] for item in questions if item["previous_question"]}
        queue: list[list[dict]] = []
        group_of: dict[str, list[dict]] = {}  # question → the group it is asked in (chains stay together)
        for item in questions:
            if item["question"] in followed and not item["previous_question"]:
                continue  # asked just before its follow-up
            previous = item["previous_question"]
            if previous and previous in group_of:
                group = group_of[previous]
                group.append(item)
            elif previous:
                group = [by_question.get(previous) or {"_asked": previous, "question": previous}, item]
                queue.append(group)
            else:
                group = [item]
                queue.append(group)
            for member in group:
                group_of[member["question"]] = group
        queues.append((name, chat, queue))
    while any(queue for _n, _c, queue in queues):
        for name, chat, queue in queues:
            if queue:
                for item in queue.pop(0):
                    yield name, chat, item


def print_in_a_row(results: list[SetResult]) -> None:
    print("in a row (every chat in one library, one conversation, sets interleaved) vs alone, R@3:")
    for result in results:
        alone, row = result.recall["alone"][3], result.recall["in a row"][3]
        if alone:
            changed = sum(a != b for a, b in zip(alone, row))
            print(f"  {result.name:<20} alone {_share(alone):.2f}  in a row {_share(row):.2f}  (n={len(alone)}, "
                  f"{changed} questions differ)")
    alone = [hit for r in results for hit in r.recall["alone"][3]]
    row = [hit for r in results for hit in r.recall["in a row"][3]]
    if alone:
        print(f"  {'all':<20} alone {_share(alone):.2f}  in a row {_share(row):.2f}  (n={len(alone)})")


def _first_rank(retrieval, gold: set[int]) -> int | None:
    """The rank (from 1) of the first passage holding a gold message, None when none does."""
    return next((rank for rank, match in enumerate(retrieval.matches, start=1) if gold & set(match.message_ids)),
                None)


def _first_evidence(conn, retrieval, question: str) -> int | None:
    """The message the person reads first: the top passage's closest message (highlighted, quoted)."""
    from gallery_app.core.chat.evidence import closest_message

    if not retrieval.matches:
        return None
    closest = closest_message(conn, retrieval.matches[0], question)
    return closest.message_id if closest is not None else None


def _line_of(conn, message_id: int | None) -> str:
    from gallery_app.core.chat.repository import messages_by_id

    found = messages_by_id(conn, [message_id]) if message_id is not None else []
    return _message_line(found[0]) if found else ""


def _message_line(message) -> str:
    return f"{message.timestamp:%Y-%m-%d %H:%M} {message.sender}: {message.text[:300]}"


def _miss(conn, item: dict, query: str, retrieval, gold: set[int], first: int | None) -> dict:
    from gallery_app.core.chat.repository import messages_by_id

    return {
        "id": item["id"], "kind": item["kind"], "question": item["question"], "searched": query,
        "rank": first if first is not None else f">{DEEPEST_RANK}",
        "gold": [_message_line(m) for m in messages_by_id(conn, sorted(gold))],
        "top": [{"day": m.day, "similarity": round(m.similarity, 3),
                 "best": [_message_line(x) for x in messages_by_id(conn, m.focus_message_ids)]}
                for m in retrieval.matches[:3]],
    }


def _is_dont_know(text: str) -> bool:
    lowered = text.lower().replace("’", "'")
    return any(phrase in lowered for phrase in ("don't know", "couldn't find", "do not know", "doesn't say",
                                                "don't say", "not in the messages"))


def _share(values: list) -> float:
    return sum(values) / len(values) if values else float("nan")


def print_table(results: list[SetResult], header: str) -> None:
    print(header)
    columns = f"{'set':<20} {'kind':<14} {'n':>3} " + " ".join(f"{'R@' + str(k):>5}" for k in KS) + f" {'ev@1':>5}"
    print(columns + "  misses (rank of first gold passage)")
    print("-" * (len(columns) + 40))
    for result in results:
        kinds = sorted(k for k in result.recall if k != "overall") + ["overall"]
        for kind in kinds:
            row = result.recall[kind]
            n = len(row[1])
            ranks = [str(miss["rank"]) for miss in result.misses if kind in ("overall", miss["kind"])]
            evidence = f" {_share(result.evidence):>5.2f}" if kind == "overall" else " " * 6
            print(f"{result.name:<20} {kind:<14} {n:>3} " + " ".join(f"{sum(row[k]) / n:>5.2f}" for k in KS)
                  + evidence + ("  " + " ".join(ranks) if ranks and kind != "overall" else ""))
        seconds = result.import_seconds
        extra = ""
        if result.keyword_hits:
            extra += (f" · answers with a keyword {sum(result.keyword_hits)}/{len(result.keyword_hits)} (in the"
                      f" model's own answer {sum(result.keyword_in_answers)}, in the closest message under a decline"
                      f" {sum(result.keyword_hits) - sum(result.keyword_in_answers)}; the model's words before the"
                      f" grounding check {sum(result.keyword_before_check)})")
        if result.dont_know:
            extra += f" · \"don't know\" on unanswerable {sum(result.dont_know)}/{len(result.dont_know)}"
        print(f"{result.name:<20} import {seconds:.1f} s: {result.messages} messages, {result.passages} passages, "
              f"{result.windows} windows, {result.windows / max(seconds, 1e-9):.1f} windows/s{extra}")
    print_summary(results)


def summarise(results: list[SetResult]) -> dict | None:
    """Mean and worst set over the real chats (macro average), and the kinds that matter pooled over them."""
    real = [r for r in results if r.name in REAL_SETS and r.recall["overall"][3]]
    if not real:
        return None
    recall = {r.name: {k: _share(r.recall["overall"][k]) for k in KS} for r in real}
    worst = min(real, key=lambda r: recall[r.name][3]).name
    pooled = {kind: [hit for r in real for hit in r.recall[kind][3]] for kind in ("follow-up", "cross-lingual")}
    return {"sets": len(real), "mean": {k: sum(v[k] for v in recall.values()) / len(real) for k in KS},
            "worst": (worst, recall[worst][3]), "per_set": {name: v[3] for name, v in recall.items()},
            "pooled": {kind: (len(hits), _share(hits)) for kind, hits in pooled.items()},
            "evidence": sum(_share(r.evidence) for r in real) / len(real)}


def print_summary(results: list[SetResult]) -> None:
    summary = summarise(results)
    if summary is not None:
        mean = summary["mean"]
        worst_name, worst = summary["worst"]
        print(f"real chats ({summary['sets']} sets): mean " + " ".join(f"R@{k} {mean[k]:.2f}" for k in KS)
              + f" · worst R@3 {worst:.2f} ({worst_name}) · mean evidence@1 {summary['evidence']:.2f}")
        print("pooled over the real chats: " + " · ".join(
            f"{kind} R@3 {share:.2f} (n={n})" for kind, (n, share) in summary["pooled"].items()))
        real = [r for r in results if r.name in REAL_SETS and r.keyword_hits]
        if real:
            asked = sum(len(r.keyword_hits) for r in real)
            print(f"answers over the real chats: a keyword in {sum(sum(r.keyword_hits) for r in real)}/{asked} of what"
                  f" the person reads; in the model's own answer {sum(sum(r.keyword_in_answers) for r in real)}, before"
                  f" the grounding check {sum(sum(r.keyword_before_check) for r in real)}")
        print("docs row: | " + " | ".join(f"{share:.2f}" for share in summary["per_set"].values())
              + f" | {mean[3]:.2f} | {worst:.2f} | {summary['evidence']:.2f} |  (" + " · ".join(summary["per_set"]) + ")")
    overall = [f"{r.name} {_share(r.recall['overall'][3]):.2f}" for r in results]
    print("summary: R@3 " + " · ".join(overall))


@dataclass
class Options:
    ask: AskOptions
    verbose: bool
    in_a_row: bool = False
    #: The model that reads the best passages again (None: off, or not installed).
    second_reading: Any = None


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("questions", type=Path, nargs="?", help="one question file (with CHAT)")
    parser.add_argument("chat", type=Path, nargs="?", help="the export the questions are about")
    parser.add_argument("--set", action="append", choices=sorted(SETS), dest="sets",
                        help="a named set (repeatable; default: all whose files exist)")
    parser.add_argument("--embedder", help="text-embedder setting (default: the role's default)")
    parser.add_argument("--llm", help="chat-llm setting (default: the role's default)")
    parser.add_argument("--retrieval-only", action="store_true", help="skip answering")
    parser.add_argument("--answers", choices=["all", "real", "none"], default="all",
                        help="which sets are answered by the LLM (default all; --retrieval-only = none)")
    parser.add_argument("--follow-ups", choices=[mode.value for mode in FollowUps], default=None)
    parser.add_argument("--keywords", choices=["on", "off"], default=None, help="fuse keyword search")
    parser.add_argument("--read-again", choices=["on", "off"], default=None,
                        help="read the best passages a second time with a small language model (default: on)")
    parser.add_argument("--rare-words", choices=["on", "off"], default=None,
                        help="lift passages sharing a rare word with the question")
    parser.add_argument("--by-language", choices=["on", "off"], default=None,
                        help="score each language's windows on their own scale")
    parser.add_argument("--chunk-tokens", type=int, default=None)
    parser.add_argument("--include-date", action="store_true")
    parser.add_argument("--keep-grids", action="store_true", help="keep emoji grids in passages")
    parser.add_argument("--plain-numbers", choices=["both", "mentions", "senders", "off"], default=None,
                        help="search @-mentions of numbers and phone-number senders without their digits")
    parser.add_argument("--window-messages", type=int, default=None, help="consecutive messages per window")
    parser.add_argument("--window-stride", type=int, default=None, help="messages between window starts")
    parser.add_argument("--finish-turns", type=int, default=None,
                        help="a window finishes a person's turn with up to N more messages (-1: cut where the count falls)")
    parser.add_argument("--lead-in", choices=["on", "off"], default=None,
                        help="read each window after the message before it")
    parser.add_argument("--message-window-words", type=int, default=None,
                        help="messages of at least this many words are windows of their own (0: none)")
    parser.add_argument("--passages", type=int, default=AskOptions.passages, help="passages given to the LLM")
    parser.add_argument("--instructions", type=Path, default=None, metavar="FILE",
                        help="answer instructions from a UTF-8 file, as chat ask --instructions takes them")
    parser.add_argument("--context", choices=["excerpts", "passages"], default=None,
                        help="give the LLM focused excerpts or whole passages")
    parser.add_argument("--cache", type=Path, default=None,
                        help="remember window vectors and the reader's readings in this folder between runs\n"
                             "(development; import and question times lie)")
    parser.add_argument("--misses", type=Path, default=REPO / ".cache" / "chat_eval_misses.jsonl",
                        help="where every miss is written (default .cache/chat_eval_misses.jsonl)")
    parser.add_argument("--constant", action="append", default=[], metavar="NAME=VALUE",
                        help="override a retrieval, chunking or rare_words constant, e.g. FOLLOW_UP_LIFT=0.75 (for recording variants)")
    parser.add_argument("--in-a-row", action="store_true",
                        help="also ask every set's questions in one conversation over one library of all the chats, "
                             "sets interleaved, and compare with each asked alone")
    parser.add_argument("--verbose", action="store_true", help="print every question's outcome")
    parser.add_argument("--with-notes", action="store_true",
                        help="index ../shared/fixtures/notes_qa into every chat's library: chat questions asked with "
                             "notes beside them, as the app asks both")
    parser.add_argument("--notes", choices=["on", "off", "only"], default=None,
                        help="also measure ../shared/fixtures/notes_qa (default: on when no --set is given)")
    args = parser.parse_args(argv)
    if (args.questions is None) != (args.chat is None):
        parser.error("give QUESTIONS and CHAT together")
    if args.retrieval_only:
        args.answers = "none"
    return args


def chosen_sets(args) -> list[tuple[str, Path, Path]]:
    if args.questions is not None:
        return [(args.questions.stem, args.questions, args.chat)]
    if not args.sets and not REAL_SETS:
        print(f"no real chats: {CHAT_QA} holds no NAME.questions.jsonl (they live in ../shared/fixtures/chat_qa)",
              file=sys.stderr)
    chosen = []
    for name in args.sets or list(SETS):
        questions, chat = SETS[name]
        if questions.exists() and chat.exists():
            chosen.append((name, questions, chat))
        else:
            raise SystemExit(f"{name}: {questions} or {chat} is missing")
    return chosen


def ask_options(args: argparse.Namespace) -> AskOptions:
    """The app's AskOptions with what the command line changed."""
    def on(choice: str | None) -> bool | None:
        return None if choice is None else choice == "on"

    chosen = {"passages": args.passages, "follow_ups": args.follow_ups, "use_keywords": on(args.keywords),
              "rare_words": on(args.rare_words), "by_language": on(args.by_language), "read_again": on(args.read_again),
              "excerpts": None if args.context is None else args.context == "excerpts",
              "instructions": _instructions(args.instructions)}
    return AskOptions(**{name: value for name, value in chosen.items() if value is not None})


def _instructions(path: Path | None) -> str | None:
    from gallery_app.core.chat.instructions import InvalidInstructions, read_instructions

    try:
        return read_instructions(path).text if path else None
    except InvalidInstructions as error:  # a measurement with other rules than asked for would mislead
        raise SystemExit(f"chat_eval: {error}") from None


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("GALLERY_APP_DATA_DIR", tempfile.mkdtemp(prefix="chat-eval-"))
    from gallery_app.core.chat.chunking import ChunkingConfig
    from gallery_app.core.models.loading import open_chat_llm, open_text_embedder

    sets = chosen_sets(args)
    from gallery_app.core import rare_words
    from gallery_app.core.chat import chunking, retrieval, second_reading

    for assignment in args.constant:
        name, _, value = assignment.partition("=")
        module = next((m for m in (retrieval, chunking, rare_words, second_reading) if hasattr(m, name)), None)
        if module is None:
            raise SystemExit(f"none of retrieval, chunking, rare_words and second_reading has a constant {name}")
        setattr(module, name, type(getattr(module, name))(value))
    embedder = open_text_embedder(args.embedder)
    if args.cache:
        embedder = CachedEmbedder(embedder, args.cache)
    ask = ask_options(args)
    follow_ups, keywords = ask.follow_ups, ask.use_keywords
    needs_llm = args.answers != "none" or follow_ups is FollowUps.REWRITE
    llm = open_chat_llm(args.llm, n_ctx=ask.context_tokens) if needs_llm else None
    overrides = {"max_tokens": args.chunk_tokens, "window_messages": args.window_messages,
                 "window_stride": args.window_stride, "message_window_words": args.message_window_words}
    if args.lead_in:
        overrides["lead_in"] = args.lead_in == "on"
    if args.plain_numbers:
        overrides["plain_mentions"] = args.plain_numbers in ("both", "mentions")
        overrides["plain_number_senders"] = args.plain_numbers in ("both", "senders")
    config = ChunkingConfig(include_date=args.include_date, trim_noise=not args.keep_grids,
                            **{k: v for k, v in overrides.items() if v is not None})
    if args.finish_turns is not None:
        config = replace(config, finish_turns=None if args.finish_turns < 0 else args.finish_turns)
    options = Options(ask, args.verbose, args.in_a_row,
                      second_reading.open_second_reading() if ask.read_again else None)
    if args.cache and options.second_reading is not None:
        options.second_reading.model = CachedReading(options.second_reading.model, args.cache,
                                                     second_reading.READER_MODEL)

    def save_caches() -> None:
        """What was embedded and read so far, kept for the next run (after each step that embeds or reads)."""
        if args.cache:
            embedder.save()
            if options.second_reading is not None:
                options.second_reading.model.save()

    notes = args.notes or ("off" if args.sets or args.questions else "on")
    if notes == "only":
        sets = []
    imported: dict[Path, ImportedChat] = {}
    results = []
    for name, questions, chat in sets:
        if chat not in imported:
            imported[chat] = import_for_eval(chat, embedder, config)
            if args.with_notes:
                from gallery_app.core.notes.indexer import index_folder

                index_folder(imported[chat].conn, NOTES_QA / "folder", embedder)
            save_caches()
        answering = args.answers == "all" or (args.answers == "real" and name in REAL_SETS)
        results.append(evaluate(name, load_questions(questions), imported[chat], embedder,
                                llm if answering else None, options))
    save_caches()
    header = (f"embedder {embedder.spec.key} · llm {llm.spec.key if llm else '-'} · follow-ups {follow_ups.value} · "
              f"keywords {'on' if keywords else 'off'} · read again {'on' if options.second_reading else 'off'} · rare words {args.rare_words or 'default'} · by language {args.by_language or 'default'} · passages {config.max_tokens} tokens"
              f"{' + date' if config.include_date else ''}{'' if config.trim_noise else ' with grids'} · windows {config.window_messages}/{config.window_stride}{'' if config.finish_turns is None else f' + {config.finish_turns} to finish a turn'} · message windows ≥ {config.message_window_words} words"
              + "".join(f" · {c}" for c in args.constant)
              + (f" · instructions {args.instructions.name}" if args.instructions else "")
              + (" · vectors cached (import times are not the app's)" if args.cache else ""))
    if results:
        print_table(results, header)
    if notes != "off" and (NOTES_QA / "questions.jsonl").is_file():
        from bench.notes_eval import evaluate_notes, print_notes_table

        print_notes_table(evaluate_notes(embedder, NOTES_QA, verbose=args.verbose,
                                         llm=llm if args.answers in ("all", "real") else None))
        save_caches()
    if args.in_a_row:
        print_in_a_row(in_a_row([(name, load_questions(q), chat) for name, q, chat in sets], embedder, config, options))
        save_caches()
    args.misses.parent.mkdir(parents=True, exist_ok=True)
    with args.misses.open("w", encoding="utf-8") as out:
        for result in results:
            for miss in result.misses:
                out.write(json.dumps({"set": result.name, **miss}, ensure_ascii=False) + "\n")
            for miss in result.evidence_misses:
                out.write(json.dumps({"set": result.name, "miss": "evidence", **miss}, ensure_ascii=False) + "\n")
    print(f"misses (rank > 3): {sum(len(r.misses) for r in results)}, and top passage right but another message "
          f"highlighted: {sum(len(r.evidence_misses) for r in results)}, written to {args.misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
