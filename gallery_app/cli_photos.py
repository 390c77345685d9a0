"""`gallery-app-cli photos …`: add folders, search by words, by a photo, by a file; duplicates; list.

Listing and the searches take the same filters (``--chat``, ``--folder``, ``--from``, ``--to``): one
``PhotoFilter``, so a search inside a chat finds exactly the photos ``photos list --chat`` shows.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import date
from pathlib import Path

from gallery_app.cli_progress import ProgressBar, terminal_text

#: Skipped files listed one by one after `photos add`; more are summarised by reason only.
SHOWN_SKIPS = 20


def _open_store(*, to_read: bool = False):
    """The store; ``to_read``: a command that only reads, which also works on a data folder it cannot write."""
    from gallery_app.core.store import open_store, open_store_to_read

    return open_store_to_read() if to_read else open_store()


def _vision(args: argparse.Namespace, *, required: bool):
    from gallery_app.core.errors import ModelNotAvailable
    from gallery_app.core.models.loading import open_clip_vision

    try:
        return open_clip_vision(args.vision, threads=args.threads)
    except ModelNotAvailable as exc:
        if required:
            raise
        print(f"Note: {exc.message} Photos are added now and become searchable once it is here.\n  {exc.hint}",
              file=sys.stderr)
        return None


def vision_if_here(setting: str | None, *, threads: int | None = None):
    """(the CLIP vision model, None) when it is on this computer, else (None, why not): for commands whose
    photos are a side matter (a chat import), which record them without vectors rather than fail."""
    from gallery_app.core.errors import ModelError
    from gallery_app.core.models.loading import open_clip_vision

    try:
        return open_clip_vision(setting, threads=threads), None
    except ModelError as exc:  # missing, or a damaged copy: the chat still goes in
        return None, exc


def _search(conn, args: argparse.Namespace, *, text: bool = False, vision: bool = True):
    from gallery_app.core.models.loading import open_clip_text
    from gallery_app.core.photos.search import PhotoSearch

    return PhotoSearch(conn, vision=_vision(args, required=True) if vision else None,
                       text=open_clip_text(args.text_model, threads=args.threads) if text else None)


def _origins(conn, photos) -> dict[int, str]:
    """Photo id → where a chat photo came from ("Sent by Loris in “…” on …"), for the photos chats sent."""
    from gallery_app.core.photos.chat_photos import chat_context

    origins = {}
    for photo_id, sent in chat_context(conn, [photo.id for photo in photos]).items():
        more = f" (and {len(sent) - 1} more time{'s' if len(sent) > 2 else ''})" if len(sent) > 1 else ""
        origins[photo_id] = terminal_text(sent[0].describe() + more)  # chat text is data, never escapes
    return origins


def _print_results(conn, results) -> None:
    print(results.describe())
    origins = _origins(conn, [hit.photo for hit in results.hits])
    for hit in results.hits:
        origin = f"  — {origins[hit.photo.id]}" if hit.photo.id in origins else ""
        print(f"  {hit.similarity:6.3f}  #{hit.photo.id:<6} {hit.photo.shown_path}{origin}")


# --- which photos: --chat, --folder, --from, --to ---------------------------------------------------

def _day(text: str) -> date:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a date written YYYY-MM-DD (for example 2024-05-31)")
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a day of the calendar (YYYY-MM-DD)") from None


def _chat_number(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a chat number (see them with: gallery-app-cli chat list)")
    return int(text)


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """The options that narrow which photos a command shows or searches, the same for every command."""
    group = parser.add_argument_group("which photos (default: all)")
    collection = group.add_mutually_exclusive_group()
    collection.add_argument("--chat", type=_chat_number, metavar="ID",
                            help="only the photos sent in this chat (numbers: gallery-app-cli chat list)")
    collection.add_argument("--folder", metavar="PATH|ID", help="only the photos of this added folder")
    group.add_argument("--from", dest="since", type=_day, metavar="YYYY-MM-DD",
                       help="only photos taken (or sent) on this day or later")
    group.add_argument("--to", dest="until", type=_day, metavar="YYYY-MM-DD",
                       help="only photos taken (or sent) on this day or earlier")
    parser.set_defaults(filter_parser=parser)


def photo_filter(conn, args: argparse.Namespace):
    """The ``PhotoFilter`` of the filter options; a chat or folder that is not there, or a range that ends before
    it starts, is a usage error (exit 2) that says so."""
    from gallery_app.core.errors import AppError
    from gallery_app.core.photos.chat_photos import chat_exists
    from gallery_app.core.photos.filters import PhotoFilter

    try:
        if args.chat is not None:
            chat_exists(conn, args.chat)
        folder_id = _folder_id(conn, args.folder) if args.folder is not None else None
        return PhotoFilter(chat_id=args.chat, folder_id=folder_id, since=args.since, until=args.until)
    except AppError as exc:
        args.filter_parser.error(str(exc))


def _folder_id(conn, text: str) -> int:
    """An added folder by its number or its path."""
    from gallery_app.core.errors import AppError
    from gallery_app.core.file_names import printable
    from gallery_app.core.photos.library import folders_with_photos

    folders = folders_with_photos(conn)
    wanted = text.strip()
    if wanted.lstrip("#").isdigit() and not Path(wanted).exists():
        found = [folder_id for folder_id, _path, _count in folders if folder_id == int(wanted.lstrip("#"))]
    else:
        path = str(Path(wanted).expanduser().resolve())
        found = [folder_id for folder_id, folder, _count in folders if folder == path]
    if found:
        return found[0]
    known = ", ".join(f"#{folder_id} {printable(path)}" for folder_id, path, _count in folders[:5])
    raise AppError(f"{printable(text)} is not a photo folder of the gallery.",
                   hint=f"Its folders: {known}{' …' if len(folders) > 5 else ''}." if folders
                   else "Add one with: gallery-app-cli photos add DIR")


def _filter_words(args: argparse.Namespace) -> str:
    """" of chat 3 from 2024-05-01 to 2024-05-31": what the filter options asked for."""
    words = [f"of chat {args.chat}" if args.chat is not None else "",
             f"in folder {args.folder}" if args.folder is not None else "",
             f"from {args.since:%Y-%m-%d}" if args.since else "", f"to {args.until:%Y-%m-%d}" if args.until else ""]
    return "".join(f" {word}" for word in words if word)


def cmd_add(args: argparse.Namespace) -> int:
    from gallery_app.core.file_names import printable
    from gallery_app.core.photos.indexer import PhotoIndexer

    conn = _open_store()
    vision = _vision(args, required=False)
    for folder in args.folders:
        bar = ProgressBar(f"Indexing {printable(Path(folder).name or folder)}", unit="photos")
        drawn = []

        def progress(stage: str, done: int, total: int, bar=bar, drawn=drawn) -> None:
            if stage == "indexing" and total:
                drawn.append(True)
                bar(done, total)

        summary = PhotoIndexer(conn, vision, workers=args.workers, progress=progress).add_folder(folder)
        if drawn:
            bar.close()
        print(summary.describe())
        for skip in summary.skipped[:SHOWN_SKIPS]:
            print(f"  skipped ({skip.reason}): {printable(skip.path)} — {skip.detail}")
        if len(summary.skipped) > SHOWN_SKIPS:
            print(f"  … and {len(summary.skipped) - SHOWN_SKIPS} more skipped files")
    if vision is not None:
        # Photos recorded while CLIP was missing (a chat's, another folder's) are embedded now: an unchanged
        # file is never read again, so nothing else would give them a vector.
        waiting = PhotoIndexer(conn, vision, workers=args.workers).embed_missing()
        if waiting:
            print(f"{waiting} photos recorded before the CLIP model was here are now searchable.")
        vision.release()
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    conn = _open_store(to_read=True)
    where = photo_filter(conn, args)  # a bad filter is told before a model is loaded
    _print_results(conn, _search(conn, args, text=True, vision=False).by_text(args.query, k=args.k, where=where))
    return 0


def cmd_similar(args: argparse.Namespace) -> int:
    conn = _open_store(to_read=True)
    where = photo_filter(conn, args)
    _print_results(conn, _search(conn, args).similar_to(args.photo, k=args.k, where=where))
    return 0


def cmd_query_image(args: argparse.Namespace) -> int:
    conn = _open_store(to_read=True)
    where = photo_filter(conn, args)
    _print_results(conn, _search(conn, args).by_image_file(Path(args.file), k=args.k, add=args.add, where=where))
    return 0


def cmd_duplicates(args: argparse.Namespace) -> int:
    """Identical files and resized copies need no model; photos that only look alike need CLIP's vectors."""
    from gallery_app.core.photos.search import PhotoSearch

    vision, missing = vision_if_here(args.vision, threads=args.threads)
    if missing is not None:
        print(f"Note: {missing.message} Without it only identical files and resized or re-encoded copies are "
              f"found.\n  {missing.hint or ''}".rstrip(), file=sys.stderr)
    groups = PhotoSearch(_open_store(to_read=True), vision=vision).duplicates(args.threshold)
    if not groups:
        print("No copies found." if vision is None else
              f"No copies, and no photos above similarity {args.threshold:.2f}.")
    for number, group in enumerate(groups, 1):
        print(f"Group {number}: {group.describe()}")
        for photo in group.photos:
            print(f"  #{photo.id:<6} {photo.shown_path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from gallery_app.core.photos.library import count_photos, list_photos

    conn = _open_store(to_read=True)
    where = photo_filter(conn, args)
    photos = list_photos(conn, limit=args.limit, where=where)
    if not photos:
        print(f"No photos{_filter_words(args)}." if not where.is_everything
              else "No photos yet. Add a folder with: gallery-app-cli photos add ~/Pictures")
    origins = _origins(conn, photos)
    for photo in photos:
        print(photo.describe(origins.get(photo.id, "")))
    total = count_photos(conn, where)
    if args.limit is not None and total > len(photos):
        print(f"… {total - len(photos)} more (of {total})", file=sys.stderr)
    return 0


def cmd_export_vectors(args: argparse.Namespace) -> int:
    from gallery_app.core.photos.bundle import export_bundle

    count = export_bundle(_open_store(), _vision(args, required=True), Path(args.folder), Path(args.bundle))
    print(f"Wrote the vectors of {count} photos under {args.folder} to {args.bundle}.")
    return 0


def cmd_import_vectors(args: argparse.Namespace) -> int:
    from gallery_app.core.photos.bundle import import_bundle

    print(import_bundle(_open_store(), _vision(args, required=True), Path(args.bundle), Path(args.folder)).describe())
    return 0


def _similarity(text: str) -> float:
    from gallery_app.core.photos.search import DUPLICATE_THRESHOLD

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(
            f"{text} is not a similarity between 0 and 1 (higher finds fewer, closer copies; "
            f"the default is {DUPLICATE_THRESHOLD})")
    return value


def add_photo_commands(commands: argparse._SubParsersAction) -> None:
    from gallery_app.core.photos.search import DEFAULT_RESULTS, DUPLICATE_THRESHOLD

    photos = commands.add_parser("photos", help="add photo folders and search them by meaning",
                                 description="Index photo folders with CLIP and search them by words or by photo.")
    actions = photos.add_subparsers(dest="photos_command", metavar="ACTION", required=True)

    def options(parser: argparse.ArgumentParser, *, k: bool = True, text: bool = False, filters: bool = False) -> None:
        if filters:
            add_filter_options(parser)
        parser.add_argument("--vision", metavar="SETTING", help="clip-vision model key")
        parser.add_argument("--threads", type=int, default=None, help="CPU threads for the model")
        if text:
            parser.add_argument("--text-model", metavar="SETTING", help="clip-text model key")
        if k:
            parser.add_argument("-k", "--results", dest="k", type=int, default=DEFAULT_RESULTS,
                                help=f"how many photos to show (default {DEFAULT_RESULTS})")

    add = actions.add_parser("add", help="add folders of photos (recursive; re-run to pick up changes)",
                             description="Index every photo under the folders. Re-running adds new photos, "
                                         "notices moved and changed ones and removes deleted ones.")
    add.add_argument("folders", nargs="+", metavar="DIR")
    add.add_argument("--workers", type=int, default=None, help="threads decoding photos (default: up to 4)")
    options(add, k=False)
    add.set_defaults(handler=cmd_add)

    search = actions.add_parser("search", help="find photos by a description",
                                description="Search by words, among all photos or those the filters keep.")
    search.add_argument("query")
    options(search, text=True, filters=True)
    search.set_defaults(handler=cmd_search)

    similar = actions.add_parser("similar", help="photos similar to one in the gallery (never itself)",
                                 description="Find photos like a gallery photo, given by its #id or its path.")
    similar.add_argument("photo", metavar="PATH|ID")
    options(similar, filters=True)
    similar.set_defaults(handler=cmd_similar)

    query = actions.add_parser("query-image", help="photos like an image file",
                               description="Search by any image file; with --add it also joins the gallery.")
    query.add_argument("file")
    query.add_argument("--add", action="store_true", help="keep a copy of the image in the gallery (an upload)")
    options(query, filters=True)
    query.set_defaults(handler=cmd_query_image)

    duplicates = actions.add_parser(
        "duplicates", help="groups of copies of one photo",
        description="Groups of identical files and of resized or re-encoded copies (no model needed), and with "
                    "the CLIP model also of photos whose vectors are nearly the same.")
    duplicates.add_argument("--threshold", type=_similarity, default=DUPLICATE_THRESHOLD,
                            help=f"lowest similarity counted as a duplicate (default {DUPLICATE_THRESHOLD})")
    options(duplicates, k=False)
    duplicates.set_defaults(handler=cmd_duplicates)

    export = actions.add_parser("export-vectors", help="write the vectors of a folder's photos to a bundle",
                                description="Precompute a gallery that ships with the app: vectors + file mapping.")
    export.add_argument("folder")
    export.add_argument("bundle", help="the .npz file to write")
    options(export, k=False)
    export.set_defaults(handler=cmd_export_vectors)
    imported = actions.add_parser("import-vectors", help="add bundled photos with their precomputed vectors",
                                  description="Add the photos a bundle lists (found under FOLDER) without indexing.")
    imported.add_argument("bundle")
    imported.add_argument("folder")
    options(imported, k=False)
    imported.set_defaults(handler=cmd_import_vectors)

    listing = actions.add_parser("list", help="one line per photo (a chat photo: who sent it, where, when)",
                                 description="List the gallery's photos, newest first (capture time, else when a "
                                             "chat sent it, else the file's time).")
    listing.add_argument("--limit", type=int, default=None)
    add_filter_options(listing)
    listing.set_defaults(handler=cmd_list)
