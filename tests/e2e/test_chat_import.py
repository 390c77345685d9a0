"""Importing WhatsApp exports into the store with a real embedder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import apsw
import pytest

from gallery_app.core.chat.export_file import ChatFileError
from gallery_app.core.chat.importer import import_chat, reindex
from gallery_app.core.chat.repository import missing_window_vectors, list_chats
from gallery_app.core.errors import Cancelled
from gallery_app.core.paths import database_path
from gallery_app.core.file_names import from_db
from gallery_app.core.store import connect, open_store
from tests.chat_helpers import DEMO_CHAT

pytestmark = pytest.mark.e2e


@pytest.fixture
def store(tmp_path):
    conn = open_store(tmp_path / "gallery.db")
    yield conn
    conn.close()


def counts(conn) -> tuple[int, int, int]:
    return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("messages", "chunks", "chunk_windows"))


def test_import_summary_tells_what_happened(store, minilm):
    stages = []
    summary = import_chat(store, DEMO_CHAT, minilm, progress=lambda stage, done, total: stages.append(stage))
    assert summary.new_chat and summary.messages_added == summary.messages_in_file == 432
    assert summary.participants == ["Maya", "Daniel"]
    assert summary.first.date().isoformat() == "2024-04-03" and summary.last.date().isoformat() == "2024-07-10"
    assert summary.attachments == 1 and summary.media_placeholders == 10 and summary.skipped_lines == 0
    assert "Imported “Weekend away”: 431 messages" in summary.describe()
    assert stages[0] == "parsed" and "embedded" in stages and stages[-1] == "stored"
    (chat,) = list_chats(store)
    assert chat.participants == ["Maya", "Daniel"] and chat.message_count == 431  # the encryption notice is not a message


def test_every_passage_line_keeps_its_sender(store, minilm):
    import_chat(store, DEMO_CHAT, minilm)
    for (text,) in store.execute("SELECT text FROM chunks"):
        assert all(line.split(": ", 1)[0] in ("Maya", "Daniel") for line in text.split("\n")), text
    for (day, first, last) in store.execute(
            "SELECT c.day, min(m.ts), max(m.ts) FROM chunks c JOIN messages m ON m.id BETWEEN c.first_message_id "
            "AND c.last_message_id GROUP BY c.id"):
        assert first[:10] == last[:10] == day  # a passage never spans two days


def test_reimporting_adds_nothing_and_a_longer_export_adds_only_new_messages(store, minilm, tmp_path):
    lines = DEMO_CHAT.read_bytes().split(b"\r\n")
    shorter = tmp_path / "_chat.txt"
    shorter.write_bytes(b"\r\n".join(lines[:300]))
    first = import_chat(store, shorter, minilm)
    before = counts(store)
    again = import_chat(store, shorter, minilm)
    assert again.messages_added == 0 and not again.new_chat and counts(store) == before
    assert "already up to date" in again.describe()
    longer = import_chat(store, DEMO_CHAT, minilm)
    assert longer.chat_id == first.chat_id and not longer.new_chat
    assert longer.messages_added == 432 - first.messages_in_file
    assert len(list_chats(store)) == 1
    assert store.execute("SELECT count(*) FROM messages").fetchone()[0] == 432
    # The day cut in two by the shorter export is one passage series again, with no duplicates.
    ids = [i for (ids,) in store.execute("SELECT message_ids FROM chunks") for i in __import__("json").loads(ids)]
    assert len(ids) == len(set(ids))
    assert missing_window_vectors(store, minilm) == 0


def test_cancel_leaves_the_store_as_it_was(store, minilm):
    with pytest.raises(Cancelled):
        import_chat(store, DEMO_CHAT, minilm, cancel=lambda: True)
    assert counts(store) == (0, 0, 0) and list_chats(store) == []


def test_zip_export_is_imported_without_extracting(store, minilm, tmp_path):
    archive = tmp_path / "WhatsApp Chat - Weekend away.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(DEMO_CHAT, "_chat.txt")
        z.writestr("00000031-PHOTO-2024-06-14-10-22-05.jpg", b"\xff\xd8\xff not really")
    summary = import_chat(store, archive, minilm)
    assert summary.title == "Weekend away" and summary.messages_added == 432


def test_a_wrong_file_gets_a_clear_error(store, minilm, tmp_path):
    photo = tmp_path / "holiday.jpg"
    photo.write_bytes(b"\xff\xd8\xff\xe0")
    with pytest.raises(ChatFileError, match="not a WhatsApp export"):
        import_chat(store, photo, minilm)
    assert counts(store) == (0, 0, 0)


def test_switching_embedder_needs_a_reindex(store, minilm, e5):
    import_chat(store, DEMO_CHAT, minilm)
    windows = counts(store)[2]
    assert missing_window_vectors(store, e5) == windows
    assert reindex(store, e5) == windows
    assert missing_window_vectors(store, e5) == 0 and missing_window_vectors(store, minilm) == 0


# --- through the CLI, as a person runs it ----------------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
MINILM = "all-minilm-l6-v2-int8"
MINILM_VECTORS = "vec_windows_all_minilm_l6_v2_int8"
_HEADER_YEAR = re.compile(rb"^((?:\xe2\x80\x8e)?\[\d\d/\d\d/)24, ", re.MULTILINE)


def demo_chat_copies(folder: Path, copies: int) -> Path:
    """The demo chat ``copies`` times over, each copy a year later (2024, 2025, …): one long chat."""
    text = DEMO_CHAT.read_bytes()
    chat = folder / f"Weekend away x{copies}.txt"
    chat.write_bytes(b"\r\n".join(_HEADER_YEAR.sub(rb"\g<1>%02d, " % (24 + i), text).rstrip(b"\r\n")
                                   for i in range(copies)))
    return chat


def start_import(chat: Path | bytes, *, tell_any_estimate: bool = False) -> subprocess.Popen:
    """``gallery-app-cli chat import CHAT`` in a child; ``tell_any_estimate``: it tells its estimate however short."""
    command = (["-c", "import sys, gallery_app.cli_chat as chat; chat.TELL_ESTIMATE_AFTER_S = 0; "
                      "from gallery_app.cli import main; sys.exit(main(sys.argv[1:]))"]
               if tell_any_estimate else ["-m", "gallery_app.cli"])
    # PYTHONFAULTHANDLER: a child that has to be aborted (SIGABRT) prints every thread's stack first.
    return subprocess.Popen([sys.executable, *command, "chat", "import", chat, "--embedder", MINILM],
                            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"})


def vectors_stored(database: Path) -> int:
    if not database.exists():
        return 0
    conn = connect(database, readonly=True)
    try:
        return conn.execute(f"SELECT count(*) FROM {MINILM_VECTORS}").fetchone()[0]
    except apsw.SQLError:  # no table yet: the import's first transaction makes it
        return 0
    finally:
        conn.close()


def wait_for(condition, what: str, child: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert child.poll() is None, f"the import ended before {what}: {child.communicate()}"
        assert time.monotonic() < deadline, f"no {what} after {timeout:.0f} s"
        time.sleep(0.05)


def test_a_chat_file_named_in_latin1_imports_and_its_path_is_kept(tmp_path):
    """Before: UnicodeEncodeError traceback storing the path (and the title) of ``Jos\\xe9.txt``."""
    chat = os.fsencode(tmp_path) + b"/Jos\xe9.txt"
    Path(os.fsdecode(chat)).write_bytes(DEMO_CHAT.read_bytes())
    child = start_import(chat)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err.decode(errors="replace")
    assert "Traceback" not in err.decode(errors="replace")
    assert "431 messages" in out.decode()
    conn = open_store(database_path())
    (stored,) = conn.execute("SELECT source_path FROM chats").fetchone()
    assert os.fsencode(from_db(stored)) == chat  # the very file, byte for byte
    assert conn.execute("SELECT source_path FROM chat_imports").fetchone() == (stored,)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_killed_import_keeps_its_messages_and_a_rerun_embeds_only_the_rest(tmp_path, minilm, sig):
    """Before: one transaction after all the embedding, so a kill an hour in kept nothing.

    SIGSEGV is a native crash in the embedder (ONNX Runtime, llama.cpp) as the process sees it: no
    handler runs, as with SIGKILL, and the store is whole either way."""
    chat = demo_chat_copies(tmp_path, 3)
    reference = open_store(tmp_path / "uninterrupted.db")
    whole = import_chat(reference, chat, minilm)
    database = database_path()
    child = start_import(chat)
    try:
        wait_for(lambda: vectors_stored(database) >= 64, "two batches of vectors", child)
    finally:
        child.send_signal(sig)
        child.wait(30)
    assert child.returncode == -sig
    conn = open_store(database)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert counts(conn) == counts(reference)  # messages, passages and windows went in first, whole
    assert 64 <= vectors_stored(database) < whole.windows_added
    left = missing_window_vectors(conn, minilm)

    rerun = start_import(chat)
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err.decode(errors="replace")
    assert (f"Finished importing “Weekend away x3”: all {whole.messages_in_file - whole.notices_in_file:,} messages were imported before, "
            f"and its last {left:,} passages are now searchable.") in out.decode()
    assert counts(conn) == counts(reference) and len(list_chats(conn)) == 1
    assert vectors_stored(database) == whole.windows_added and missing_window_vectors(conn, minilm) == 0


@pytest.mark.slow
def test_a_long_import_tells_its_estimate_first_and_ctrl_c_keeps_what_finished(tmp_path):
    """The estimate is told above TELL_ESTIMATE_AFTER_S (60 s); whether 8,000 passages take longer than that depends
    on the machine (a fast one embedded them all in under a minute and told nothing), so the child tells any
    estimate: what is held here is that it comes first, and that Ctrl+C keeps what finished."""
    chat = demo_chat_copies(tmp_path, 70)
    child = start_import(chat, tell_any_estimate=True)
    try:
        first_line = child.stdout.readline().decode()  # the estimate comes before anything else on stdout
        assert re.fullmatch(r"About 8,\d{3} passages to embed — about (\d+ s|\d+ min|\d+ h \d\d min) with all-MiniLM-L6-v2 "
                            r"\(int8 ONNX, English only\)\. Ctrl\+C stops; importing again continues where it "
                            r"stopped\.\n", first_line), first_line
        wait_for(lambda: vectors_stored(database_path()) >= 64, "two batches of vectors", child)
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGABRT)
            out, err = child.communicate(timeout=30)
            pytest.fail(f"still running 60 s after Ctrl+C; its threads:\n{err.decode(errors='replace')[-6000:]}")
    finally:
        child.kill()
    err = err.decode()
    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert re.search(r"The import was cancelled: the messages are saved, [\d,]+ of 8,\d{3} passages were embedded "
                     r"and are kept\.\s+Import the same file again to finish\.$", err.rstrip()), err
    conn = open_store(database_path())
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 70 * 432
    assert vectors_stored(database_path()) >= 64
