"""The chat viewer on a years-long chat: it opens without freezing the window and shows the passage; on
the demo chat it opens at the message it was asked for (issue 22, step 5) and keeps its place when resized."""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QPoint

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.store import open_store
from gallery_app.ui.chat.viewer import ChatViewer
from gallery_app.ui.event_loop_probe import EventLoopProbe
from tests.chat_helpers import DEMO_CHAT
from tests.text_embedders import WordHashEmbedder

MESSAGES = 20_000


def test_a_chat_of_twenty_thousand_messages_opens_smoothly_at_the_passage(qtbot, services):
    """Before: every wrapped row was measured at once on the GUI thread: a 1.6 s freeze (20k messages)."""
    conn = open_store()
    with conn:
        conn.execute("INSERT INTO chats(title) VALUES ('Long chat')")
        conn.executemany(
            "INSERT INTO messages(chat_id, ts, sender, text, kind, message_key) VALUES (1, ?, ?, ?, 'text', ?)",
            [(f"2020-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}", "Maya" if i % 2 else "Daniel",
              f"Message {i}, long enough to wrap in the viewer's width, with a few more words after it", f"k{i}")
             for i in range(MESSAGES)])
        target = conn.execute("SELECT id FROM messages WHERE message_key = 'k15000'").fetchone()[0]
    conn.close()
    gc.collect()  # earlier tests' garbage is not this job's pause: collect it before measuring
    probe = EventLoopProbe()
    probe.start()
    started = time.perf_counter()
    viewer = ChatViewer(services, 1, [target], title="Long chat")
    qtbot.addWidget(viewer)
    viewer.resize(900, 700)
    with qtbot.waitSignal(viewer.positioned, timeout=60_000):
        viewer.show()
    shown_after = time.perf_counter() - started
    qtbot.wait(500)
    gap = probe.stop()
    row = viewer.model.highlighted_rows()[0]
    rect, area = viewer.view.visualRect(viewer.model.index(row)), viewer.view.viewport().rect()
    assert area.contains(rect) and abs(rect.center().y() - area.center().y()) <= 2
    assert viewer.view.indexAt(rect.center()).row() == row == viewer.view.currentIndex().row()
    print(f"\n{MESSAGES} messages: shown at the passage after {shown_after:.2f} s, longest GUI-thread gap {gap:.0f} ms")
    assert gap < 100
    viewer.close()


def demo_viewer(qtbot, services, message_text: str) -> tuple[ChatViewer, int]:
    """A viewer of the demo chat at the message that starts with ``message_text``, at its own size."""
    conn = open_store()
    import_chat(conn, DEMO_CHAT, WordHashEmbedder(dims=64))
    message_id = conn.execute("SELECT id FROM messages WHERE text LIKE ?", (message_text + "%",)).fetchone()[0]
    conn.close()
    viewer = ChatViewer(services, 1, [message_id], title="Weekend away")
    qtbot.addWidget(viewer)
    with qtbot.waitSignal(viewer.positioned, timeout=10_000):
        viewer.show()
    return viewer, viewer.model.row_of_message(message_id)


def test_the_closest_message_opens_centred_current_and_selected(qtbot, services):
    """Before: "Closest message: Maya, 10 Jun 2024" opened the demo chat at 16 Apr 2024, the message off screen
    (the batched layout started again after the scroll, and the scroll range of its first batch held it)."""
    viewer, row = demo_viewer(qtbot, services, "Right, I keep forgetting. How much do I owe you for the cottage?")
    view = viewer.view
    rect, area = view.visualRect(viewer.model.index(row)), view.viewport().rect()
    assert area.contains(rect) and abs(rect.center().y() - area.center().y()) <= 2, (rect, area)
    assert view.indexAt(rect.center()).row() == row
    assert view.currentIndex().row() == row and view.selectionModel().isSelected(view.currentIndex())
    viewer.close()


def test_the_viewer_keeps_its_top_row_when_resized(qtbot, services):
    viewer, row = demo_viewer(qtbot, services, "Right, I keep forgetting. How much do I owe you for the cottage?")
    view = viewer.view
    top = view.indexAt(QPoint(view.viewport().width() // 2, view.spacing())).row()
    with qtbot.waitSignal(view.laid_out, timeout=10_000):
        viewer.resize(1100, 800)  # wider rows wrap less: every row is laid out again
    assert view.indexAt(QPoint(view.viewport().width() // 2, view.spacing())).row() == top
    with qtbot.waitSignal(view.laid_out, timeout=10_000):
        viewer.resize(420, 500)
    assert view.indexAt(QPoint(view.viewport().width() // 2, view.spacing())).row() == top
    viewer.close()
