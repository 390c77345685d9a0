"""`gallery-app-cli notes …`: add (or rescan) notes folders, list them, remove one, search them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gallery_app.cli_progress import ProgressBar, terminal_text
from gallery_app.core.errors import AppError, Cancelled

#: Skipped files listed one by one after `notes add`; more are summarised by reason only.
SHOWN_SKIPS = 20
#: Stages of core.notes.indexer.IndexProgress that draw a bar, with the bar's unit.
BAR_UNITS = {"indexing": "files", "embedding": "chunks"}


def _open_store():
    from gallery_app.core.store import open_store

    return open_store()


def _shown_path(path) -> str:
    from gallery_app.core.file_names import printable

    return terminal_text(printable(path))


def _print_skipped(skipped: list[tuple[str, str]], stream=None) -> None:
    for relative, reason in skipped[:SHOWN_SKIPS]:
        print(f"  skipped ({terminal_text(reason)}): {_shown_path(relative)}", file=stream or sys.stdout)
    if len(skipped) > SHOWN_SKIPS:
        print(f"  … and {len(skipped) - SHOWN_SKIPS:,} more skipped files", file=stream or sys.stdout)


def cmd_add(args: argparse.Namespace) -> int:
    from gallery_app.cli_chat import _stop_on_first_ctrl_c
    from gallery_app.core.models.loading import open_text_embedder
    from gallery_app.core.notes.indexer import index_folder

    conn = _open_store()
    embedder = open_text_embedder(args.embedder, threads=args.threads)
    try:
        with _stop_on_first_ctrl_c() as stop:
            for folder in args.folders:
                bars: dict[str, ProgressBar] = {}

                def progress(stage: str, done: int, total: int, bars=bars, folder=folder) -> None:
                    if stage not in BAR_UNITS or not total:
                        return
                    if stage not in bars:
                        for bar in bars.values():
                            bar.close()
                        label = "Indexing" if stage == "indexing" else "Embedding with the new embedder"
                        bars[stage] = ProgressBar(f"{label} {_shown_path(Path(folder).name or folder)}",
                                                  unit=BAR_UNITS[stage])
                    bars[stage](done, total)

                try:
                    summary = index_folder(conn, Path(folder), embedder, progress=progress, cancel=stop.is_set)
                except KeyboardInterrupt:
                    raise Cancelled("Indexing was stopped; every file it had finished is kept.",
                                    hint="Run the same command again to continue.") from None
                finally:
                    for bar in list(bars.values())[-1:]:
                        bar.close()
                print(terminal_text(summary.describe()))
                _print_skipped(summary.skipped)
                if summary.cancelled:
                    print("Run the same command again to index the rest.", file=sys.stderr)
                    return 130
    finally:
        embedder.release()
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from gallery_app.core.notes.indexer import describe_kinds
    from gallery_app.core.notes.repository import files_with_problems, kind_totals, list_folders, skipped_files

    conn = _open_store()
    folders = list_folders(conn)
    if not folders:
        print("No notes folders yet. Add one with: gallery-app-cli notes add FOLDER")
    for folder in folders:
        kinds = kind_totals(conn, folder.id)
        chunks = sum(totals.chunks for totals in kinds.values())
        scanned = f"scanned {folder.scanned_at}" if folder.scanned_at else "not fully indexed yet: add it again"
        print(f"{folder.id:>4}  {_shown_path(folder.path)}: {describe_kinds(kinds)}, {chunks:,} chunks ({scanned})")
        skipped = skipped_files(conn, folder.id)
        _print_skipped([(stored.relative_path, stored.skip_reason or "") for stored in skipped])
        for stored in files_with_problems(conn, folder.id):
            print(f"  indexed without ({terminal_text('; '.join(stored.problems))}): {_shown_path(stored.relative_path)}")
    return 0


def notes_folder(conn, text: str):
    """The notes folder named by its number (``notes list``) or its path; a usage error otherwise."""
    from gallery_app.core.notes.repository import folder_by_id, folder_by_path

    found = folder_by_id(conn, int(text)) if text.strip().isdigit() else None
    found = found or folder_by_path(conn, Path(text).expanduser().resolve())
    if found is None:
        raise AppError(f"{terminal_text(text)} is not a notes folder.",
                       hint="See the notes folders with: gallery-app-cli notes list")
    return found


def cmd_remove(args: argparse.Namespace) -> int:
    from gallery_app.core.notes.indexer import describe_kinds
    from gallery_app.core.notes.repository import kind_totals, remove_folder

    conn = _open_store()
    folder = notes_folder(conn, args.folder)
    kinds = kind_totals(conn, folder.id)
    remove_folder(conn, folder.id)
    print(f"Removed the notes folder {_shown_path(folder.path)} ({describe_kinds(kinds)}) from the library; "
          "the files themselves are untouched.")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from gallery_app.core.models.loading import open_text_embedder
    from gallery_app.core.notes.chunking import HEADING_SEPARATOR
    from gallery_app.core.notes.search import search_notes

    conn = _open_store()
    folders = [notes_folder(conn, text).id for text in args.folder] if args.folder else None
    embedder = open_text_embedder(args.embedder, threads=args.threads)
    try:
        hits = search_notes(conn, embedder, args.question, args.k, folder_ids=folders)
    finally:
        embedder.release()
    if not hits:
        print("Nothing found: no notes are indexed for this embedder yet (gallery-app-cli notes add FOLDER).")
    for hit in hits:
        where = HEADING_SEPARATOR.join([hit.title, *hit.heading_path])
        page = f", page {hit.page}" if hit.page is not None else ""
        print(f"  ── {hit.score:5.2f} (cosine {hit.similarity:.3f})  {_shown_path(hit.chunk.relative_path)}"
              f" · {terminal_text(where)}{page}")
        for line in hit.text.split("\n"):
            print(f"     {terminal_text(line)}")
    return 0


def _hits(text: str) -> int:
    from gallery_app.core.notes.search import MAX_HITS

    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_HITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_HITS}")
    return int(text)


def add_notes_commands(commands: argparse._SubParsersAction) -> None:
    notes = commands.add_parser("notes", help="add folders of notes and documents and search them",
                                description="Index folders of notes (Markdown, text, JSONL, PDF, Word) and search "
                                            "them by meaning.")
    actions = notes.add_subparsers(dest="notes_command", metavar="ACTION", required=True)

    def model_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--embedder", metavar="SETTING", help="text-embedder: a model key or a model folder")
        parser.add_argument("--threads", type=int, default=None, help="CPU threads for the embedder")

    add = actions.add_parser("add", help="add notes folders (recursive; re-run to pick up changes)",
                             description="Index every note and document under the folders. Re-running reads only "
                                         "new and changed files, keeps renamed ones and removes deleted ones.")
    add.add_argument("folders", nargs="+", metavar="FOLDER")
    model_options(add)
    add.set_defaults(handler=cmd_add)

    listing = actions.add_parser("list", help="the notes folders, what they hold, and the files skipped and why",
                                 description="List every notes folder with its files per kind and the files that "
                                             "were skipped, with the reason.")
    listing.set_defaults(handler=cmd_list)

    remove = actions.add_parser("remove", help="forget a notes folder (its files stay where they are)",
                                description="Remove a notes folder's notes, chunks and vectors from the library.")
    remove.add_argument("folder", metavar="FOLDER", help="its path or its number in `notes list`")
    remove.set_defaults(handler=cmd_remove)

    search = actions.add_parser("search", help="the note passages closest to a question",
                                description="Show the chunks that best match a question, with their scores.")
    search.add_argument("question")
    search.add_argument("-k", type=_hits, default=5, help="how many chunks to show (default 5)")
    search.add_argument("--folder", action="append", metavar="FOLDER",
                        help="only this notes folder (path or number; repeatable)")
    model_options(search)
    search.set_defaults(handler=cmd_search)
