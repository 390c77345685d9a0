"""`gallery-app-cli chat …`: parse, import, list, ask and a conversation loop, without a window."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from gallery_app.cli_progress import ProgressBar, terminal_text
from gallery_app.core.errors import AppError, Cancelled


#: Marks the lines of a passage's best-matching messages.
FOCUS_MARK = "▶"


def _print_passages(found, stream=None, lines=None) -> None:
    """``lines``: per chunk id, the passage's ``PassageLine``s (which lines are the best match)."""
    stream = stream or sys.stdout
    searched = found.search_query != found.question
    def show(text: str) -> None:
        print(terminal_text(text), file=stream)

    show(found.retrieval.describe() + (f" (searched for: {found.search_query})" if searched else ""))
    for match in found.retrieval.matches:
        show(f"  ── {_where(match, ' · ')} · similarity {match.similarity:.2f}")
        marked = (lines or {}).get(match.chunk_id)
        for line in marked or match.text.split("\n"):
            if isinstance(line, str):
                show(f"     {line}")
            else:
                show(f"   {FOCUS_MARK if line.focus else ' '} {line.text}")
    if found.retrieval.unindexed:
        print(f"  ({found.retrieval.unindexed} passages are not indexed for this model yet: "
              "run gallery-app-cli chat reindex)", file=stream)
    for notice in found.retrieval.notices:
        print(f"  ({notice})", file=stream)


def _where(match, separator: str = ", ") -> str:
    """A passage's chat and day, or a note's title, place and file."""
    where = f"{match.chat_title}{separator}{match.day}"
    shown = match.note is not None and match.note.relative_path != match.day
    return f"{where} ({match.note.relative_path})" if shown else where


def _open_store(*, to_read: bool = False):
    """The store; ``to_read``: a command that only reads, which also works on a data folder it cannot write."""
    from gallery_app.core.store import open_store, open_store_to_read

    return open_store_to_read() if to_read else open_store()


def cmd_parse(args: argparse.Namespace) -> int:
    from gallery_app.core.chat.export_file import read_export
    from gallery_app.core.chat.whatsapp import parse_chat_text

    parsed = parse_chat_text(read_export(Path(args.file)).text)
    for message in parsed.messages:
        print(json.dumps({"ts": message.timestamp.isoformat(), "sender": message.sender, "text": message.text,
                          "kind": message.kind.value, "attachment": message.attachment, "caption": message.caption,
                          "line": message.line},
                         ensure_ascii=False))
    print(f"{len(parsed.messages)} messages; date order {parsed.date_order}; "
          f"{len(parsed.skipped_lines)} unreadable lines before the first message", file=sys.stderr)
    if parsed.messages:
        print(terminal_text(f"date order {parsed.date_order} because {parsed.date_order_reason}"), file=sys.stderr)
    for line, text, why in parsed.date_conflicts:
        print(terminal_text(f"line {line}: {text[:80]} — {why}"), file=sys.stderr)
    return 0


#: An import expected to take longer than this says so before it goes on.
TELL_ESTIMATE_AFTER_S = 60


#: The import's stages that draw a bar, and its label (stage names: core.chat.importer.ImportProgress).
IMPORT_BARS = {"photos": ("Adding photos", "photos"), "embedded": ("Embedding messages", "passages")}


def cmd_import(args: argparse.Namespace) -> int:
    from gallery_app.cli_photos import vision_if_here
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.errors import Cancelled
    from gallery_app.core.models.loading import open_text_embedder

    conn = _open_store()
    embedder = open_text_embedder(args.embedder)
    # Photos are embedded when CLIP is here, else recorded without vectors (the summary says so).
    vision, no_vision = vision_if_here(args.vision)
    bars: dict[str, ProgressBar] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in IMPORT_BARS or not total:
            return
        if stage not in bars:
            close_bars()  # one bar per line: the photos' ends before the passages' starts
            label, unit = IMPORT_BARS[stage]
            bars[stage] = ProgressBar(label, unit=unit)
        bars[stage](done, total)

    def close_bars() -> None:
        for bar in bars.values():
            bar.close()
        bars.clear()

    def tell(estimate) -> None:
        if estimate.seconds > TELL_ESTIMATE_AFTER_S:
            print(f"{estimate.describe()} Ctrl+C stops; importing again continues where it stopped.", flush=True)

    try:
        with _stop_on_first_ctrl_c() as stop:
            for file in args.files:
                try:
                    summary = import_chat(conn, Path(file), embedder, progress=progress, on_estimate=tell,
                                          cancel=stop.is_set, vision=vision)
                except KeyboardInterrupt:
                    # Every finished step is committed: stopping here loses at most the batch being embedded.
                    raise Cancelled("The import was stopped; everything it had finished is kept.",
                                    hint="Run the same import again to continue.") from None
                finally:
                    close_bars()
                print(terminal_text(summary.describe()))
                if summary.photos and summary.photos.without_vectors and no_vision is not None:
                    print(f"Note: {no_vision}", file=sys.stderr)
    finally:
        if vision is not None:
            vision.release()
    return 0


