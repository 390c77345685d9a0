"""`gallery-app-cli photos …`: add folders, search by words, by a photo, by a file; duplicates; list."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gallery_app.cli_progress import ProgressBar

#: Skipped files listed one by one after `photos add`; more are summarised by reason only.
SHOWN_SKIPS = 20


def _open_store():
    from gallery_app.core.store import open_store

    return open_store()


def _vision(args: argparse.Namespace, *, required: bool):
    from gallery_app.core.errors import ModelNotAvailable
    from gallery_app.core.models.loading import open_clip_vision

    try:
        return open_clip_vision(args.vision, threads=args.threads)
    except ModelNotAvailable as exc:
        if required:
            raise
        print(f"Note: {exc} Photos are added now and become searchable once it is here.\n  {exc.hint}",
              file=sys.stderr)
        return None


def _search(args: argparse.Namespace, *, text: bool = False, vision: bool = True):
    from gallery_app.core.models.loading import open_clip_text
    from gallery_app.core.photos.search import PhotoSearch

    return PhotoSearch(_open_store(), vision=_vision(args, required=True) if vision else None,
                       text=open_clip_text(args.text_model, threads=args.threads) if text else None)


def _print_results(results) -> None:
    print(results.describe())
    for hit in results.hits:
        print(f"  {hit.similarity:6.3f}  #{hit.photo.id:<6} {hit.photo.shown_path}")


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
        vision.release()
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    _print_results(_search(args, text=True, vision=False).by_text(args.query, k=args.k))
    return 0


def cmd_similar(args: argparse.Namespace) -> int:
    _print_results(_search(args).similar_to(args.photo, k=args.k))
    return 0


def cmd_query_image(args: argparse.Namespace) -> int:
    _print_results(_search(args).by_image_file(Path(args.file), k=args.k, add=args.add))
    return 0


def cmd_duplicates(args: argparse.Namespace) -> int:
    groups = _search(args).duplicates(args.threshold)
    if not groups:
        print(f"No near-duplicates above similarity {args.threshold:.2f}.")
    for number, group in enumerate(groups, 1):
        print(f"Group {number}: {len(group.photos)} photos, similarity ≥ {group.lowest_similarity:.3f}")
        for photo in group.photos:
            print(f"  #{photo.id:<6} {photo.shown_path}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from gallery_app.core.photos.library import count_photos, list_photos

    conn = _open_store()
    photos = list_photos(conn, limit=args.limit)
    if not photos:
        print("No photos yet. Add a folder with: gallery-app-cli photos add ~/Pictures")
    for photo in photos:
        print(photo.describe())
    total = count_photos(conn)
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

    def options(parser: argparse.ArgumentParser, *, k: bool = True, text: bool = False) -> None:
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

    search = actions.add_parser("search", help="find photos by a description", description="Search by words.")
    search.add_argument("query")
    options(search, text=True)
    search.set_defaults(handler=cmd_search)

    similar = actions.add_parser("similar", help="photos similar to one in the gallery (never itself)",
                                 description="Find photos like a gallery photo, given by its #id or its path.")
    similar.add_argument("photo", metavar="PATH|ID")
    options(similar)
    similar.set_defaults(handler=cmd_similar)

    query = actions.add_parser("query-image", help="photos like an image file",
                               description="Search by any image file; with --add it also joins the gallery.")
    query.add_argument("file")
    query.add_argument("--add", action="store_true", help="keep a copy of the image in the gallery (an upload)")
    options(query)
    query.set_defaults(handler=cmd_query_image)

    duplicates = actions.add_parser("duplicates", help="groups of near-identical photos",
                                    description="Groups of photos whose vectors are nearly the same.")
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

    listing = actions.add_parser("list", help="one line per photo", description="List the gallery's photos.")
    listing.add_argument("--limit", type=int, default=None)
    listing.set_defaults(handler=cmd_list)
