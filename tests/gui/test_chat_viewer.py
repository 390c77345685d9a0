"""The chat viewer on a years-long chat: it opens without freezing the window and shows the passage."""

from __future__ import annotations

import gc

from gallery_app.core.store import open_store
from gallery_app.ui.chat.viewer import ChatViewer
from gallery_app.ui.event_loop_probe import EventLoopProbe

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
    viewer = ChatViewer(services, 1, [target], title="Long chat")
    qtbot.addWidget(viewer)
    viewer.resize(900, 700)
    with qtbot.waitSignal(viewer.loaded, timeout=60_000):
        viewer.show()
    row = viewer.model.highlighted_rows()[0]
    qtbot.waitUntil(lambda: viewer.view.viewport().rect().intersects(viewer.view.visualRect(viewer.model.index(row))),
                    timeout=20_000)
    qtbot.wait(500)
    assert probe.stop() < 100
    viewer.close()