@contextlib.contextmanager
def _stop_on_first_ctrl_c() -> Iterator[threading.Event]:
    """An event the first Ctrl+C sets, for work that stops at its next batch, the way Cancel does in the
    window: an interrupt raised in the middle of the model's or SQLite's work was seen to leave the
    process running (1 run in 20). A second Ctrl+C interrupts at once."""
    stop = threading.Event()

    def on_interrupt(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_list(args: argparse.Namespace) -> int:
    from gallery_app.core.chat.repository import list_chats

    chats = list_chats(_open_store(to_read=True))
    if not chats:
        print("No chats imported yet. Import one with: gallery-app-cli chat import _chat.txt")
    for chat in chats:
        print(terminal_text(f"{chat.id:>4}  {chat.describe()}"))  # titles and names are the chat's: never obeyed
    return 0


def _session(args: argparse.Namespace):
    from gallery_app.core.chat.ask_options import AskOptions
    from gallery_app.core.chat.prompting import check_budget
    from gallery_app.cli_notes import notes_folder
    from gallery_app.core.chat.second_reading import open_second_reading
    from gallery_app.core.chat.session import CHATS, EVERY_SOURCE, NOTES, ChatSession
    from gallery_app.core.models.loading import notices, open_chat_llm, open_text_embedder

    options = AskOptions(passages=args.passages, answer_tokens=args.answer_tokens, context_tokens=args.context,
                         follow_ups=args.follow_ups, instructions=chosen_instructions(args),
                         read_again=args.read_again == "on")
    check_budget(options.context_tokens, options.answer_tokens)  # before any model is loaded
    llm = open_chat_llm(args.llm, n_ctx=options.context_tokens)
    embedder = open_text_embedder(args.embedder)
    for model in (embedder, llm):
        for notice in notices(model):
            print(f"Note: {notice}", file=sys.stderr)
    conn = _open_store(to_read=True)
    sources = {"chats": {CHATS}, "notes": {NOTES}}.get(args.only, EVERY_SOURCE)
    return ChatSession(conn, embedder, llm, options, chats=args.chat or None,
                       notes=[notes_folder(conn, text).id for text in args.notes_folder] if args.notes_folder else None,
                       sources=frozenset(sources), second_reading=open_second_reading() if options.read_again else None)


def add_instructions_option(parser: argparse.ArgumentParser) -> None:
    """``--instructions FILE``, for every command that asks (read by ``chosen_instructions``)."""
    parser.add_argument("--instructions", metavar="FILE",
                        help="answer instructions from a UTF-8 text file, in place of the app's own: the rules, with "
                             "{context} where the messages go and {question} where the question goes "
                             "(write {{ or }} for a brace)")


def chosen_instructions(args: argparse.Namespace) -> str:
    """The instructions ``--instructions`` names (a file that cannot make a prompt is refused here, before any
    model is loaded), else the app's own."""
    from gallery_app.core.chat.ask_options import AskOptions
    from gallery_app.core.chat.instructions import read_instructions

    return read_instructions(args.instructions).text if args.instructions else AskOptions.instructions


def _sources(answer) -> str:
    cited = ", ".join(f"[{n}] {_where(m)}" for n, m in zip(answer.citations, answer.cited_matches))
    return f"Sources: {cited}" if cited else ""


def _rows(text: str, columns: int) -> int:
    """Terminal rows ``text`` takes from the start of a line (wide characters count twice)."""
    def width(line: str) -> int:
        return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
                   for ch in line)

    return sum(max(1, -(-width(line) // max(1, columns))) for line in text.split("\n"))


class _AnswerPrinter:
    """Shows the answer so that what stays on screen is the checked answer, as in the window.

    On a terminal the pieces stream in dim (not checked yet) and are then rewritten as the final
    answer, which replaces them when the grounding check declined what the model wrote. Anywhere
    else (a pipe, a file) only the final answer is printed: what the model wrote before the check
    must not end up in a file or a script's input, and nobody is watching it appear.
    """

    DIM, RESET = "\x1b[2m", "\x1b[0m"

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self.shown = ""

    def piece(self, text: str) -> None:
        if not self.live:
            return
        text = terminal_text(text)
        self.stream.write((self.DIM if not self.shown else "") + text)
        self.stream.flush()
        self.shown += text

    def _erase(self) -> None:
        if self.shown:
            rows = _rows(self.shown, shutil.get_terminal_size().columns)
            self.stream.write(self.RESET + "\r" + (f"\x1b[{rows - 1}A" if rows > 1 else "") + "\x1b[J")
            self.shown = ""

    def final(self, text: str) -> None:
        self._erase()
        self.stream.write(terminal_text(text) + "\n")
        self.stream.flush()

    def abandon(self) -> None:
        """Stopped before the answer was checked: the unchecked text goes."""
        self._erase()
        self.stream.flush()


def _ask(session, question: str, show_prompt: bool) -> None:
    from gallery_app.core.chat.events import Answer, AnswerPiece, MatchesFound
    from gallery_app.core.chat.evidence import match_lines

    printer = _AnswerPrinter()
    try:
        for event in session.ask(question):
            if isinstance(event, MatchesFound):
                lines = {m.chunk_id: match_lines(session.conn, m, m.text) for m in event.retrieval.matches}
                _print_passages(event, lines=lines)
                print()
            elif isinstance(event, Answer):
                printer.final(event.text or "No answer was written.")
                if _sources(event):
                    print(terminal_text(_sources(event)))
                if show_prompt and event.prompt is not None:
                    print(f"\n── prompt sent ({len(event.prompt.tokens)} tokens) ──\n{terminal_text(event.prompt.text)}"
                          "\n── end of prompt ──")
            elif isinstance(event, AnswerPiece):
                printer.piece(event.text)
            # A Status is not printed: the output is the passages and the answer, which scripts read too.
    finally:
        printer.abandon()


def cmd_ask(args: argparse.Namespace) -> int:
    from gallery_app.core.chat.session import check_question

    check_question(args.question)
    _ask(_session(args), args.question, args.show_prompt)
    return 0


def cmd_repl(args: argparse.Namespace) -> int:
    session = _session(args)
    print("Ask about your chats. /new starts a new conversation, /quit (or Ctrl+D) leaves.")
    while True:
        try:
            question = input("? ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if question in ("/quit", "/exit"):
            return 0
        if question == "/new":
            session.new_conversation()
            print("New conversation.")
            continue
        if question:
            try:
                _ask(session, question, args.show_prompt)
            except Cancelled:
                raise
            except AppError as error:  # one question failed (the model crashed, …): the next may be asked
                print(f"Error: {error}", file=sys.stderr)


def cmd_reindex(args: argparse.Namespace) -> int:
    from gallery_app.core.chat.embedder_switch import switch_embedder
    from gallery_app.core.chat.importer import reindex
    from gallery_app.core.errors import ModelNotAvailable
    from gallery_app.core.models.loading import open_text_embedder, resolve_setting
    from gallery_app.core.models.specs import Role

    embedder = open_text_embedder(args.embedder)
    try:
        used = resolve_setting(Role.TEXT_EMBEDDER).spec
    except ModelNotAvailable:
        used = None
    conn = _open_store()
    bar = ProgressBar(f"Embedding with {embedder.spec.name}", unit="passages")

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embedded" and total:
            bar(done, total)

    with _stop_on_first_ctrl_c() as stop:
        try:
            if args.embedder and (used is None or used.key != embedder.spec.key):
                print(f"Embedding every chat with {embedder.spec.name}; search keeps using "
                      f"{used.name if used else 'the embedder it has'} until every passage is done. "
                      "Ctrl+C stops; running the same command again continues.", flush=True)
                added = switch_embedder(conn, embedder, args.embedder, progress=progress, cancel=stop.is_set)
                bar.close()
                print(f"{added} passages embedded. {embedder.spec.name} is now the text embedder used, "
                      "here and in the window (from its next start).")
                return 0
            added = reindex(conn, embedder, progress=progress, cancel=stop.is_set)
        finally:
            bar.close()
    print(f"{added} passages embedded with {embedder.spec.name}.")
    return 0


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low} (got {value})")
        return value

    return parse


def add_chat_commands(commands: argparse._SubParsersAction) -> None:
    from gallery_app.core.chat.ask_options import AskOptions, FollowUps
    from gallery_app.core.chat.prompting import MIN_ANSWER_TOKENS, MIN_PROMPT_TOKENS

    chat = commands.add_parser("chat", help="import WhatsApp chats and ask questions about them",
                               description="Import WhatsApp exports and ask questions answered from them.")
    actions = chat.add_subparsers(dest="chat_command", metavar="ACTION", required=True)

    def model_options(parser: argparse.ArgumentParser, llm: bool) -> None:
        parser.add_argument("--embedder", metavar="SETTING", help="text-embedder: a model key or a model folder")
        if llm:
            parser.add_argument("--llm", metavar="SETTING", help="chat-llm: a model key or a .gguf file")
            parser.add_argument("--chat", type=int, action="append", metavar="ID", help="only this chat (repeatable)")
            only = parser.add_mutually_exclusive_group()
            only.add_argument("--chats", dest="only", action="store_const", const="chats",
                              help="search the chats only (default: chats and notes)")
            only.add_argument("--notes", dest="only", action="store_const", const="notes",
                              help="search the notes folders only")
            parser.add_argument("--notes-folder", action="append", metavar="FOLDER",
                                help="only this notes folder, by path or by its number in notes list (repeatable)")
            parser.add_argument("--passages", type=_at_least(1), default=AskOptions.passages,
                                help="passages given to the model")
            parser.add_argument("--context", type=_at_least(MIN_PROMPT_TOKENS + MIN_ANSWER_TOKENS),
                                default=AskOptions.context_tokens, help="LLM context window in tokens")
            parser.add_argument("--answer-tokens", type=_at_least(MIN_ANSWER_TOKENS),
                                default=AskOptions.answer_tokens,
                                help=f"longest answer in tokens (the context keeps {MIN_PROMPT_TOKENS} more for the "
                                     "question and the messages)")
            parser.add_argument("--follow-ups", choices=[f.value for f in FollowUps],
                                default=AskOptions.follow_ups.value, help="how a follow-up question is searched for")
            parser.add_argument("--read-again", choices=["on", "off"], default="on" if AskOptions.read_again else "off",
                                help="read the best passages a second time with a small offline model (Gemma 3 "
                                     "270M): better order, about 4–5 s more per question on 2 cores")
            parser.add_argument("--show-prompt", action="store_true", help="print the exact prompt sent to the model")
            add_instructions_option(parser)

    parse = actions.add_parser("parse", help="print a chat export's messages as JSON Lines",
                               description="Parse a _chat.txt or export .zip; one JSON object per message.")
    parse.add_argument("file")
    parse.set_defaults(handler=cmd_parse)
    imp = actions.add_parser("import", help="import WhatsApp exports (_chat.txt or .zip), their photos too",
                             description="Import chats; importing a longer export again adds only new messages. "
                                         "The photos the messages attach join the gallery, with who sent them "
                                         "and when (photos list --chat ID).")
    imp.add_argument("files", nargs="+")
    model_options(imp, llm=False)
    imp.add_argument("--vision", metavar="SETTING",
                     help="clip-vision model for the export's photos (without one they are added unsearchable)")
    imp.set_defaults(handler=cmd_import)
    listing = actions.add_parser("list", help="list imported chats", description="List the imported chats.")
    listing.set_defaults(handler=cmd_list)
    ask = actions.add_parser("ask", help="ask one question (the answer streams)",
                             description="Find the messages that answer a question and let the local LLM answer.")
    ask.add_argument("question")
    model_options(ask, llm=True)
    ask.set_defaults(handler=cmd_ask)
    repl = actions.add_parser("repl", help="a conversation: follow-up questions work",
                              description="Ask questions one after another; follow-ups use the conversation.")
    model_options(repl, llm=True)
    repl.set_defaults(handler=cmd_repl)
    re_index = actions.add_parser(
        "reindex", help="embed every chat with another text embedder and switch to it (or fill in the current one)",
        description="With --embedder KEY: embed every passage with that model (search keeps the current one "
                    "meanwhile), then make it the text embedder used. Without: embed what the current one lacks.")
    model_options(re_index, llm=False)
    re_index.set_defaults(handler=cmd_reindex)
