"""Seeded mutations of real exports: whatever happens to the bytes, reading and parsing never raise or hang (issue 23).

Each export (the bundled demo chats, and every chat of ../shared/fixtures when it is beside the
checkout) is damaged the ways files get damaged on their way to a person: a flipped byte, a cut-off
end, a BOM in front, re-encoded as UTF-16 or Latin-1, lines shuffled. Every variant must read
(``read_export``) or be refused with an ``AppError`` (a message for a person), parse without an
exception, and take less than ``LIMIT_S`` per file.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from gallery_app.core.chat.export_file import read_export
from gallery_app.core.chat.whatsapp import parse_chat_text
from gallery_app.core.errors import AppError
from gallery_app.core.resources import demo_chat_files
from tests.conftest import SHARED_FIXTURES, require_shared_fixtures

LIMIT_S = 2.0
SEED = 20261203


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(max(1, len(out) // 2000)):
        at = rng.randrange(len(out))
        out[at] = rng.randrange(256)
    return bytes(out)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(1, len(data))]  # mid-character too: UTF-8 cut inside a sequence


def _shuffle_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    rng.shuffle(lines)
    return b"\n".join(lines)


def _reencode(encoding: str):
    def mutate(data: bytes, _rng: random.Random) -> bytes:
        return data.decode("utf-8", "replace").encode(encoding, "replace")
    return mutate


MUTATIONS = {
    "flipped bytes": _flip_bytes,
    "truncated": _truncate,
    "UTF-8 BOM": lambda data, _rng: b"\xef\xbb\xbf" + data,
    "double BOM": lambda data, _rng: b"\xef\xbb\xbf\xef\xbb\xbf" + data,
    "UTF-16 LE with BOM": _reencode("utf-16"),
    "UTF-16 BE without BOM": _reencode("utf-16-be"),
    "Latin-1": _reencode("latin-1"),
    "shuffled lines": _shuffle_lines,
    "CR line ends": lambda data, _rng: data.replace(b"\r\n", b"\n").replace(b"\n", b"\r"),
    "NUL bytes": lambda data, rng: data.replace(b" ", b"\x00", rng.randrange(1, 50)),
}


def _demo_exports() -> list[Path]:
    return [path for path in demo_chat_files() if path.suffix == ".txt"]


def _shared_exports() -> list[Path]:
    return sorted(path for folder in ("chat_qa", "whatsapp") for path in (SHARED_FIXTURES / folder).rglob("*")
                  if path.suffix in (".txt", ".zip") and "README" not in path.name)


#: A zipped export is damaged as a whole file: its text is checked on its own above.
ZIP_MUTATIONS = {"flipped bytes": _flip_bytes, "truncated": _truncate}


def _check_every_mutation(source: Path, tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}:{source.name}")
    data = source.read_bytes()
    if not data:
        return
    zipped = source.suffix == ".zip"
    for name, mutate in (ZIP_MUTATIONS if zipped else MUTATIONS).items():
        damaged = tmp_path / ("export.zip" if zipped else "_chat.txt")
        damaged.write_bytes(mutate(data, rng))
        started = time.perf_counter()
        try:
            text = read_export(damaged).text
        except AppError:
            continue  # refused with a message for a person: fine
        chat = parse_chat_text(text)
        took = time.perf_counter() - started
        assert took < LIMIT_S, f"{source.name}, {name}: {took:.1f} s"
        assert all(m.text is not None and m.timestamp is not None for m in chat.messages)


@pytest.mark.parametrize("source", _demo_exports(), ids=lambda path: path.name)
def test_damaged_demo_exports_never_break_the_parser(source: Path, tmp_path: Path):
    _check_every_mutation(source, tmp_path)


def test_damaged_real_exports_never_break_the_parser(tmp_path: Path):
    require_shared_fixtures()
    sources = _shared_exports()
    assert len(sources) >= 20
    for source in sources:
        _check_every_mutation(source, tmp_path)
