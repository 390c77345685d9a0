"""Jobs that write take turns in the window: an import and a folder index started at once both finish,
one after the other, while the task bar says what a queued one waits for; a queued one can be cancelled."""

from __future__ import annotations

from PIL import Image
from PySide6.QtCore import QSettings

from gallery_app.core import resources
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow

CHAT = ("[05/06/19, 09:00:00] Maya: Who books the cabin this year?\n"
        "[05/06/19,09:02:00] Daniel: I will, and I pay the deposit\n")


def photo_folder(folder, colours):
    folder.mkdir()
    for number, colour in enumerate(colours):
        Image.new("RGB", (48, 32), colour).save(folder / f"photo{number}.png")
    return folder


def test_an_import_and_a_folder_index_started_together_take_turns(qtbot, tmp_path):
    """Before: the import started while the demo setup was still writing (two writers at once, which the
    store may answer with "database is locked"), and nothing said why a job had not started yet."""
    QSettings().setValue(MODELS_OFFERED_KEY, True)
    chat = tmp_path / "Cabin 2019" / "_chat.txt"
    chat.parent.mkdir()
    chat.write_text(CHAT, "utf-8")
    folder = photo_folder(tmp_path / "photos", [(200, 0, 0), (0, 200, 0), (0, 0, 200)])
    later = photo_folder(tmp_path / "later", [(90, 90, 0), (0, 90, 90)])
    main = MainWindow()  # the demo setup is writing from now on
    qtbot.addWidget(main)
    order = []
    main.demo_ready.connect(lambda _lines: order.append("demo ready"))
    main.show()
    try:
        importing = main.chat_pane.import_files([chat])
        indexing = main.photo_pane.add_folder(folder)
        for name, worker in (("import", importing), ("index", indexing)):
            worker.signals.started.connect(lambda n=name: order.append(f"{n} started"))
            worker.signals.finished.connect(lambda n=name: order.append(f"{n} finished"))
        assert importing.waiting_note() == "Waiting for the demo setup to finish…"
        assert main.task_bar.label.text() == ("Adding photos from photos — Waiting for the chat import to finish…"
                                              "  (+2 more)")

        # A third writer, queued too, is cancelled from the task bar: it ends now, before the others.
        cancelled = main.photo_pane.add_folder(later)
        assert "Waiting for the photo indexing to finish…" in main.task_bar.label.text()
        with qtbot.waitSignal(cancelled.signals.cancelled, timeout=5_000):
            main.task_bar.cancel_button.click()
        assert "import finished" not in order

        with qtbot.waitSignals([importing.signals.finished, indexing.signals.finished], timeout=120_000):
            pass
        assert order == ["demo ready", "import started", "import finished", "index started", "index finished"]
        assert main.task_bar.last_error is None
        qtbot.waitUntil(lambda: main.chat_pane.chat_model.rowCount() == len(resources.demo_chat_files()) + 1,
                        timeout=10_000)
        qtbot.waitUntil(lambda: main.photo_pane.model.total == len(resources.demo_photo_files()) + 3, timeout=10_000)
        assert "3 photos found" in main.photo_pane.status_line.text() and "3 added" in main.photo_pane.status_line.text()
    finally:
        main.close()
    assert main.services.workers.active == 0
