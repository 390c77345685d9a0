"""Pictures of the real window on the demo data, for the README (`make screenshots`).

Starts the app on a fresh data folder, waits for the demo data, asks the demo chat a question and waits
for the streamed answer, then shows the photo grid (searched when a CLIP model is installed; otherwise
as a newcomer without CLIP sees it) and saves both windows as PNG files.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

QUESTION = "Who ended up paying for the hotel?"
PHOTO_QUERY = "a cat"


def main(out_dir: str = "docs") -> int:
    os.environ.setdefault("GALLERY_APP_DATA_DIR", tempfile.mkdtemp(prefix="gallery-screenshots-"))
    from PySide6.QtCore import QEventLoop, QSettings, QThreadPool, QTimer
    from PySide6.QtWidgets import QApplication

    from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("gallery_app-screenshots")
    app.setApplicationName("gallery_app-screenshots")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, os.environ["GALLERY_APP_DATA_DIR"])
    QSettings().setValue(MODELS_OFFERED_KEY, True)  # the picture is of the window, not of the models dialog
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def wait_for(signal, timeout_ms: int = 180_000) -> None:
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_ms, loop.quit)
        loop.exec()

    def settle(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    window = MainWindow()
    window.resize(1280, 1040)
    window.show()
    wait_for(window.demo_ready)
    worker = window.chat_pane.ask(QUESTION)
    if worker is not None:
        wait_for(worker.signals.finished)
    settle(800)
    turns = window.chat_pane.view.turns
    if turns:  # show the question and the start of its passages, as a person reads them
        window.chat_pane.view.verticalScrollBar().setValue(max(0, turns[0].y() - 8))
    settle(300)
    window.grab().save(str(out / "screenshot-chat.png"))

    window.tabs.setCurrentWidget(window.photo_pane)
    if window.photo_pane.clip_problem is None:
        worker = window.photo_pane.search_text(PHOTO_QUERY)
        if worker is not None:
            wait_for(worker.signals.finished)
    settle(2500)  # the visible thumbnails arrive from their pool
    window.grab().save(str(out / "screenshot-photos.png"))
    window.close()
    QThreadPool.globalInstance().waitForDone(-1)
    print(f"wrote {out / 'screenshot-chat.png'} and {out / 'screenshot-photos.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
