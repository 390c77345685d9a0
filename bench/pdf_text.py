"""PDF text extraction: pypdf against pypdfium2 on the notes fixtures' PDFs, to choose the loader's library.

What it measures
    For each PDF of ``../shared/fixtures/notes_qa/folder/documents/`` (or the files given), the time to
    open the file from its bytes and get every page's text: pypdf's ``page.extract_text()`` and
    pypdfium2's ``textpage.get_text_range()``. Each library runs ``--repeats`` times per file (after one
    warm-up run); the median is printed with pages/s, and the characters found after NFKC, so a faster
    library that finds less text shows it. Both run in this one process, one after the other.

Measured (a developer's machine, Python 3.11, pypdf 7.1.1, pypdfium2 5.15.2, median of 5)
    2018 report, 12 pages: pypdf 0.148 s (81 pages/s), pypdfium2 0.016 s (736 pages/s)
    2020 report, 15 pages: pypdf 0.181 s (83 pages/s), pypdfium2 0.021 s (701 pages/s)
    Git cheat sheet, 2:    pypdf 0.135 s (15 pages/s), pypdfium2 0.015 s (132 pages/s)
    all 29 pages:          pypdf 0.465 s (62 pages/s), pypdfium2 0.053 s (549 pages/s): 8.8x
    Both find every gold quote of notes_qa's PDF questions; pypdfium2 finds ~4% more characters.

Usage
    .venv/bin/python bench/pdf_text.py [--repeats 5] [FILE.pdf ...]
"""

from __future__ import annotations

import argparse
import io
import logging
import statistics
import sys
import time
import unicodedata
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "notes_qa" / "folder" / "documents"


def with_pypdf(raw: bytes) -> list[str]:
    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(raw)).pages]


def with_pypdfium2(raw: bytes) -> list[str]:
    import pypdfium2

    document = pypdfium2.PdfDocument(raw)
    try:
        texts = []
        for page in document:
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return texts
    finally:
        document.close()


def measure(extract, raw: bytes, repeats: int) -> tuple[float, list[str]]:
    pages = extract(raw)  # warm-up: imports and first-use caches are not what a folder of PDFs pays per file
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        pages = extract(raw)
        times.append(time.perf_counter() - start)
    return statistics.median(times), pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # pypdf logs a warning per CFF font it reads without fontTools (the Git cheat sheet): noise in a table.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    files = args.files or sorted(FIXTURES.rglob("*.pdf"))
    if not files:
        sys.exit(f"no PDFs given and none under {FIXTURES}")
    totals = {"pypdf": [0.0, 0], "pypdfium2": [0.0, 0]}
    print(f"{'file':42} {'library':10} {'pages':>5} {'median s':>9} {'pages/s':>8} {'chars':>7}")
    for path in files:
        raw = path.read_bytes()
        for name, extract in (("pypdf", with_pypdf), ("pypdfium2", with_pypdfium2)):
            seconds, pages = measure(extract, raw, args.repeats)
            chars = sum(len(unicodedata.normalize("NFKC", text).strip()) for text in pages)
            totals[name][0] += seconds
            totals[name][1] += len(pages)
            print(f"{path.name[:42]:42} {name:10} {len(pages):5} {seconds:9.4f} {len(pages) / seconds:8.0f} {chars:7}")
    for name, (seconds, pages) in totals.items():
        print(f"{'all':42} {name:10} {pages:5} {seconds:9.4f} {pages / seconds:8.0f}")


if __name__ == "__main__":
    main()
