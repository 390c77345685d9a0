"""Two `gallery-app-cli` writers at once, while a third connection holds the write lock: both wait, both succeed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gallery_app.core.paths import database_path
from gallery_app.core.store import connect, open_store
from tests.chat_helpers import DEMO_CHAT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
DEMO_PHOTOS = REPO / "resources" / "demo" / "photos"
IMPORT = ["chat", "import", str(DEMO_CHAT), "--embedder", "all-minilm-l6-v2-int8"]
HOLD_AT_LEAST_S = 1.5


def start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gallery_app.cli", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _cpu_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime


def _has_open(pid: int, database: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(database) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def wait_until_blocked(children: list[subprocess.Popen], database: Path, timeout: float = 90) -> None:
    """Until every child has the database open and has used no CPU for 0.5 s: waiting for the write lock.

    Where /proc is missing this only waits a few seconds; the outcome checked afterwards holds either way.
    """
    if not Path("/proc/self/stat").exists():
        time.sleep(5)
        return
    deadline = time.monotonic() + timeout
    last: dict[int, tuple[int | None, float]] = {}
    while time.monotonic() < deadline:
        now = time.monotonic()
        idle = 0
        for child in children:
            assert child.poll() is None, f"a writer ended while the lock was held: {child.communicate()}"
            ticks = _cpu_ticks(child.pid) if _has_open(child.pid, database) else None
            seen, since = last.get(child.pid, (None, now))
            if ticks is None or ticks != seen:
                last[child.pid] = (ticks, now)
            elif now - since >= 0.5:
                idle += 1
        if idle == len(children):
            return
        time.sleep(0.05)
    pytest.fail("the writers never started waiting for the lock")


def run_while_locked(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    database = database_path()
    open_store(database).close()
    holder = connect(database)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO app_state(key, value) VALUES ('holder', 'was here')")
    started = time.monotonic()
    children = [start_cli(*command) for command in commands]
    try:
        wait_until_blocked(children, database)
        time.sleep(max(0.0, HOLD_AT_LEAST_S - (time.monotonic() - started)))
        for child in children:
            assert child.poll() is None, f"a writer gave up while the lock was held: {child.communicate()}"
    finally:
        holder.execute("COMMIT")
        holder.close()
    results = []
    for command, child in zip(commands, children):
        out, err = child.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(command, child.returncode, out, err))
    return results


def test_the_same_export_imported_twice_at_once_is_one_chat():
    """Before: `apsw.BusyError: database is locked` after a second, or two identical chats."""
    first, second = run_while_locked(IMPORT, IMPORT)
    for result in (first, second):
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
    outputs = sorted([first.stdout, second.stdout])
    assert "Imported “Weekend away”: 431 messages" in "".join(outputs)
    assert any("already up to date" in out or "Finished importing" in out for out in outputs), outputs
    conn = open_store(database_path())
    assert conn.execute("SELECT count(*) FROM chats").fetchone()[0] == 1
    assert conn.execute("SELECT count(*), count(DISTINCT message_key) FROM messages").fetchone() == (432, 432)
    windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]
    assert windows == 122  # the demo chat's windows with MiniLM's token counts, each keeping a turn whole
    assert conn.execute("SELECT count(*) FROM vec_windows_all_minilm_l6_v2_int8").fetchone()[0] == windows
    assert conn.execute("SELECT value FROM app_state WHERE key = 'holder'").fetchone() == ("was here",)


def test_a_chat_import_and_photos_add_at_once_both_succeed(test_clip, tmp_path):
    chat, photos = run_while_locked(IMPORT, ["photos", "add", str(DEMO_PHOTOS)])
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr
    assert photos.returncode == 0 and "Traceback" not in photos.stderr, photos.stderr
    assert "Imported “Weekend away”: 431 messages" in chat.stdout
    conn = open_store(database_path())
    on_disk = [p for p in DEMO_PHOTOS.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")]
    assert conn.execute("SELECT count(*) FROM photos").fetchone()[0] == len(on_disk) > 0
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 432
